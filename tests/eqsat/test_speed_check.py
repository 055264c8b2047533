"""Never slower, checked: an ort program that is not faster than the input gives the input back."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eqsat.cli import main
from eqsat.speed import speed_check

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402


def _model(matmuls: int) -> "onnx.ModelProto":
    """y = x, after `matmuls` chained 256x256 products whose result is multiplied by 0 and added."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [256, 256], np.full(256 * 256, 1e-3, np.float32))
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    nodes, last = [], "x"
    for k in range(matmuls):
        nodes.append(helper.make_node("MatMul", [last, "w"], [f"m{k}"]))
        last = f"m{k}"
    nodes += [helper.make_node("Mul", [last, "zero"], ["z"]), helper.make_node("Add", ["x", "z"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])], [w, zero])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


FEEDS = {"x": np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)}


def test_a_slower_program_gives_the_input_back():
    check = speed_check(_model(1), _model(12), FEEDS, optimizer="disabled")
    assert check.kept == "input" and check.median > 2 and "the input was kept" in check.summary()


def test_a_faster_program_is_kept():
    check = speed_check(_model(12), _model(1), FEEDS, optimizer="disabled")
    assert check.kept == "ours" and check.median < 0.5 and len(check.ratios) == 9


def test_the_cli_reports_the_speed_check_and_can_skip_it(tmp_path, capsys):
    import ir
    mod, params = ir.models.get("resnet50", small=True)
    src = tmp_path / "in.onnx"
    onnx.save(ir.frontend.to_onnx(mod, params), str(src))
    report = tmp_path / "r.json"
    assert main(["optimize", str(src), str(tmp_path / "out.onnx"), "--quiet", "--json", str(report)]) == 0
    assert "speed check under onnxruntime (optimizer all, 1 thread(s)" in capsys.readouterr().out
    check = json.loads(report.read_text())["speed_check"]
    assert check["kept"] in ("ours", "input") and len(check["ratios"]) == 9
    if check["kept"] == "input":
        assert (tmp_path / "out.onnx").read_bytes() == src.read_bytes()
    assert main(["optimize", str(src), str(tmp_path / "out2.onnx"), "--quiet", "--no-speed-check"]) == 0
    assert "speed check" not in capsys.readouterr().out
