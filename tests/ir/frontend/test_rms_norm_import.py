"""ONNX RMSNormalization (opset 23) imports as nn.rms_norm over the last axis, else as its formula."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import ir
import strategies
from ir.frontend import from_onnx

X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("axis, scale_shape, fused", [(-1, (4,), True), (1, (3, 4), False), (2, (1, 4), False)])
def test_rms_normalization_matches_onnx_runtime(axis, scale_shape, fused):
    scale = numpy_helper.from_array(np.linspace(0.5, 1.5, int(np.prod(scale_shape)), dtype=np.float32)
                                    .reshape(scale_shape), "scale")
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], axis=axis, epsilon=1e-3)
    graph = helper.make_graph([node], "rms", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, X.shape)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, X.shape)], [scale])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": X})[0]
    mod, params = from_onnx(model)
    ops = {n.op.name for n in ir.visitor.post_order(mod["main"].body) if isinstance(n, ir.Call)}
    assert ("nn.rms_norm" in ops) == fused
    got = np.asarray(strategies.evaluate(mod, {"x": X}, params=params))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
