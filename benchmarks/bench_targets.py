"""Whole models in ONNX Runtime: the original against ours, each with ONNX Runtime's optimizer off and on.

    python -m benchmarks.bench_targets                     # every zoo model, full size -> results/targets.{json,md}
    python -m benchmarks.bench_targets --small --models bert,resnet50

Per zoo model (`ir.models`): the original exported with `to_onnx`, and ours, `eqsat.optimize(target="ort")`
under the ort target's rules (`default` + `layout`, ONNX Runtime's NCHWc blocked layout as a choice), and
under `PLAIN_RULES` (`default` alone), each exported with `to_onnx(contrib=True)`, and what `eqsat optimize`
writes (ours after the speed check); ONNX Runtime CPU sessions (original / ours / ours without layouts,
optimizer off / fully on; the written program and a second session of the original, the control, optimizer on)
take turns in interleaved rounds; the ratios are medians over rounds of original-all time / session time
(above 1: faster than the original with ONNX Runtime's optimizer on). Outputs of both programs are checked
against the original's. For TENSAT's benchmark models, their published GPU speedup (Yang et al., MLSys 2021,
Table 2) is shown as the aim, and `rules` names the rules whose results the extracted program uses most (from
provenance).
The predicted-vs-measured latency of the ort target's cost model lives in `bench_ort_cost`.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections import Counter
from functools import partial
from typing import Any, Sequence

import eqsat
import ir
from benchmarks.bench_spellings import ort_session, ratio_medians
from benchmarks.bench_strategies import model_inputs, relative_error
from benchmarks.report import Stopwatch, checked_choices, timing_parser, write_results
from eqsat.onnx_io import faster_of
from ir.models.registry import get, list_models

#: TENSAT's published speedups over the original graph on a GPU (Yang et al., MLSys 2021)
TENSAT_GPU_SPEEDUP = {"bert": "9.2%", "resnext50": "8.8%", "nasneta": "7.3%", "nasrnn": "68.9%",
                      "inception_v3": "10.0%", "squeezenet": "24.5%", "vgg19": "8.9%"}
#: the rules of the variant without blocked layouts
PLAIN_RULES = "default"
COLUMNS = ["model", "ours_off", "ours_on", "written_on", "kept", "plain_off", "plain_on", "original_off", "control",
           "original_on_ms", "max_rel_error", "optimize_s", "speed_check_s", "plain_optimize_s", "ops_before", "ops_after",
           "rules", "tensat_gpu"]


def _main_rules(ours: eqsat.Optimized, count: int = 3) -> str:
    """The rules whose results most nodes of the extracted program come from."""
    used = Counter(rule for chain in ours.provenance.values() for rule in set(chain))
    return ", ".join(f"{rule} ({n})" for rule, n in used.most_common(count)) or "none"


def measure_model(name: str, small: bool, repeat: int, min_seconds: float) -> dict[str, Any]:
    mod, params = get(name, small=small)
    stopwatch = Stopwatch()
    with stopwatch("optimize"):
        ours = eqsat.optimize(mod, params, target="ort")
    with stopwatch("plain_optimize"):
        plain = eqsat.optimize(mod, params, target="ort", rules=PLAIN_RULES)
    original = ir.frontend.to_onnx(mod, params)
    with stopwatch("speed_check"):
        written, verdict = faster_of(ours, original)
    inputs = model_inputs(mod["main"], params)
    sessions = {"original_on": ort_session(original, True), "original_off": ort_session(original, False),
                "written_on": ort_session(written, True), "control": ort_session(original, True)}
    for key, program in (("ours", ours), ("plain", plain)):
        exported = ir.frontend.to_onnx(program.mod, program.params, contrib=True)
        sessions.update({f"{key}_off": ort_session(exported, False), f"{key}_on": ort_session(exported, True)})
    reference = sessions["original_off"].run(None, inputs)
    errors = [relative_error(tuple(sessions[key].run(None, inputs)), reference) for key in ("ours_off", "plain_off")]
    runs = {key: partial(session.run, None, inputs) for key, session in sessions.items()}
    original_on, ratios = ratio_medians(runs, "original_on", repeat, min_seconds)
    return {"model": name, **ratios, "original_on_ms": original_on * 1e3, "max_rel_error": max(errors),
            "kept": verdict.kept, "optimize_s": stopwatch.seconds["optimize"],
            "speed_check_s": stopwatch.seconds["speed_check"], "plain_optimize_s": stopwatch.seconds["plain_optimize"],
            "ops_before": sum(ours.op_counts_before.values()),
            "ops_after": sum(ours.op_counts_after.values()), "rules": _main_rules(ours),
            "tensat_gpu": TENSAT_GPU_SPEEDUP.get(name, "")}


NOTES = """\
Wall-clock times on a machine with {cores} cores shared with other work; ONNX Runtime {ort}, CPU provider,
default threads without spinning; {size} configurations of the zoo models. Ratios are medians over interleaved
rounds (at least {repeat}, more until the original has run {seconds:g} s) of original-with-optimizer-on time /
session time: `ours_off` and `ours_on` our program (the ort target's rules, `default` + `layout`) with ONNX
Runtime's optimizer off and on, `written_on` what `eqsat optimize` writes for it (ours after the speed check,
`eqsat.onnx_io.faster_of`; `kept` says which program that is: ours, ours without some op families, or the
input) with the optimizer on (the speed check times a one-thread session, the ort target's default, where a
program that splits better across cores, as larger GEMMs do, may gain less than in these sessions),
`plain_off` and `plain_on` ours under `{plain}` alone (no blocked layouts), `original_off` the original with
it off, `control` a second session of the original with it on (its distance from 1 is the row's noise).
`max_rel_error`: both programs (optimizer off) against the original (optimizer off), largest difference over
the largest magnitude. `optimize_s` / `plain_optimize_s`: saturation, extraction and verification;
`speed_check_s`: the speed check (and the programs it tried). `ops_before` / `ops_after`: IR calls of the
original and of ours. `rules`: the rules whose results most nodes of our program come from (nodes per rule).
`tensat_gpu`: TENSAT's published GPU speedup for its benchmark models, the aim (a GPU with cuDNN, not this
CPU)."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = timing_parser(__doc__, "the zoo's small configurations", 2.0, "least seconds the original runs per model",
                           "least number of timed rounds per model")
    parser.add_argument("--models", default=",".join(list_models()), help="comma-separated zoo models")
    parser.add_argument("--name", default="targets", help="results file name (default targets; _small added with --small)")
    args = parser.parse_args(argv)
    names = checked_choices(parser, args, args.models, list_models(), "models")
    import onnxruntime

    rows = []
    for name in names:
        rows.append(measure_model(name, args.small, args.repeat, args.seconds))
        row = rows[-1]
        print(f"{name}: ours off {row['ours_off']:.3f}x, on {row['ours_on']:.3f}x, written {row['written_on']:.3f}x "
              f"({row['kept']} kept); without layouts off "
              f"{row['plain_off']:.3f}x, on {row['plain_on']:.3f}x", file=sys.stderr, flush=True)
    notes = NOTES.format(cores=multiprocessing.cpu_count(), ort=onnxruntime.__version__,
                         size="small" if args.small else "full-size", repeat=args.repeat, seconds=args.seconds,
                         plain=PLAIN_RULES)
    path = write_results(args.name + ("_small" if args.small else ""), rows, COLUMNS, notes)
    print(path.read_text())


if __name__ == "__main__":
    main()
