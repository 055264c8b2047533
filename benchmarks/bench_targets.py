"""Whole models in ONNX Runtime: the original against ours, each with ONNX Runtime's optimizer off and on.

    python -m benchmarks.bench_targets                     # every zoo model, full size -> results/targets.{json,md}
    python -m benchmarks.bench_targets --small --models bert,resnet50

Per zoo model (`ir.models`): the original exported with `to_onnx`, and ours, `eqsat.optimize(target="ort")`
under the default rules exported with `to_onnx(contrib=True)`; four ONNX Runtime CPU sessions
(original / ours, optimizer off / fully on) take turns in interleaved rounds; the ratios are
medians over rounds of original-all time / session time (above 1: faster than the original with
ONNX Runtime's optimizer on). Outputs of ours are checked against the original's. For TENSAT's
benchmark models, their published GPU speedup (Yang et al., MLSys 2021, Table 2) is shown as the
aim, and `rules` names the rules whose results the extracted program uses most (from provenance).
The predicted-vs-measured latency of the ort target's cost model lives in `bench_ort_cost`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from collections import Counter
from functools import partial
from typing import Any, Sequence

import eqsat
import ir
from benchmarks.bench_spellings import ort_session, ratio_medians
from benchmarks.bench_strategies import model_inputs, relative_error
from benchmarks.report import Stopwatch, write_results
from ir.models.registry import get, list_models

#: TENSAT's published speedups over the original graph on a GPU (Yang et al., MLSys 2021)
TENSAT_GPU_SPEEDUP = {"bert": "9.2%", "resnext50": "8.8%", "nasneta": "7.3%", "nasrnn": "68.9%",
                      "inception_v3": "10.0%", "squeezenet": "24.5%", "vgg19": "8.9%"}
COLUMNS = ["model", "ours_off", "ours_on", "original_off", "original_on_ms", "max_rel_error", "optimize_s",
           "ops_before", "ops_after", "rules", "tensat_gpu"]


def _main_rules(ours: eqsat.Optimized, count: int = 3) -> str:
    """The rules whose results most nodes of the extracted program come from."""
    used = Counter(rule for chain in ours.provenance.values() for rule in set(chain))
    return ", ".join(f"{rule} ({n})" for rule, n in used.most_common(count)) or "none"


def measure_model(name: str, small: bool, repeat: int, min_seconds: float, rules: str | None = None) -> dict[str, Any]:
    mod, params = get(name, small=small)
    stopwatch = Stopwatch()
    with stopwatch("optimize"):
        ours = eqsat.optimize(mod, params, target="ort", **({"rules": rules} if rules else {}))
    original = ir.frontend.to_onnx(mod, params)
    exported = ir.frontend.to_onnx(ours.mod, ours.params, contrib=True)
    inputs = model_inputs(mod["main"], params)
    sessions = {"original_on": ort_session(original, True), "original_off": ort_session(original, False),
                "ours_off": ort_session(exported, False), "ours_on": ort_session(exported, True)}
    reference = sessions["original_off"].run(None, inputs)
    runs = {key: partial(session.run, None, inputs) for key, session in sessions.items()}
    original_on, ratios = ratio_medians(runs, "original_on", repeat, min_seconds)
    return {"model": name, **ratios, "original_on_ms": original_on * 1e3,
            "max_rel_error": relative_error(tuple(sessions["ours_off"].run(None, inputs)), reference),
            "optimize_s": stopwatch.seconds["optimize"], "ops_before": sum(ours.op_counts_before.values()),
            "ops_after": sum(ours.op_counts_after.values()), "rules": _main_rules(ours),
            "tensat_gpu": TENSAT_GPU_SPEEDUP.get(name, "")}


NOTES = """\
Wall-clock times on a machine with {cores} cores shared with other work; ONNX Runtime {ort}, CPU
provider, default threads without spinning; {size} configurations of the zoo models. Ratios are
medians over interleaved rounds (at least {repeat}, more until the original has run {seconds:g} s)
of original-with-optimizer-on time / session time: `ours_off` and `ours_on` our program with ONNX
Runtime's optimizer off and on, `original_off` the original with it off. `max_rel_error`: ours
(optimizer off) against the original (optimizer off), largest difference over the largest
magnitude. `ops_before` / `ops_after`: IR calls of the original and of ours. `rules`: the rules whose
results most nodes of our program come from (nodes per rule). `tensat_gpu`: TENSAT's published GPU
speedup for its benchmark models, the aim (a GPU with cuDNN, not this CPU)."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="the zoo's small configurations")
    parser.add_argument("--models", default=",".join(list_models()), help="comma-separated zoo models")
    parser.add_argument("--repeat", type=int, default=10, help="least number of timed rounds per model")
    parser.add_argument("--seconds", type=float, default=2.0, help="least seconds the original runs per model")
    parser.add_argument("--rules", help="rule sets to optimize with (default: the ort target's default)")
    args = parser.parse_args(argv)
    names = args.models.split(",")
    unknown = [m for m in names if m not in list_models()]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(list_models())}")
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    import onnxruntime

    rows = []
    for name in names:
        rows.append(measure_model(name, args.small, args.repeat, args.seconds, args.rules))
        print(f"{name}: ours off {rows[-1]['ours_off']:.3f}x, on {rows[-1]['ours_on']:.3f}x", file=sys.stderr,
              flush=True)
    notes = NOTES.format(cores=multiprocessing.cpu_count(), ort=onnxruntime.__version__,
                         size="small" if args.small else "full-size", repeat=args.repeat, seconds=args.seconds)
    path = write_results("targets" + ("_small" if args.small else ""), rows, COLUMNS, notes)
    print(path.read_text())


if __name__ == "__main__":
    main()
