"""BERT-base in ONNX Runtime with its optimizer on: where the time goes, original against ours.

    python -m benchmarks.bench_bert_ort                          # -> results/bert_ort.{json,md}
    python -m benchmarks.bench_bert_ort --runs 3 --models bert,resnet50,nasrnn

Two parts. The profile: the original (`to_onnx`) and ours (`eqsat.optimize(target="ort")`,
`to_onnx(contrib=True)`) in ONNX Runtime CPU sessions with its optimizer fully on and its profiler
on, run in turns; kernel time per op type (ONNX Runtime's node names after its fusions), per run.
The ratios: the original with ONNX Runtime's optimizer on against ours with it off and on (and the
original with it off), in interleaved rounds, `--runs` times per model, each run its own
optimization and sessions, so the noise across runs shows; ours' outputs checked against the
original's.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any, Sequence

import eqsat
import ir
from benchmarks.bench_spellings import ort_session, ratio_medians
from benchmarks.bench_strategies import model_inputs, relative_error
from benchmarks.report import Section, write_results
from ir.models.registry import get, list_models

PROFILE_COLUMNS = ["op_type", "original_ms", "ours_ms", "original_calls", "ours_calls"]
RATIO_COLUMNS = ["model", "run", "ours_off", "ours_on", "original_off", "original_on_ms", "max_rel_error"]


def _exports(name: str, small: bool) -> tuple[dict[str, Any], dict]:
    """The original and ours (ort target, contrib export) of zoo model `name`, and seeded inputs."""
    mod, params = get(name, small=small)
    ours = eqsat.optimize(mod, params, target="ort")
    return ({"original": ir.frontend.to_onnx(mod, params),
             "ours": ir.frontend.to_onnx(ours.mod, ours.params, contrib=True)}, model_inputs(mod["main"], params))


def measure_ratios(name: str, small: bool, repeat: int, min_seconds: float) -> dict[str, Any]:
    """Original-with-optimizer-on time over each session's, medians of interleaved rounds; ours' error."""
    models, inputs = _exports(name, small)
    sessions = {f"{key}_{state}": ort_session(models[key], state == "on")
                for key in models for state in ("on", "off")}
    reference = sessions["original_off"].run(None, inputs)
    error = relative_error(tuple(sessions["ours_off"].run(None, inputs)), reference)
    runs = {key: partial(session.run, None, inputs) for key, session in sessions.items()}
    original_on, ratios = ratio_medians(runs, "original_on", repeat, min_seconds)
    return {"model": name, **ratios, "original_on_ms": original_on * 1e3, "max_rel_error": error}


def _profiled_session(model: Any, folder: Path, name: str) -> Any:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_profiling = True
    options.profile_file_prefix = str(folder / name)
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _kernel_ms_per_op_type(trace: Path, runs: int) -> dict[str, tuple[float, int]]:
    """Milliseconds per run and calls per run of each op type in an ONNX Runtime profile of `runs` runs."""
    total: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    for event in json.loads(trace.read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            total[event["args"]["op_name"]] += event["dur"] / 1e3
            calls[event["args"]["op_name"]] += 1
    return {op: (ms / runs, calls[op] // runs) for op, ms in total.items()}


def _timed(session: Any, inputs: dict) -> float:
    start = time.perf_counter()
    session.run(None, inputs)
    return time.perf_counter() - start


def profile_bert(small: bool, runs: int) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Kernel time per op type of the original and ours (ORT optimizer on), and median run ms of each."""
    models, inputs = _exports("bert", small)
    with tempfile.TemporaryDirectory() as folder:
        sessions = {name: _profiled_session(model, Path(folder), name) for name, model in models.items()}
        seconds: dict[str, list[float]] = {name: [] for name in sessions}
        for session in sessions.values():  # warm-up, in the profile too: counted in the runs below
            session.run(None, inputs)
        for _ in range(runs - 1):
            for name, session in sessions.items():
                seconds[name].append(_timed(session, inputs))
        per_op = {name: _kernel_ms_per_op_type(Path(s.end_profiling()), runs) for name, s in sessions.items()}
    ops = sorted(set(per_op["original"]) | set(per_op["ours"]),
                 key=lambda op: -max(per_op["original"].get(op, (0, 0))[0], per_op["ours"].get(op, (0, 0))[0]))
    rows = [{"op_type": op, **{f"{name}_ms": per_op[name].get(op, (0.0, 0))[0] for name in models},
             **{f"{name}_calls": per_op[name].get(op, (0.0, 0))[1] for name in models}} for op in ops]
    return rows, {name: statistics.median(s) * 1e3 for name, s in seconds.items()}


NOTES = """\
Wall-clock times on a machine with {cores} cores shared with other work; ONNX Runtime {ort}, CPU
provider, default threads without spinning; {size} configurations. Ratios: medians over
interleaved rounds (at least {repeat}, more until the original has run {seconds:g} s) of
original-with-optimizer-on time / session time (`ours_off`, `ours_on`: ours with ONNX Runtime's
optimizer off and on; `original_off`: the original with it off), `run` numbering separate runs per
model, each its own optimization and sessions. `max_rel_error`: ours against the original (both
optimizer off), largest difference over the largest magnitude."""

PROFILE_NOTES = """\
BERT-base, ONNX Runtime's optimizer on for both, its profiler on: kernel milliseconds and calls
per run of each op type as ONNX Runtime runs it (after its own fusions), {runs} runs taking turns;
median run: original {original:.1f} ms, ours {ours:.1f} ms (profiling on)."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="the zoo's small configurations")
    parser.add_argument("--models", default="bert", help="comma-separated zoo models to take ratios of")
    parser.add_argument("--runs", type=int, default=3, help="separate ratio runs per model")
    parser.add_argument("--repeat", type=int, default=10, help="least number of timed rounds per run")
    parser.add_argument("--seconds", type=float, default=4.0, help="least seconds the original runs per run")
    parser.add_argument("--profile-runs", type=int, default=20, help="profiled runs of each BERT session")
    parser.add_argument("--name", default="bert_ort", help="results file name (default bert_ort; _small added with --small)")
    args = parser.parse_args(argv)
    names = args.models.split(",")
    unknown = [m for m in names if m not in list_models()]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(list_models())}")
    if min(args.runs, args.repeat, args.profile_runs) < 1:
        parser.error("--runs, --repeat and --profile-runs must be at least 1")
    import onnxruntime

    profile, medians = profile_bert(args.small, args.profile_runs)
    rows = []
    for name in names:
        for run in range(1, args.runs + 1):
            row = measure_ratios(name, args.small, args.repeat, args.seconds) | {"run": run}
            rows.append(row)
            print(f"{name} run {run}: ours off {row['ours_off']:.3f}x, on {row['ours_on']:.3f}x", file=sys.stderr,
                  flush=True)
    notes = NOTES.format(cores=multiprocessing.cpu_count(), ort=onnxruntime.__version__,
                         size="small" if args.small else "full-size", repeat=args.repeat, seconds=args.seconds)
    section = Section("BERT-base: kernel time per op type", profile, PROFILE_COLUMNS,
                      PROFILE_NOTES.format(runs=args.profile_runs, **medians))
    path = write_results(args.name + ("_small" if args.small else ""), rows, RATIO_COLUMNS, notes, [section])
    print(path.read_text())


if __name__ == "__main__":
    main()
