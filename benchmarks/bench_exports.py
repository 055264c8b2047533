"""Real PyTorch exports in ONNX Runtime: the exported model against ours, each with ONNX Runtime's optimizer off and on.

    python -m benchmarks.bench_exports                  # every model, full size -> results/exports.{json,md}
    python -m benchmarks.bench_exports --small --models resnet18,distilbert --exporters dynamo
    python -m benchmarks.bench_exports --models convnext_tiny --name exports_convnext
    python -m benchmarks.bench_exports --saved DIR      # exports written by `python -m benchmarks.torch_models DIR`

Per model of `benchmarks.torch_models` (torchvision's ResNet-18, MobileNet-v3-Large, EfficientNet-B0,
ConvNeXt-T, DenseNet-121 and ShuffleNet-v2, transformers' BERT-base and DistilBERT; random weights) and per exporter of
`torch.onnx.export` (TorchScript and dynamo): optimized by `eqsat.optimize_onnx`, what `eqsat optimize
IN.onnx OUT.onnx` writes (the ort target with ONNX Runtime's kernels, and the speed check); four ONNX Runtime CPU
sessions (exported / ours, optimizer off / fully on) take turns in interleaved rounds and the ratios
are medians over rounds of exported-with-optimizer-on time / session time (above 1: faster than
what a user of ONNX Runtime gets from the export alone), `--runs` times. Needs torch and
torchvision (and transformers), the `exports` extra; a model whose library is missing is skipped.
"""

from __future__ import annotations

import multiprocessing
import statistics
from functools import partial
from typing import Any, Sequence

import onnx

import eqsat
from eqsat.target import in_session
from benchmarks.bench_spellings import ort_session, ratio_medians
from benchmarks.bench_strategies import relative_error
from benchmarks.report import Stopwatch, timing_parser, write_results
from benchmarks.torch_models import SMALL_LAYERS, export, export_arguments, export_rows, input_feed

COLUMNS = ["model", "exporter", "ours_off", "ours_on", "ours_on_runs", "exported_off", "control", "exported_on_ms",
           "max_rel_error", "optimize_s", "kept_input", "onnx_nodes", "ours_nodes"]


def compare_in_ort(original: onnx.ModelProto, ours: onnx.ModelProto, feed: dict, repeat: int,
                   min_seconds: float, for_off: onnx.ModelProto | None = None) -> dict[str, Any]:
    """Interleaved timing of `original` and `ours` with ONNX Runtime's optimizer off and on: ratios
    against the original with it on, and ours' largest relative error against the original. A
    second session of the original with the optimizer on, timed last in each round, is the control:
    its ratio would be 1 on a quiet machine, and its distance from 1 is the row's noise. `for_off`, ours
    for a session with the optimizer off, is timed in such a session (`ours_for_off`)."""
    sessions = {"original_on": ort_session(original, True), "original_off": ort_session(original, False),
                "ours_off": ort_session(ours, False), "ours_on": ort_session(ours, True),
                "control": ort_session(original, True)}
    if for_off is not None:
        sessions["ours_for_off"] = ort_session(for_off, False)
    reference = sessions["original_off"].run(None, feed)
    runs = {key: partial(session.run, None, feed) for key, session in sessions.items()}
    original_on, ratios = ratio_medians(runs, "original_on", repeat, min_seconds)
    return {**ratios, "original_on_ms": original_on * 1e3,
            "max_rel_error": relative_error(tuple(sessions["ours_off"].run(None, feed)), reference)}


def measure_export(name: str, small: bool, repeat: int, min_seconds: float, exporter: str = "torchscript",
                   runs: int = 1, speed: bool = True, saved: str | None = None, off_session: bool = False) -> dict[str, Any]:
    """One row: `eqsat.optimize_onnx` on the export (what `eqsat optimize IN.onnx OUT.onnx` writes: the
    ort target, its kernels, the speed check unless not `speed`), timed against the export `runs`
    times; each ratio is the median of the runs' medians, `ours_on_runs` lists every run's. The export
    is read from the folder `saved` where it is there (`torch_models.export`). With `off_session`, ours
    for a session with ONNX Runtime's optimizer off (`--ort-optimizer disabled`) is timed too, in that
    session, against the export with the optimizer on (`ours_for_off`)."""
    original = export(name, small, exporter, saved)
    stopwatch = Stopwatch()
    with stopwatch("optimize"):
        ours = eqsat.optimize_onnx(original, speed=speed)
    for_off = None
    if off_session:
        for_off = eqsat.optimize_onnx(original, target=in_session("ort", optimizer="disabled"), speed=speed)
    measured = [compare_in_ort(original, ours, input_feed(original), repeat, min_seconds, for_off)
                for _ in range(runs)]

    def across(key: str) -> float:
        return statistics.median(r[key] for r in measured)
    return {"model": name, "exporter": exporter, "ours_off": across("ours_off"), "ours_on": across("ours_on"),
            "ours_on_runs": " / ".join(f"{r['ours_on']:.3f}" for r in measured),
            "exported_off": across("original_off"), "control": across("control"),
            "exported_on_ms": across("original_on_ms"), "max_rel_error": measured[0]["max_rel_error"],
            "optimize_s": stopwatch.seconds["optimize"], "kept_input": ours is original,
            "onnx_nodes": len(original.graph.node), "ours_nodes": len(ours.graph.node),
            **({"ours_for_off": across("ours_for_off"), "for_off_kept_input": for_off is original} if off_session else {})}


NOTES = """\
Wall-clock times on a machine with {cores} cores shared with other work; ONNX Runtime {ort}, CPU
provider, default threads without spinning; {size} inputs. Ours is what `eqsat optimize IN.onnx OUT.onnx`
writes (`eqsat.optimize_onnx`: the ort target with ONNX Runtime's kernels, and the speed check, which
keeps the input where ours is not faster: `kept_input`). Ratios are medians over interleaved
rounds (at least {repeat}, more until the export has run {seconds:g} s) of exported-with-optimizer-on
time / session time, each the median of {runs} such runs (`ours_on_runs`: each run's, the noise across
runs): `ours_off` and `ours_on` our program with ONNX Runtime's optimizer off and on,
`exported_off` the export with it off, `control` a second session of the export with it on (1 on a
quiet machine: its distance from 1 is the row's noise). `max_rel_error`: ours (optimizer off) against the export
(optimizer off), largest difference over the largest magnitude. `onnx_nodes` / `ours_nodes`: nodes
of the export and of ours."""


OFF_NOTE = """ `ours_for_off`: ours made for a session with the optimizer off
(`eqsat optimize IN.onnx OUT.onnx --ort-optimizer disabled`, speed check in such a session), run with it off,
against the export with it on; `for_off_kept_input`: that speed check kept the input."""


def main(argv: Sequence[str] | None = None) -> None:
    small = f"small inputs (64x64 images, 16 tokens) and {SMALL_LAYERS} transformer layers"
    parser = timing_parser(__doc__, small, 2.0, "least seconds the export runs per model",
                           "least number of timed rounds per model")
    export_arguments(parser)
    parser.add_argument("--name", help="results file name (default exports, exports_small with --small)")
    parser.add_argument("--runs", type=int, default=3, help="interleaved timings per model (the noise across them)")
    parser.add_argument("--off-session", action="store_true",
                        help="also ours for a session with the optimizer off, timed in one (ours_for_off)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    import onnxruntime

    rows = export_rows(parser, args,
                       lambda name, exporter: measure_export(name, args.small, args.repeat, args.seconds, exporter,
                                                             args.runs, saved=args.saved, off_session=args.off_session),
                       lambda row: f"ours off {row['ours_off']:.3f}x, on {row['ours_on']:.3f}x")
    notes = NOTES.format(cores=multiprocessing.cpu_count(), ort=onnxruntime.__version__,
                         size="small" if args.small else "full-size", repeat=args.repeat, seconds=args.seconds,
                         runs=args.runs)
    columns = COLUMNS + (["ours_for_off", "for_off_kept_input"] if args.off_session else [])
    path = write_results(args.name or "exports" + ("_small" if args.small else ""), rows, columns,
                         notes + (OFF_NOTE if args.off_session else ""))
    print(path.read_text())


if __name__ == "__main__":
    main()
