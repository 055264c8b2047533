"""The ort target's cost model against ONNX Runtime: predicted whole-model latency, roofline and tuned, vs measured.

    python -m benchmarks.bench_ort_cost                          # ResNet-50 and BERT-base -> results/ort_cost.{json,md}
    python -m benchmarks.bench_ort_cost --models squeezenet --small --threads 2

Per zoo model (full size unless `--small`), saturated once under the ort target's rules (`default` +
`layout`, as `optimize(target="ort")` does):

- tuning: every workload of the saturated e-graph that the ort target can run (`eqsat.candidates`:
  the input's calls and every fused or rewritten form extraction chooses from) is timed in ONNX
  Runtime (`strategies.tuning.tune_workloads`, `--rounds` interleaved rounds) into a fresh log;
  `workloads` and `tune_s` say how many and how long.
- three programs: the input, ours extracted for ort under the roofline alone (`roofline`), and
  ours extracted for ort under the tuned cost model (`tuned`). Extraction folds calls on
  parameters alone, which the cost models price at zero; the input runs them as given (NasRNN's
  first step: its learned state times eight weights), so its prediction falls short by their time.
- `roofline_ms` / `tuned_ms`: the program's cost under `CostModel("ort")` and `CostModel("ort",
  log)`; `estimated` counts its workloads the log lacks (costed by the roofline).
- `measured_ms`: median latency of an ONNX Runtime session of the program exported with
  `to_onnx(contrib=True)`, at the ort target's graph optimization level and `--threads` intra-op
  threads and on the clock tuning used (one thread: the thread's CPU time, which foreign load on a
  shared machine barely moves; see `strategies.ort_timing`), inputs bound once (`bound_run`);
  all sessions take turns within one loop, each run once untimed, then timed over `STEADY_RUNS`
  runs in a row (the steady state of a model serving requests, not the caches another program left). `ort_all_ms` is the input
  with ONNX Runtime's optimizer fully on, for reference.
- `roofline_ratio` / `tuned_ratio`: predicted / measured (1 is a perfect prediction).
- `--passes`: each pass tunes afresh, then measures the programs (extracted once, after the first
  pass), so each prediction meets a latency taken under the same machine load; `tuned_ms`,
  `measured_ms` and `tuned_ratio` are medians over the passes, `tuned_ratio_range` their spread.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

import ir
import strategies
from eqsat.candidates import candidate_workloads
from eqsat.optimize import extract_program, saturate_program
from eqsat.rules.library import default_rules
from strategies.executor import prepare_program
from strategies.ort_timing import GRAPH_OPTIMIZATION, bound_run, ort_session, timing_clock
from strategies.tuning import program_weight_bytes, tune_workloads

from .bench_eqsat import data_inputs
from .report import write_results

DEFAULT_MODELS = ("resnet50", "bert")
STEADY_RUNS = 4  # timed runs of a whole program in a row per sample, after an untimed one
COLUMNS = ["model", "program", "roofline_ms", "tuned_ms", "measured_ms", "roofline_ratio", "tuned_ratio",
           "tuned_ratio_range", "estimated", "workloads", "tune_s", "ort_all_ms"]


def _interleaved_ms(runs: dict[str, Callable[[], Any]], threads: int, repeat: int) -> dict[str, float]:
    """Median milliseconds per run of each program on the clock tuning used (`timing_clock`): after a
    warm-up, `repeat` rounds each run every program once untimed, then time `STEADY_RUNS` runs in a
    row: the steady state of a model serving requests, not the caches another program left."""
    _, clock = timing_clock(threads)
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run()
    for _ in range(repeat):
        for name, run in runs.items():
            run()  # untimed: it brings the program's weights back into the caches
            start = clock()
            for _ in range(STEADY_RUNS):
                run()
            samples[name].append((clock() - start) * 1e3 / STEADY_RUNS)
    return {name: statistics.median(values) for name, values in samples.items()}


def _outputs(value: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in (value if isinstance(value, (tuple, list)) else [value])]


def measure(name: str, small: bool, threads: int, rounds: int, repeat: int, passes: int) -> list[dict[str, Any]]:
    """One row per program of one zoo model: predicted (roofline, tuned) and measured milliseconds.

    Each pass tunes afresh and then measures the whole programs, so a prediction and the latency it
    is compared with are taken under the same machine load; ratios are medians over the passes.
    """
    mod, params = ir.models.get(name, small=small)
    label = name + (" (small)" if small else "")
    sat = saturate_program(mod, params, rules=default_rules("ort"))
    items = candidate_workloads(sat.view, "ort")
    weights = program_weight_bytes(mod, params)
    roofline = strategies.CostModel("ort")
    programs: dict[str, tuple[ir.IRModule, dict]] = {"input": (mod, params)}
    sessions: dict[str, Any] = {}
    inputs = data_inputs(mod, params)
    per_pass: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(passes):
            start = time.perf_counter()
            records = tune_workloads(items, "ort", log=Path(tmp) / f"ort{index}.jsonl", repeat=rounds, threads=threads,
                                     weight_bytes=weights)
            tune_s = time.perf_counter() - start
            tuned = strategies.CostModel("ort", records)
            if not sessions:  # the programs are extracted once, with the first pass's log
                for program, model in (("roofline", roofline), ("tuned", tuned)):
                    out = extract_program(sat, model, "greedy")
                    programs[program] = (out.mod, out.params)
                sessions = {program: ort_session(ir.frontend.to_onnx(m, p, contrib=True), threads, GRAPH_OPTIMIZATION)
                            for program, (m, p) in programs.items()}
                sessions["ort_all"] = ort_session(ir.frontend.to_onnx(mod, params), threads, "all")
            measured = _interleaved_ms({program: bound_run(s, inputs) for program, s in sessions.items()}, threads,
                                       repeat)
            per_pass.append({"tuned": tuned, "measured": measured, "records": records, "tune_s": tune_s})
    want = _outputs(sessions["ort_all"].run(None, inputs))
    rows = []
    for program, (m, p) in programs.items():
        folded = prepare_program(m, p)
        tuned_ms = [run["tuned"].program_cost(folded) / 1e3 for run in per_pass]
        measured_ms = [run["measured"][program] for run in per_pass]
        ratios = [t / m for t, m in zip(tuned_ms, measured_ms)]
        got = _outputs(sessions[program].run(None, inputs))
        last = per_pass[-1]
        row = {"model": label, "program": program, "roofline_ms": roofline.program_cost(folded) / 1e3,
               "tuned_ms": statistics.median(tuned_ms), "measured_ms": statistics.median(measured_ms),
               "tuned_ratio": statistics.median(ratios), "tuned_ratio_range": f"{min(ratios):.2f}-{max(ratios):.2f}",
               "estimated": last["tuned"].coverage(folded).estimated, "workloads": len(last["records"]),
               "failed": sum(not r.ok for r in last["records"]),
               "tune_s": statistics.median(run["tune_s"] for run in per_pass),
               "ort_all_ms": statistics.median(run["measured"]["ort_all"] for run in per_pass),
               "max_abs_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(got, want)),
               "passes": {"tuned_ms": tuned_ms, "measured_ms": measured_ms}}
        row["roofline_ratio"] = row["roofline_ms"] / row["measured_ms"]
        rows.append(row)
        print(f"{label} {program}: roofline {row['roofline_ms']:.3f} ms, tuned {row['tuned_ms']:.3f} ms, "
              f"measured {row['measured_ms']:.3f} ms, tuned/measured {row['tuned_ratio']:.2f} "
              f"({row['tuned_ratio_range']})", file=sys.stderr, flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help=f"comma-separated zoo models (default {','.join(DEFAULT_MODELS)})")
    parser.add_argument("--small", action="store_true", help="the zoo's test configurations")
    parser.add_argument("--threads", type=int, default=1, help="ONNX Runtime intra-op threads (default 1)")
    parser.add_argument("--rounds", type=int, default=5, help="tuning rounds per workload (default 5)")
    parser.add_argument("--repeat", type=int, default=10, help="timed rounds of the whole programs (default 10)")
    parser.add_argument("--passes", type=int, default=3, help="tune-then-measure passes (default 3)")
    parser.add_argument("--name", default="ort_cost", help="results file name (default ort_cost)")
    args = parser.parse_args(argv)
    rows = [row for name in args.models.split(",")
            for row in measure(name, args.small, args.threads, args.rounds, args.repeat, args.passes)]
    notes = (f"Milliseconds; ONNX Runtime {__import__('onnxruntime').__version__} on {platform.machine()} with "
             f"{os.cpu_count()} cores shared with other work, {args.threads} intra-op thread(s), graph optimization "
             f"{GRAPH_OPTIMIZATION} (the ort target's level; `ort_all_ms`: the input with all optimizations). "
             f"Tuning: {args.rounds} interleaved rounds per workload of the saturated e-graph. Whole programs: "
             f"medians of {args.repeat} interleaved rounds of 1 untimed and {STEADY_RUNS} timed runs, on the {timing_clock(args.threads)[0]} "
             f"clock. {args.passes} passes of tuning then measuring: "
             f"`tuned_ms`, `measured_ms` and `tuned_ratio` are medians over them, `tuned_ratio_range` their spread. "
             f"See the module docstring for each column.")
    path = write_results(args.name, rows, COLUMNS, notes)
    print(path.read_text())


if __name__ == "__main__":
    main()
