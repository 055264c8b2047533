"""The same command, the same bytes: `eqsat optimize IN.onnx OUT.onnx` (speed check included) run
several times on each export, on a quiet machine and beside CPU hogs, and what it writes compared.

    python -m benchmarks.bench_same_output --saved DIR          # -> results/same_output.{json,md}
    python -m benchmarks.bench_same_output --models resnet18 --exporters dynamo --runs 2

Per export of `benchmarks.torch_models` (read from `--saved DIR` where it was written there): the
command runs `--runs` times on the machine as it is, then `--runs` times beside two busy processes
per core (`benchmarks.load.cpu_hogs`), each in this process through the command line's own entry
point with a JSON report. `digests` counts the distinct SHA-256 digests of the written files (1: the
same bytes every time); `kept` lists the speed check's verdicts (the program written: ours, ours
without some op families, or the input), and `ratios` the range of its median ratios ours / input
and the widest interval around them, with the margins and the rounds each took (`eqsat.speed`).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import multiprocessing
import os
import tempfile
from typing import Any, Sequence

import onnx

from benchmarks.load import cpu_hogs
from benchmarks.report import write_results
from benchmarks.torch_models import export, export_arguments, export_rows
from eqsat.cli import main as eqsat_main
from eqsat.speed import RULE

COLUMNS = ["model", "exporter", "runs", "digests", "same", "kept", "ratios", "widest_interval", "margins", "rounds"]


def _run_once(source: str, folder: str, k: int) -> tuple[str, dict[str, Any]]:
    """One run of the command: the digest of what it wrote and its speed check's report."""
    out, report = os.path.join(folder, f"out{k}.onnx"), os.path.join(folder, f"report{k}.json")
    if eqsat_main(["optimize", source, out, "--quiet", "--json", report]) != 0:
        raise RuntimeError(f"eqsat optimize failed on {source}")
    with open(out, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    with open(report) as f:
        return digest, json.load(f)["speed_check"]


def measure(name: str, exporter: str, runs: int, saved: str | None) -> dict[str, Any]:
    """One row: `runs` quiet and `runs` loaded runs of the command on the export."""
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "in.onnx")
        onnx.save(export(name, False, exporter, saved), source)
        results = [_run_once(source, folder, k) for k in range(runs)]
        with cpu_hogs():
            results += [_run_once(source, folder, runs + k) for k in range(runs)]
    checks = [check for _, check in results]
    medians = [check["median"] for check in checks]
    lows, highs = zip(*(check["interval"] for check in checks))
    margins = [check["margin"] for check in checks]
    kept = collections.Counter(check["kept"] for check in checks)
    digests = len({digest for digest, _ in results})
    return {"model": name, "exporter": exporter, "runs": f"{runs} quiet + {runs} loaded",
            "digests": digests, "same": digests == 1,
            "kept": ", ".join(f"{verdict} x{count}" for verdict, count in kept.items()),
            "ratios": f"{min(medians):.3f}-{max(medians):.3f}", "widest_interval": f"{min(lows):.3f}-{max(highs):.3f}",
            "margins": f"{min(margins):.1%}-{max(margins):.1%}",
            "rounds": ",".join(str(len(check["ratios"])) for check in checks)}


NOTES = """`eqsat optimize IN.onnx OUT.onnx --json R` (the ort target, ONNX Runtime's kernels and the speed
check with its defaults: ONNX Runtime's optimizer on, one thread on CPU time) on full-size exports,
{runs} runs on this machine as it is, then {runs} beside {hogs} busy processes ({cores} cores).
`digests`: distinct SHA-256 digests of the written files; `kept`: the speed check's verdicts;
`ratios`: the range of ours' median ratios ours / input; `widest_interval`: from the lowest to the
highest bound of their intervals; `margins`: the range of the margins ours had to beat (1% plus the
control's distance from 1); `rounds`: the rounds each check of ours took (blocks of 9, at most 27).
The rule: {rule}."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    export_arguments(parser)
    parser.add_argument("--runs", type=int, default=3, help="runs on the machine as it is, and as many loaded")
    parser.add_argument("--name", default="same_output", help="results file name")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    rows = export_rows(parser, args, lambda name, exporter: measure(name, exporter, args.runs, args.saved),
                       lambda row: f"{row['digests']} digest(s), kept {row['kept']}")
    cores = multiprocessing.cpu_count()
    path = write_results(args.name, rows, COLUMNS, NOTES.format(runs=args.runs, hogs=2 * cores, cores=cores, rule=RULE))
    print(path.read_text())


if __name__ == "__main__":
    main()
