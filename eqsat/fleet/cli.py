"""`eqsat batch`: its options and what it prints (the work is `batch` and `tune_batch`).

    eqsat batch models/ resnet50 bert --small --out results/            # local: Ray if installed, else processes
    eqsat batch list.txt --out results/ --workers 2                      # a process pool of two
    eqsat batch models/ --out results/ --address ray://head:10001        # a Ray cluster (or RAY_ADDRESS)
    eqsat batch models/ --tune --db tuning.db --target ort               # each distinct workload measured once

A line on stderr as each model finishes; the summary table on stdout. Exit status 1 when some model
failed (its row says why), 2 for input to fix (a missing file or directory, a file of a list that
is not ONNX, a file that is not a tuning database), as every `eqsat` command.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from strategies.tuning_db import TuningDatabase

from ..atomic import write_files
from ..cli_args import existing_file, extractor_name, int_at_least, output_file, rule_sets, seconds, target_kind
from ..cli_errors import UsageError
from ..limits import Limits
from .batch import BatchOptions, batch
from .engine import choose_engine
from .tune import TuneOptions, tune_batch

__all__ = ["batch_args", "run_batch"]


def _rules(text: str) -> str:
    """An argparse type: library rule sets joined by '+', kept as their names (a task's options are plain values)."""
    rule_sets(text)
    return text


def _directory(text: str) -> str:
    """An argparse type: a directory that exists or can be made (its parent exists)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    if not path.exists() and not path.absolute().parent.is_dir():
        raise argparse.ArgumentTypeError(f"directory {str(path.absolute().parent)!r} of {text!r} does not exist")
    return text


def batch_args(p: argparse.ArgumentParser) -> None:
    """The options of `eqsat batch` (verification's come from `verify_args`)."""
    p.add_argument("sources", nargs="+", metavar="DIR_OR_LIST",
                   help="zoo model names, .onnx files, directories of .onnx files, or list files (one per line)")
    p.add_argument("--out", type=_directory, help="the directory each model's NAME.onnx and NAME.json go to, and "
                                                  "batch.json (required unless --tune)")
    p.add_argument("--small", action="store_true", help="the zoo models' tiny test configurations")
    p.add_argument("--workers", type=int_at_least(1),
                   help="run on a process pool of this many workers on this machine (default: a local Ray cluster "
                        "when Ray is installed, else a pool of one worker per CPU)")
    p.add_argument("--address", help="the Ray cluster to run on, e.g. ray://head:10001 (default: $RAY_ADDRESS)")
    p.add_argument("--target", type=target_kind(), default=None,
                   help="a strategies target or 'ops' (default: ort for .onnx files, cpu for zoo models; ort with --tune)")
    p.add_argument("--rules", type=_rules, default=None, help="rule sets joined by '+' (default: the target's)")
    p.add_argument("--iterations", type=int_at_least(1), default=Limits.iterations,
                   help="saturation stops after this many iterations")
    p.add_argument("--nodes", type=int_at_least(1), default=Limits.nodes,
                   help="saturation stops when the e-graph has this many e-nodes")
    p.add_argument("--seconds", type=seconds, default=Limits.seconds, help="saturation stops after this many seconds")
    p.add_argument("--extractor", type=extractor_name, default="greedy", help="how each program is extracted")
    p.add_argument("--standard-onnx", action="store_true", help="standard ONNX ops only in the programs written")
    p.add_argument("--onnx-contrib", action="store_true",
                   help="for a target other than ort, fused ops as ONNX Runtime contrib ops where possible")
    p.add_argument("--no-speed-check", dest="speed_check", action="store_false",
                   help="for the ort target, write ours without timing it against the input")
    p.add_argument("--ort-optimizer", choices=("disabled", "basic", "extended", "all"), default="all",
                   help="ONNX Runtime's graph optimization level in the speed check's sessions")
    p.add_argument("--threads", type=int_at_least(1), default=1,
                   help="intra-op threads of ONNX Runtime's sessions; also the thread count of the tuning records "
                        "a database gives and takes")
    p.add_argument("--log", type=existing_file, help="a JSON-lines tuning log whose measurements price programs")
    p.add_argument("--db", type=output_file,
                   help="a tuning database (see `eqsat tune --db`): its records for this kind of device price "
                        "programs; with --tune, where measurements go (created when missing)")
    p.add_argument("--tune", action="store_true",
                   help="measure each distinct workload of all the models once into --db instead of optimizing")
    p.add_argument("--trials", type=int_at_least(1), default=8, help="with --tune: measurements per workload, at most")
    p.add_argument("--repeat", type=int_at_least(1), default=3, help="with --tune: timed runs per measurement")


def _show(done: int, total: int, row: dict[str, Any]) -> None:
    """One line on stderr as a model finishes."""
    if row["status"] != "ok":
        detail = row.get("error", "")
    elif "workloads" in row:
        detail = f"{row['workloads']} workload(s), {row['new']} new"
    else:
        detail = (f"{row['stop_reason']}, cost {row['cost_before']:.4g} -> {row['cost_after']:.4g} {row['unit']}, "
                  f"{row['verified']}" + (" (kept from an earlier run)" if row.get("resumed") else "")
                  if row["cost_before"] is not None and row["cost_after"] is not None else row["stop_reason"])
    print(f"[{done}/{total}] {row['model']}: {row['status']}: {detail}", file=sys.stderr, flush=True)


def run_batch(args: argparse.Namespace) -> int:
    """`eqsat batch`: exit status 0 when every model succeeded, 1 when some failed."""
    if args.log and args.db:
        raise UsageError("give one source of measurements: --log (a JSON-lines log) or --db (a tuning database)")
    if args.tune and not args.db:
        raise UsageError("--tune measures into a tuning database: give --db FILE")
    if not args.tune and not args.out:
        raise UsageError("give --out DIR, the directory the optimized models and their reports go to")
    if args.workers is not None and args.address:
        raise UsageError("give --workers (a process pool on this machine) or --address (a Ray cluster), not both")
    if args.db:
        TuningDatabase(args.db).close()  # a file that is not a tuning database is the user's to fix, before any work
    engine = choose_engine(args.workers, args.address)
    if args.tune:
        summary = tune_batch(args.sources, args.db, small=args.small, engine=engine, progress=_show,
                             options=TuneOptions(args.target or "ort", args.trials, args.repeat, args.threads))
        print(summary.summary())
        if args.out:
            Path(args.out).mkdir(exist_ok=True)
            write_files({Path(args.out) / "tune.json": (json.dumps(summary.to_dict(), indent=2) + "\n").encode()})
        return 1 if summary.lost or any(r["status"] != "ok" for r in summary.rows) else 0
    options = BatchOptions(args.target, args.rules, args.iterations, args.nodes, args.seconds, args.extractor,
                           args.verify, args.standard_onnx, args.onnx_contrib, args.speed_check, args.ort_optimizer,
                           args.threads, args.db or args.log)
    result = batch(args.sources, args.out, options=options, small=args.small, engine=engine, progress=_show)
    print(result.table())
    return 1 if result.failed else 0
