"""Op-strategy benchmark: our executor against ONNX Runtime, per-op time, tuning gain, cost-model accuracy.

    python -m benchmarks.bench_strategies               # ResNet-50 and BERT-base -> results/strategies.{json,md}
    python -m benchmarks.bench_strategies --small       # the zoo's test configurations -> strategies_small
    python -m benchmarks.bench_strategies --threads 2   # BLAS and ONNX Runtime threads (default 1)

Per model (full size unless `--small`):

- `ours_ms` / `ort_ms`: median latency of `strategies.build(mod, "cpu", params).run` and of an
  ONNX Runtime session on the same model exported by `ir.frontend.to_onnx` (ONNX Runtime's graph
  optimizations on), after warm-up runs, the two alternating within one loop so that both see
  the same machine load; `ours_over_ort` is their ratio (below 2 is the aim on ResNet-50), and
  `ours_over_ort_cpu` the ratio of median process CPU times (steadier under foreign load; a
  like-for-like measure with one thread only). `max_rel_error` compares the two outputs (largest
  difference over the largest magnitude).
- `plevel_ms` / `tuned_ms`: plevel-only selection against a build under `apply_history_best` of
  a log that `strategies.tune` wrote with `--trials` measurements per workload (alternating
  too); `tuning_gain` = plevel / tuned (above 1: tuning helped), `tuning_gain_cpu` the same in
  CPU time; `tuned_choices_changed` counts workloads whose implementation tuning changed.
- `predicted_ms`: `CostModel("cpu").program_cost` (the roofline estimate of what selection picks);
  `predicted_over_measured` divides it by `plevel_ms`. The JSON adds `logged_ms`, the cost model
  with the tuning log (each call's measured latency), and `logged_over_measured` against `tuned_ms`.
- a section per model: its time per op type from `Executable.profile()`.

Threads: numpy's OpenBLAS reads `OPENBLAS_NUM_THREADS` when it loads, so `main` re-runs itself
with that variable set to `--threads` when it differs; ONNX Runtime gets the same intra-op
thread count (inter-op 1, sequential execution). On a machine shared with other work, one thread
gives the steadiest numbers: BLAS threads that spin-wait for a descheduled partner make
multi-threaded latencies swing by several times.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

import ir
import strategies
from ir.frontend import to_onnx
from strategies.values import random_value

from .report import Section, write_results

__all__ = ["MODELS", "COLUMNS", "model_inputs", "alternate", "relative_error", "measure", "main"]

MODELS = ("resnet50", "bert")
COLUMNS = ("model", "threads", "ours_ms", "ort_ms", "ours_over_ort", "ours_over_ort_cpu", "max_rel_error",
           "plevel_ms", "tuned_ms", "tuning_gain", "tuning_gain_cpu", "tuned_choices_changed", "predicted_ms",
           "predicted_over_measured", "top_ops")
#: timed runs per tuning measurement (its median is the record's latency): enough to ride out load spikes
TUNE_REPEAT = 10


def model_inputs(func: ir.Function, params: Mapping[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random values for the data inputs of `func` (the parameters not in `params`)."""
    rng = np.random.default_rng(seed)
    return {p.name_hint: random_value(p.type_annotation, rng) for p in func.params if p.name_hint not in params}


def alternate(runs: Mapping[str, Callable[[], Any]], repeat: int, warmup: int = 2) -> dict[str, tuple[float, float]]:
    """Median (wall, process CPU) seconds of each run, after `warmup` runs each, the runs taking turns.

    Taking turns gives every run the same share of the machine's load. Process CPU time counts
    every thread of this process, so it is comparable to wall time with one thread only.
    """
    for run in runs.values():
        for _ in range(warmup):
            run()
    seconds: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            wall, cpu = time.perf_counter(), time.process_time()
            run()
            seconds[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
            for name, values in seconds.items()}


def relative_error(ours: Any, reference: list[np.ndarray]) -> float:
    """The largest absolute difference over the largest reference magnitude, worst output first."""
    ours = ours if isinstance(ours, tuple) else (ours,)
    return max(float(np.max(np.abs(o - r))) / max(float(np.max(np.abs(r))), 1e-30) for o, r in zip(ours, reference))


def _ort_session(model: Any, threads: int):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # the exporter keeps initializers ONNX Runtime's optimizer folds away
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _top_ops(by_op: Mapping[str, float], count: int = 4) -> str:
    total = sum(by_op.values()) or 1.0
    return ", ".join(f"{op} {share / total:.0%}" for op, share in list(by_op.items())[:count])


def measure(name: str, small: bool, threads: int, repeat: int, trials: int) -> tuple[dict, dict[str, float]]:
    """One row of results for zoo model `name`, and its per-op-type time in microseconds."""
    mod, params = ir.models.get(name, small=small)
    inputs = model_inputs(mod["main"], params)
    exe = strategies.build(mod, "cpu", params)
    session = _ort_session(to_onnx(mod, params), threads)
    error = relative_error(exe.run(inputs), session.run(None, inputs))
    versus_ort = alternate({"ours": lambda: exe.run(inputs), "ort": lambda: session.run(None, inputs)}, repeat)
    profile = exe.profile(inputs, repeat=max(3, repeat // 2))
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "tuning.jsonl"
        records = strategies.tune(mod, "cpu", log=log, trials=trials, params=params, repeat=TUNE_REPEAT)
        with strategies.apply_history_best(log):
            tuned = strategies.build(mod, "cpu", params)
        logged_us = strategies.CostModel("cpu", log=log).program_cost(mod)
    versus_tuned = alternate({"plevel": lambda: exe.run(inputs), "tuned": lambda: tuned.run(inputs)}, repeat)
    predicted_us = strategies.CostModel("cpu").program_cost(mod)
    (ours, ours_cpu), (ort, ort_cpu) = versus_ort["ours"], versus_ort["ort"]
    (plevel, plevel_cpu), (tuned_s, tuned_cpu) = versus_tuned["plevel"], versus_tuned["tuned"]
    row = {
        "model": name + (" (small)" if small else ""),
        "threads": threads,
        "ours_ms": ours * 1e3,
        "ort_ms": ort * 1e3,
        "ours_over_ort": ours / ort,
        "ours_over_ort_cpu": ours_cpu / ort_cpu,
        "max_rel_error": error,
        "plevel_ms": plevel * 1e3,
        "tuned_ms": tuned_s * 1e3,
        "tuning_gain": plevel / tuned_s,
        "tuning_gain_cpu": plevel_cpu / tuned_cpu,
        "tuned_workloads": len({r.workload for r in records}),
        "tuned_choices_changed": sum(s.reason == "tuned" and s.implementation.name != p.implementation.name
                                     for s, p in zip(tuned.selections, exe.selections)),
        "predicted_ms": predicted_us / 1e3,
        "predicted_over_measured": predicted_us / 1e6 / plevel,
        "logged_ms": logged_us / 1e3,
        "logged_over_measured": logged_us / 1e6 / tuned_s,
        "profile_latency_ms": profile.latency_us / 1e3,
        "profile_kernels_ms": profile.kernels_us / 1e3,
        "top_ops": _top_ops(profile.by_op()),
    }
    return row, profile.by_op()


def _op_section(model: str, by_op: Mapping[str, float]) -> Section:
    total = sum(by_op.values()) or 1.0
    rows = [{"op": op, "ms": us / 1e3, "share": f"{us / total:.1%}"} for op, us in by_op.items()]
    return Section(f"{model}: time per op type", rows, ("op", "ms", "share"),
                   "`Executable.profile()`: each call's median kernel time, summed per op type.")


def _rerun_with_threads(threads: int, argv: Sequence[str]) -> None:
    """Run this benchmark again in a process whose OpenBLAS starts with `threads` threads."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads)}
    sys.exit(subprocess.call([sys.executable, "-m", "benchmarks.bench_strategies", *argv], env=env))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="the zoo's test configurations")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and ONNX Runtime threads (default 1)")
    parser.add_argument("--repeat", type=int, default=15, help="timed runs of each program (default 15)")
    parser.add_argument("--trials", type=int, default=4, help="tuning measurements per workload (default 4)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if os.environ.get("OPENBLAS_NUM_THREADS") != str(args.threads):
        _rerun_with_threads(args.threads, argv)
    rows, sections = [], []
    for name in MODELS:
        row, by_op = measure(name, args.small, args.threads, args.repeat, args.trials)
        rows.append(row)
        sections.append(_op_section(row["model"], by_op))
    notes = (f"Latencies in ms, medians of {args.repeat} runs after 2 warm-up runs; {args.threads} thread(s) for "
             f"OpenBLAS and ONNX Runtime (intra-op), on {platform.machine()} with {os.cpu_count()} cores. Ours and "
             f"ONNX Runtime take turns within one loop, as do the plevel and tuned builds. Tuning: "
             f"{args.trials} trials per workload. See the module docstring for each column.")
    path = write_results("strategies_small" if args.small else "strategies", rows, COLUMNS, notes, sections)
    print(path.read_text())


if __name__ == "__main__":
    main()
