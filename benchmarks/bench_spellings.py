"""Spelling-invariance benchmark: does every exporter's spelling reach the fused program, ours and ONNX Runtime's?

    python -m benchmarks.bench_spellings                       # full sizes -> results/spellings.{json,md}
    python -m benchmarks.bench_spellings --small               # small shapes -> spellings_small
    python -m benchmarks.bench_spellings --families relu6,silu

For each family of `benchmarks.spellings` and each of its spellings (the canonical one first):

- ours: the spelling imported with `from_onnx` and optimized for the `ort` target under the default
  rules; `ours_fused` when the optimized program's op histogram equals the canonical spelling's
  and holds the family's fused op.
- ONNX Runtime: the model's optimized form under ORT_ENABLE_ALL, saved with
  `SessionOptions.optimized_model_filepath`; `ort_fused` when its op-type histogram (domains
  dropped) equals that of the canonical spelling.
- timings, in one loop of interleaved rounds: the spelling with ONNX Runtime's optimizer on
  (`input_on`), ours exported with `to_onnx(contrib=True)` with the optimizer off and on;
  `speedup_off` and `speedup_on` are medians of the per-round ratios input_on / ours.
"""

from __future__ import annotations

import multiprocessing
import statistics
import sys
import tempfile
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import onnx

import eqsat
import ir
from eqsat.rules.library import default_rules

from .bench_strategies import relative_error
from .report import Stopwatch, checked_choices, timing_parser, write_results
from .spellings import FAMILIES, Family, Size, Unavailable, model_inputs

__all__ = ["TARGET", "RULES", "COLUMNS", "optimize_spelling", "reaches_fused", "ort_session", "ort_op_counts",
           "ratio_medians", "measure_family", "main"]

TARGET = "ort"
RULES = default_rules(TARGET)
COLUMNS = ("family", "spelling", "onnx_nodes", "ours_fused", "ours_ops", "ort_fused", "ort_ops", "optimize_s",
           "input_on_ms", "speedup_off", "speedup_on", "max_rel_error")


def optimize_spelling(model: onnx.ModelProto) -> eqsat.Optimized:
    """The spelling imported and optimized for the `ort` target under its rules (`default_rules`)."""
    mod, params = ir.frontend.from_onnx(model)
    return eqsat.optimize(mod, params, target=TARGET, rules=RULES)


def reaches_fused(family: Family, ops: Mapping[str, int], canonical_ops: Mapping[str, int]) -> bool:
    """The canonical spelling's op histogram, holding one of the family's fused ops."""
    return dict(ops) == dict(canonical_ops) and bool(family.fused_ops & set(ops))


def ort_session(model: onnx.ModelProto, optimize: bool, save_to: Path | None = None) -> Any:
    """An ONNX Runtime CPU session with its graph optimizer fully on or off, saving the optimized model if asked."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # idle sessions leave the cores free
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    if save_to is not None:
        options.optimized_model_filepath = str(save_to)
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def ort_op_counts(model: onnx.ModelProto) -> Counter[str]:
    """Op types (domains dropped) of the model as ONNX Runtime's ORT_ENABLE_ALL optimizer leaves it."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "optimized.onnx"
        ort_session(model, True, path)
        return Counter(n.op_type for n in onnx.load(str(path)).graph.node)


def ratio_medians(runs: Mapping[str, Callable[[], Any]], baseline: str, repeat: int, min_seconds: float,
                  max_rounds: int = 1000) -> tuple[float, dict[str, float]]:
    """Median seconds of `baseline`, and per run the median over rounds of baseline time / run time.

    Each round calls every run once, after one warm-up each, so a change of machine load hits a
    round's runs alike. At least `repeat` rounds; more until `baseline` has run `min_seconds` in
    all (at most `max_rounds`).
    """
    for run in runs.values():
        run()
    stopwatch = Stopwatch()
    times: dict[str, list[float]] = {name: [] for name in runs}
    while len(times[baseline]) < repeat or (sum(times[baseline]) < min_seconds and len(times[baseline]) < max_rounds):
        for name, run in runs.items():
            with stopwatch(name):
                run()
            times[name].append(stopwatch.seconds[name])
    ratios = {name: statistics.median(b / t for b, t in zip(times[baseline], ts))
              for name, ts in times.items() if name != baseline}
    return statistics.median(times[baseline]), ratios


def _histogram(ops: Mapping[str, int]) -> str:
    return ", ".join(f"{op}" if n == 1 else f"{op} x{n}" for op, n in sorted(ops.items()))


def _onnx_nodes(model: onnx.ModelProto) -> int:
    """Computing nodes of a spelling (its `Constant` nodes and the output's `Identity` left out)."""
    return sum(n.op_type not in ("Constant", "Identity") for n in model.graph.node)


def measure_family(family: Family, size: Size, repeat: int, min_seconds: float) -> list[dict[str, Any]]:
    """One row per spelling of `family` (the canonical one first); torch exports are left out without torch."""
    canonical = family.canonical(size)
    ours_canonical = optimize_spelling(canonical).op_counts_after
    ort_canonical = ort_op_counts(canonical)
    inputs = model_inputs(canonical)
    reference = ort_session(canonical, False).run(None, inputs)
    rows = []
    for name, build in {"canonical": family.canonical, **family.spellings}.items():
        try:
            model = build(size)
        except Unavailable as why:
            print(f"{family.name}/{name}: skipped ({why})", file=sys.stderr, flush=True)
            continue
        stopwatch = Stopwatch()
        with stopwatch("optimize"):
            ours = optimize_spelling(model)
        exported = ir.frontend.to_onnx(ours.mod, ours.params, contrib=True)
        ort_ops = ort_op_counts(model)
        sessions = {"input_on": ort_session(model, True), "ours_off": ort_session(exported, False),
                    "ours_on": ort_session(exported, True)}
        runs = {key: partial(session.run, None, inputs) for key, session in sessions.items()}
        input_on, speedups = ratio_medians(runs, "input_on", repeat, min_seconds)
        rows.append({
            "family": family.name, "spelling": name, "onnx_nodes": _onnx_nodes(model),
            "ours_fused": reaches_fused(family, ours.op_counts_after, ours_canonical),
            "ours_ops": _histogram(ours.op_counts_after), "ours_nodes": sum(ours.op_counts_after.values()),
            "ort_fused": ort_ops == ort_canonical, "ort_ops": _histogram(ort_ops), "ort_nodes": sum(ort_ops.values()),
            "optimize_s": stopwatch.seconds["optimize"], "input_on_ms": input_on * 1e3,
            "speedup_off": speedups["ours_off"], "speedup_on": speedups["ours_on"],
            "max_rel_error": relative_error(tuple(sessions["ours_off"].run(None, inputs)), reference),
        })
        print(f"{family.name}/{name}: ours {'fused' if rows[-1]['ours_fused'] else 'missed'}, "
              f"ORT {'fused' if rows[-1]['ort_fused'] else 'missed'}", file=sys.stderr, flush=True)
    return rows


NOTES = """\
Wall-clock times on a machine with {cores} cores shared with other work; ONNX Runtime {ort},
CPU provider, default threads without spinning. Sizes: {sizes}.

Per spelling: `onnx_nodes` computing nodes as written (Constant nodes left out). Ours: imported
with `from_onnx`, optimized with `eqsat.optimize(target="{target}", rules="{rules}")`;
`ours_fused` when its op histogram (`ours_ops`) equals the canonical spelling's and holds the
family's fused op; `optimize_s` the whole `optimize` call (saturation, extraction, verification).
ONNX Runtime: the model saved after its ORT_ENABLE_ALL optimizations; `ort_fused` when its op
types (`ort_ops`, domains dropped) are those of the canonical spelling under the same optimizer.
Timings, interleaved rounds (at least {repeat}, more until the input has run {seconds:g} s):
`input_on_ms` median of the spelling with ONNX Runtime's optimizer on; `speedup_off` median over
rounds of input-on / ours exported with `to_onnx(contrib=True)` run with the optimizer off
(above 1: ours is faster without ONNX Runtime's rewrites), `speedup_on` the same with ours run
with the optimizer on. `max_rel_error`: ours (optimizer off) against the canonical spelling run
with the optimizer off, largest difference over the largest magnitude."""

SIZES = {"small": "norms and activations (2, 4, 16) / MLP width 64, softmax (2, 2, 4, 8), linear 8x16 -> 12, "
                  "conv 4 -> 8 channels 8x8",
         "full": "norms (1, 128, 768), activations (1, 128, 3072), softmax (1, 12, 128, 128), "
                 "linear 128x768 -> 3072, conv 64 -> 64 channels 56x56 (3x3)"}


def _summary(rows: Sequence[dict[str, Any]]) -> str:
    """How many spellings (canonical ones left out) each optimizer fused."""
    spellings = [r for r in rows if r["spelling"] != "canonical"]
    ours, ort = sum(r["ours_fused"] for r in spellings), sum(r["ort_fused"] for r in spellings)
    return (f"Spellings reaching the canonical fused program: ours {ours} of {len(spellings)}, "
            f"ONNX Runtime {ort} of {len(spellings)}.")


def main(argv: Sequence[str] | None = None) -> None:
    parser = timing_parser(__doc__, "small shapes (the test suite's)", 1.0, "least seconds the input runs per spelling",
                           "least number of timed rounds per spelling")
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated families")
    args = parser.parse_args(argv)
    checked_choices(parser, args, args.families, list(FAMILIES), "families")
    import onnxruntime

    size: Size = "small" if args.small else "full"
    rows = [row for name in args.families.split(",")
            for row in measure_family(FAMILIES[name], size, args.repeat, args.seconds)]
    notes = NOTES.format(cores=multiprocessing.cpu_count(), ort=onnxruntime.__version__, sizes=SIZES[size],
                         target=TARGET, rules=RULES, repeat=args.repeat, seconds=args.seconds)
    path = write_results("spellings" + ("_small" if args.small else ""), rows, COLUMNS,
                         f"{notes}\n\n{_summary(rows)}")
    print(path.read_text())


if __name__ == "__main__":
    main()
