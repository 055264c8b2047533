"""IsNaN and IsInf (with its sign flags) import, and the predicates export and run in ONNX Runtime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

import ir
import strategies
from ir import relay
from ir.frontend import from_onnx, to_onnx

X = np.array([[0.0, -1.0, np.inf], [-np.inf, np.nan, 2.5]], np.float32)


def _model(op: str, **attrs) -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attrs)], "p",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, X.shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, X.shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("op, attrs", [("IsNaN", {}), ("IsInf", {}), ("IsInf", {"detect_negative": 0}),
                                       ("IsInf", {"detect_positive": 0}),
                                       ("IsInf", {"detect_positive": 0, "detect_negative": 0})])
def test_import_matches_onnx_runtime(op, attrs):
    model = _model(op, **attrs)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": X})[0]
    mod, params = from_onnx(model)
    np.testing.assert_array_equal(np.asarray(strategies.evaluate(mod, {"x": X}, params=params)), want)


@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite"])
def test_export_runs_in_onnx_runtime(op):
    x = relay.var("x", shape=X.shape)
    model = to_onnx(ir.IRModule.from_expr(getattr(relay, op)(x)))
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": X})[0]
    np.testing.assert_array_equal(got, getattr(np, op)(X))


def test_integer_input_is_refused():
    with pytest.raises(ir.IRError, match="floating-point"):
        ir.infer_type(relay.isnan(relay.var("i", shape=(2,), dtype="int32")))
