"""The same result on every machine: default limits stop saturation by counts, so a loaded machine
extracts the program a quiet one does (the time limit is a safety net it does not reach)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import eqsat
import ir
import strategies
from benchmarks.load import cpu_hogs


def _program(model: str, target: str) -> bytes:
    mod, params = ir.models.get(model, small=True)
    res = eqsat.optimize(mod, params, target=target)
    assert res.report.stop_reason is not eqsat.StopReason.TIME_LIMIT
    return ir.frontend.to_onnx(res.mod, res.params, contrib=target == "ort").SerializeToString()


@pytest.mark.parametrize("model, target", [("resnet50", "ort"), ("bert", "ort"), ("inception_v3", "cpu")])
def test_a_cpu_hog_does_not_change_the_program(model, target):
    pytest.importorskip("onnx")
    quiet = _program(model, target)
    with cpu_hogs(2):
        loaded = _program(model, target)
    assert loaded == quiet


def _transposes(pairs: int) -> Any:
    """y = x + x after `pairs` pairs of transposes that cancel, on a 256 x 256 tensor."""
    import onnx
    from onnx import TensorProto, helper
    nodes, last = [], "x"
    for k in range(2 * pairs):
        nodes.append(helper.make_node("Transpose", [last], [f"t{k}"], perm=[1, 0]))
        last = f"t{k}"
    nodes.append(helper.make_node("Add", [last, "x"], ["y"]))
    value = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [256, 256]) for n in ("x", "y")]
    return helper.make_model(helper.make_graph(nodes, "g", value[:1], value[1:]),
                             opset_imports=[onnx.helper.make_opsetid("", 17)])


def test_a_cpu_hog_does_not_change_the_written_onnx_speed_check_included():
    """In a session without ONNX Runtime's optimizer, the input's 40 transposes cost what ours (none)
    does not, far beyond the speed check's noise: the written model is ours on a loaded machine too."""
    pytest.importorskip("onnxruntime")
    model, session = _transposes(20), strategies.Target("ort", optimizer="disabled")
    quiet = eqsat.optimize_onnx(model, target=session).SerializeToString()
    with cpu_hogs(2):
        loaded = eqsat.optimize_onnx(model, target=session).SerializeToString()
    assert loaded == quiet and quiet != model.SerializeToString()


def test_a_cpu_hog_does_not_change_a_close_call():
    """The input timed against itself is the closest call there is: the median ratio's interval
    holds 1 whatever the load, so a program only as fast as the input never is 1% faster with 95%
    confidence, and the input is kept on a quiet and on a loaded machine alike."""
    pytest.importorskip("onnxruntime")
    from eqsat.speed import speed_check
    model = _transposes(0)
    feeds = {"x": np.ones((256, 256), np.float32)}
    quiet = speed_check(model, model, feeds, optimizer="disabled")
    with cpu_hogs(2):
        loaded = speed_check(model, model, feeds, optimizer="disabled")
    assert quiet.kept == loaded.kept == "input"
