"""IR benchmark: build, type-check, print, ONNX export and import of ResNet-50 and BERT-base.

    python -m benchmarks.bench_ir            # full sizes
    python -m benchmarks.bench_ir --small    # the test configurations
"""

from __future__ import annotations

import argparse

import ir
from ir.frontend import from_onnx, to_onnx
from ir.visitor import count_nodes, deep_copy

from .report import Stopwatch, write_results

MODELS = ("resnet50", "bert")


def measure(name: str, small: bool) -> dict:
    sw = Stopwatch()
    with sw("build"):
        mod, params = ir.models.get(name, small=small)
    fresh = ir.IRModule({"main": deep_copy(mod["main"])})  # the builder already typed `mod`
    with sw("type_check"):
        ir.infer_type(fresh)
    with sw("print"):
        text = mod.astext()
    with sw("export_onnx"):
        model = to_onnx(mod, params)
    with sw("import_onnx"):
        mod2, _ = from_onnx(model)
    return {
        "model": name + (" (small)" if small else ""),
        "nodes": count_nodes(mod["main"]),
        "parameters": ir.models.count_parameters(mod),
        "text_lines": len(text.splitlines()),
        "onnx_nodes": len(model.graph.node),
        **{f"{k}_s": v for k, v in sw.seconds.items()},
        "reimport_equal_types": str(mod2["main"].checked_type.ret_type) == str(mod["main"].checked_type.ret_type),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args()
    rows = [measure(m, args.small) for m in MODELS]
    columns = ["model", "nodes", "parameters", "build_s", "type_check_s", "print_s", "export_onnx_s",
               "import_onnx_s", "text_lines", "onnx_nodes", "reimport_equal_types"]
    path = write_results("ir_small" if args.small else "ir", rows, columns,
                         "Seconds of wall clock, one run each on the benchmark machine; build includes "
                         "generating seeded random weights.")
    print(path.read_text())


if __name__ == "__main__":
    main()
