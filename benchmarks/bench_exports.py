"""Real PyTorch exports in ONNX Runtime: the exported model against ours, each with ONNX Runtime's optimizer off and on.

    python -m benchmarks.bench_exports                  # every model, full size -> results/exports.{json,md}
    python -m benchmarks.bench_exports --small --models resnet18,distilbert --exporters dynamo
    python -m benchmarks.bench_exports --models convnext_tiny --name exports_convnext

Per model of `benchmarks.torch_models` (torchvision's ResNet-18, MobileNet-v3-Large, EfficientNet-B0,
ConvNeXt-T, DenseNet-121 and ShuffleNet-v2, transformers' BERT-base and DistilBERT; random weights) and per exporter of
`torch.onnx.export` (TorchScript and dynamo): imported with `from_onnx`, optimized
with `eqsat.optimize(target="ort")` and exported with `to_onnx(contrib=True)`; four ONNX Runtime CPU
sessions (exported / ours, optimizer off / fully on) take turns in interleaved rounds and the ratios
are medians over rounds of exported-with-optimizer-on time / session time (above 1: faster than
what a user of ONNX Runtime gets from the export alone). Needs torch and torchvision (and
transformers), the `exports` extra.
"""

from __future__ import annotations

import multiprocessing
import sys
from functools import partial
from typing import Any, Sequence

import onnx

import eqsat
from benchmarks.bench_spellings import ort_session, ratio_medians
from benchmarks.bench_strategies import relative_error
from benchmarks.report import Stopwatch, checked_choices, timing_parser, write_results
from benchmarks.torch_models import EXPORTERS, EXPORTS, Unavailable, export, input_feed
from ir.frontend import from_onnx, to_onnx

COLUMNS = ["model", "exporter", "ours_off", "ours_on", "exported_off", "control", "exported_on_ms", "max_rel_error",
           "optimize_s", "onnx_nodes", "ours_nodes"]


def compare_in_ort(original: onnx.ModelProto, ours: onnx.ModelProto, feed: dict, repeat: int,
                   min_seconds: float) -> dict[str, Any]:
    """Interleaved timing of `original` and `ours` with ONNX Runtime's optimizer off and on: ratios
    against the original with it on, and ours' largest relative error against the original. A
    second session of the original with the optimizer on, timed last in each round, is the control:
    its ratio would be 1 on a quiet machine, and its distance from 1 is the row's noise."""
    sessions = {"original_on": ort_session(original, True), "original_off": ort_session(original, False),
                "ours_off": ort_session(ours, False), "ours_on": ort_session(ours, True),
                "control": ort_session(original, True)}
    reference = sessions["original_off"].run(None, feed)
    runs = {key: partial(session.run, None, feed) for key, session in sessions.items()}
    original_on, ratios = ratio_medians(runs, "original_on", repeat, min_seconds)
    return {**ratios, "original_on_ms": original_on * 1e3,
            "max_rel_error": relative_error(tuple(sessions["ours_off"].run(None, feed)), reference)}


def measure_export(name: str, small: bool, repeat: int, min_seconds: float,
                   exporter: str = "torchscript") -> dict[str, Any]:
    original = export(name, small, exporter)
    mod, params = from_onnx(original)
    stopwatch = Stopwatch()
    with stopwatch("optimize"):
        optimized = eqsat.optimize(mod, params, target="ort")
    ours = to_onnx(optimized.mod, optimized.params, contrib=True)
    row = compare_in_ort(original, ours, input_feed(original), repeat, min_seconds)
    return {"model": name, "exporter": exporter, "ours_off": row["ours_off"], "ours_on": row["ours_on"],
            "exported_off": row["original_off"], "control": row["control"], "exported_on_ms": row["original_on_ms"],
            "max_rel_error": row["max_rel_error"], "optimize_s": stopwatch.seconds["optimize"],
            "onnx_nodes": len(original.graph.node), "ours_nodes": len(ours.graph.node)}


NOTES = """\
Wall-clock times on a machine with {cores} cores shared with other work; ONNX Runtime {ort}, CPU
provider, default threads without spinning; {size} inputs. Ratios are medians over interleaved
rounds (at least {repeat}, more until the export has run {seconds:g} s) of exported-with-optimizer-on
time / session time: `ours_off` and `ours_on` our program with ONNX Runtime's optimizer off and on,
`exported_off` the export with it off, `control` a second session of the export with it on (1 on a
quiet machine: its distance from 1 is the row's noise). `max_rel_error`: ours (optimizer off) against the export
(optimizer off), largest difference over the largest magnitude. `onnx_nodes` / `ours_nodes`: nodes
of the export and of ours."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = timing_parser(__doc__, "small inputs (64x64 images, 16 tokens)", 2.0,
                           "least seconds the export runs per model", "least number of timed rounds per model")
    parser.add_argument("--models", default=",".join(EXPORTS), help="comma-separated models")
    parser.add_argument("--exporters", default=",".join(EXPORTERS), help="comma-separated exporters")
    parser.add_argument("--name", help="results file name (default exports, exports_small with --small)")
    args = parser.parse_args(argv)
    names = checked_choices(parser, args, args.models, list(EXPORTS), "models")
    exporters = checked_choices(parser, args, args.exporters, list(EXPORTERS), "exporters")
    import onnxruntime

    rows = []
    for name in names:
        for exporter in exporters:
            try:
                rows.append(measure_export(name, args.small, args.repeat, args.seconds, exporter))
            except Unavailable as err:
                print(f"{name}: skipped ({err})", file=sys.stderr)
                break
            print(f"{name} ({exporter}): ours off {rows[-1]['ours_off']:.3f}x, on {rows[-1]['ours_on']:.3f}x",
                  file=sys.stderr, flush=True)
    notes = NOTES.format(cores=multiprocessing.cpu_count(), ort=onnxruntime.__version__,
                         size="small" if args.small else "full-size", repeat=args.repeat, seconds=args.seconds)
    path = write_results(args.name or "exports" + ("_small" if args.small else ""), rows, COLUMNS, notes)
    print(path.read_text())


if __name__ == "__main__":
    main()
