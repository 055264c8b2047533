"""Many models at once: `eqsat.batch` on 1 and 2 local workers, and tuning through one database.

Models: the zoo at its small sizes (cpu target) and transformer exports from tests/fixtures/llm
(ort target, with the speed check), 20+ in all. Optimization: the same batch on a process pool of
one and of two workers, interleaved in rounds (1, 2, 2, 1, ...: a load change on the shared
machine hits both alike); the ratio is per pair of neighbouring runs, and its spread is the noise.
Each run writes a fresh output directory; the programs of the runs are compared byte for byte.
Tuning (ort, ONNX Runtime's kernels, one intra-op thread): the workloads of every model counted
with and without repeats; each model tuned on its own into its own log (what `eqsat tune` did
per model), against `tune_batch` into one database (each distinct workload once), then again on
the filled database (nothing left to measure).

    python -m benchmarks.bench_batch [--rounds 2] [--small]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import ir
from eqsat.fleet import BatchOptions, ProcessPool, TuneOptions, batch, tune_batch
from eqsat.fleet.models import find_models, load_model
from strategies.tuning import tune

from .report import Section, write_results

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "llm"
EXPORTS = ("dynamo_sdpa", "torchscript_eager")
"""the exporter spellings of each fixture family taken (one per exporter and attention kind)."""


def sources(small: bool) -> list[str]:
    """The zoo's models and the chosen fixtures (with `small`, three of each)."""
    zoo = list(ir.models.MODELS)
    exports = sorted(str(p) for kind in EXPORTS for p in FIXTURES.glob(f"*_{kind}.onnx"))
    return (zoo[:3] + exports[:3]) if small else zoo + exports


def optimize_rounds(models: list[str], options: BatchOptions, rounds: int, work: Path) -> tuple[list[dict], dict]:
    """Batches on 1 and 2 workers in the order 1, 2, 2, 1, ... (`rounds` of each); their times and programs."""
    order = [w for r in range(rounds) for w in ((1, 2) if r % 2 == 0 else (2, 1))]
    runs, programs = [], {}
    for i, workers in enumerate(order):
        out = work / f"run{i}"
        load = os.getloadavg()[0]
        result = batch(models, str(out), options=options, small=True, engine=ProcessPool(workers))
        errors = sorted({f"{r['model']}: {r.get('error', r['status'])}" for r in result.failed})
        runs.append({"run": i, "workers": workers, "seconds": result.seconds, "ok": len(result.rows) - len(result.failed),
                     "failed": len(result.failed), "load_before": load, "first_failure": errors[0] if errors else ""})
        programs[i] = {m.name: (out / f"{m.name}.onnx").read_bytes() for m in find_models(models, True)
                       if (out / f"{m.name}.onnx").exists()}
        print(f"optimize run {i}: {workers} worker(s), {result.seconds:.1f} s, load {load:.1f}", file=sys.stderr)
    return runs, programs


def tune_comparison(models: list[str], repeat: int, work: Path) -> tuple[list[dict], dict[str, Any]]:
    """Each model tuned on its own (one log each), then `tune_batch` into one database, empty and filled, and
into another on two workers."""
    start = time.perf_counter()
    per_model = 0
    for i, model in enumerate(find_models(models, True)):
        mod, params = load_model(model)
        per_model += len(tune(mod, "ort", log=work / f"alone{i}.jsonl", params=params, repeat=repeat, threads=1))
    alone = time.perf_counter() - start
    options = TuneOptions("ort", repeat=repeat, threads=1)
    cold = tune_batch(models, work / "tuning.db", options=options, small=True, engine=ProcessPool(1))
    warm = tune_batch(models, work / "tuning.db", options=options, small=True, engine=ProcessPool(1))
    two = tune_batch(models, work / "two.db", options=options, small=True, engine=ProcessPool(2))
    rows = [
        {"run": "each model on its own (one log per model)", "seconds": alone, "measured": per_model},
        {"run": "tune_batch, empty database, 1 worker", "seconds": cold.seconds, "measured": cold.measured},
        {"run": "tune_batch again, filled database, 1 worker", "seconds": warm.seconds, "measured": warm.measured},
        {"run": "tune_batch, empty database, 2 workers", "seconds": two.seconds, "measured": two.measured},
    ]
    return rows, {"total": cold.total, "unique": cold.unique, "dedupe_ratio": cold.dedupe_ratio,
                  "alone_seconds": alone, "cold_seconds": cold.seconds, "warm_seconds": warm.seconds}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="batches on each worker count (interleaved)")
    parser.add_argument("--iterations", type=int, default=4, help="saturation iterations per model")
    parser.add_argument("--repeat", type=int, default=3, help="tuning rounds per workload")
    parser.add_argument("--small", action="store_true", help="six models, for a quick check")
    parser.add_argument("--name", default="batch", help="results file name")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    models = sources(args.small)
    options = BatchOptions(iterations=args.iterations, nodes=20_000)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        runs, programs = optimize_rounds(models, options, args.rounds, work)
        tune_rows, tuning = tune_comparison(models, args.repeat, work)
    ratios = []
    for a, b in zip(runs, runs[1:]):  # neighbouring runs on different worker counts
        if a["workers"] != b["workers"]:
            one, two = (a, b) if a["workers"] == 1 else (b, a)
            ratios.append(one["seconds"] / two["seconds"])
    zoo = [m for m in programs[0] if m in ir.models.MODELS]
    same_zoo = sum(all(p.get(m) == programs[0][m] for p in programs.values()) for m in zoo)
    exports = [m for m in programs[0] if m not in ir.models.MODELS]
    same_exports = sum(all(p.get(m) == programs[0][m] for p in programs.values()) for m in exports)
    summary = [{"measure": "models", "value": len(models)},
               {"measure": "1 worker / 2 workers, batch seconds (median of neighbouring pairs)",
                "value": statistics.median(ratios)},
               {"measure": "that ratio, lowest-highest pair", "value": f"{min(ratios):.3f}-{max(ratios):.3f}"},
               {"measure": "zoo programs byte-identical across all runs", "value": f"{same_zoo}/{len(zoo)}"},
               {"measure": "export programs byte-identical across all runs", "value": f"{same_exports}/{len(exports)}"},
               {"measure": "workloads over all models (each model's distinct ones)", "value": tuning["total"]},
               {"measure": "distinct workloads", "value": tuning["unique"]},
               {"measure": "dedupe ratio", "value": tuning["dedupe_ratio"]},
               {"measure": "workload measurements saved (total - distinct) x seconds per measurement alone",
                "value": (tuning["total"] - tuning["unique"]) * tuning["alone_seconds"] / max(tuning["total"], 1)},
               {"measure": "tuning seconds saved by the database, first run (alone - batch)",
                "value": tuning["alone_seconds"] - tuning["cold_seconds"]},
               {"measure": "tuning seconds saved by the database, re-run (alone - filled)",
                "value": tuning["alone_seconds"] - tuning["warm_seconds"]}]
    notes = f"""
`python -m benchmarks.bench_batch{' --small' if args.small else ''}`: {len(models)} models ({len(zoo)} zoo models at
their small sizes, cpu target; {len(exports)} transformer exports from tests/fixtures/llm, ort target with the speed
check), each saturated for {args.iterations} iterations (at most 20,000 e-nodes), verified on 3 input sets.
Batches ran on a process pool of 1 and 2 workers, interleaved ({', '.join(str(r['workers']) for r in runs)}); the
machine has 2 cores shared with other work (load average before each run in the table below), so the ratio's
spread over the pairs is the noise, and a ratio below 2 is partly that load. Worker start (spawned processes
importing the project) is inside each batch's seconds. Export programs can differ between runs by design: the ort
target's speed check times ours against the input and keeps the faster, which is timing. Tuning: ort target,
{args.repeat} rounds per workload, one intra-op thread (thread CPU time), one worker for the batch so that it
compares with the per-model runs done one after another in one process. A first batch run measures fewer
workloads but also starts a worker process and lists every model's workloads there: the filled-database run is
that cost alone. The saving grows with what one measurement costs (full-size models, more rounds), and a re-run
measures nothing.
"""
    sections = [Section("Optimization runs", runs,
                        ["run", "workers", "seconds", "ok", "failed", "load_before", "first_failure"]),
                Section("Tuning", tune_rows, ["run", "seconds", "measured"],
                        "measured: workloads timed by the run (per model, each model's distinct static workloads).")]
    md = write_results(args.name, summary, ["measure", "value"], notes, sections)
    print(md.read_text())


if __name__ == "__main__":
    main()
