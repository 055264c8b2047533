"""ONNX Conv, ConvTranspose, MaxPool and AveragePool in 1-D, 2-D and 3-D: onnx's own node cases run on the
executor, single-node models against ONNX Runtime, and the errors for what is not supported."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import strategies
from ir.errors import IRError
from ir.frontend import FrontendError, from_onnx, to_onnx
from tests.ir.frontend.onnx_node_cases import node_cases, run_node_case
from tests.ir.frontend.ort_helpers import run_ort

#: onnx cases that import on purpose with an error (what they need is not supported)
REFUSED = {"test_maxpool_with_argmax_2d_precomputed_pads": "'z' .* is not supported",
           "test_maxpool_with_argmax_2d_precomputed_strides": "'z' .* is not supported"}
CASES = [c for op in ("Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool")
         for c in node_cases(op)
         if "large" not in c.name]  # the large 3-D pools take seconds on the loops they are checked against


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.model.graph.node[0].op_type}-{c.name}")
def test_onnx_node_case(case):
    if case.name in REFUSED:
        with pytest.raises(FrontendError, match=REFUSED[case.name]):
            run_node_case(case)
        return
    expected, actual = run_node_case(case)
    for e, a in zip(expected, actual):
        assert e.shape == a.shape and e.dtype == a.dtype
        np.testing.assert_allclose(a, e, rtol=max(case.rtol, 1e-5), atol=max(case.atol, 1e-5))


def _single_node(op_type: str, x_shape, w_shape=None, **attrs) -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    names = ["x"]
    if w_shape is not None:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, w_shape))
        names.append("w")
    node = helper.make_node(op_type, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def _against_ort(model: onnx.ModelProto, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    feed = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in model.graph.input}
    expected = run_ort(model, feed)[0]
    mod, params = from_onnx(model)
    actual = strategies.build(mod, "cpu", params).run(**feed)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("x_shape, w_shape, attrs", [
    ((1, 4, 9), (6, 2, 3), dict(group=2, strides=[2], auto_pad="SAME_UPPER")),
    ((1, 3, 10), (2, 3, 4), dict(strides=[3], auto_pad="SAME_LOWER")),
    ((1, 2, 5, 6, 4), (3, 2, 2, 3, 2), dict(pads=[1, 0, 1, 0, 1, 1], strides=[1, 2, 1])),
    ((1, 2, 5, 5, 5), (2, 1, 3, 3, 3), dict(group=2, auto_pad="VALID", dilations=[1, 2, 1])),
])
def test_conv_against_ort(x_shape, w_shape, attrs):
    _against_ort(_single_node("Conv", x_shape, w_shape, **attrs))


@pytest.mark.parametrize("x_shape, w_shape, attrs", [
    ((1, 2, 5), (2, 3, 3), dict(strides=[2], pads=[1, 0], output_padding=[1])),
    ((1, 4, 3, 4), (4, 1, 3, 2), dict(group=2, strides=[2, 3], dilations=[2, 1], pads=[0, 1, 1, 0])),
    ((1, 2, 3, 4), (2, 2, 3, 3), dict(strides=[2, 2], output_shape=[7, 9])),
    ((1, 2, 3, 4), (2, 2, 3, 3), dict(strides=[2, 2], output_shape=[8, 10])),
    ((1, 2, 3, 4), (2, 2, 2, 3), dict(strides=[2, 2], auto_pad="SAME_UPPER")),
    ((1, 2, 3, 4), (2, 2, 3, 3), dict(strides=[2, 2], output_shape=[6, 8])),  # odd total paddings
    ((1, 2, 3, 4), (2, 2, 3, 3), dict(strides=[2, 2], output_shape=[6, 8], auto_pad="SAME_UPPER")),
    ((1, 2, 3, 4), (2, 2, 3, 3), dict(strides=[2, 2], auto_pad="SAME_LOWER")),
    ((1, 2, 3, 2, 3), (2, 1, 2, 2, 2), dict(strides=[1, 2, 2], pads=[0, 1, 0, 1, 0, 0])),
])
def test_conv_transpose_against_ort(x_shape, w_shape, attrs):
    _against_ort(_single_node("ConvTranspose", x_shape, w_shape, **attrs))


@pytest.mark.parametrize("op_type, x_shape, attrs", [
    ("MaxPool", (1, 2, 9), dict(kernel_shape=[3], strides=[2], pads=[1, 1], ceil_mode=1)),
    ("AveragePool", (1, 2, 9), dict(kernel_shape=[3], strides=[2], auto_pad="SAME_UPPER")),
    ("AveragePool", (1, 2, 8), dict(kernel_shape=[3], strides=[2], pads=[1, 1], count_include_pad=1)),
    ("MaxPool", (1, 2, 5, 4, 6), dict(kernel_shape=[2, 3, 2], strides=[2, 1, 2], auto_pad="SAME_LOWER")),
    ("AveragePool", (1, 2, 5, 4, 6), dict(kernel_shape=[2, 2, 3], pads=[1, 0, 1, 0, 1, 1], ceil_mode=1,
                                          strides=[2, 2, 2])),
])
def test_pool_against_ort(op_type, x_shape, attrs):
    _against_ort(_single_node(op_type, x_shape, **attrs))


@pytest.mark.parametrize("op_type", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("x_shape", [(2, 3, 5), (1, 2, 3, 4), (1, 2, 3, 4, 2)])
def test_global_pool_against_ort(op_type, x_shape):
    _against_ort(_single_node(op_type, x_shape))


@pytest.mark.parametrize("op_type, x_shape, w_shape, attrs, message", [
    ("Conv", (1, 2, 5), (2, 2, 3), dict(pads=[1, 1, 1, 1]), "pads=.* must have 2 entries"),
    ("Conv", (1, 2, 5, 5), (2, 2, 3, 3), dict(strides=[1, 1, 1]), "strides=.* must have 2 entries"),
    ("Conv", (1, 2, 5), (2, 2, 3), dict(auto_pad="SAME"), "auto_pad='SAME'"),
    ("ConvTranspose", (1, 2, 5, 5), (2, 2, 3, 3), dict(output_shape=[4]), "output_shape"),
    ("ConvTranspose", (1, 2, 5), (2, 2, 3), dict(output_padding=[2], strides=[2]), "output_padding"),
    ("MaxPool", (1, 2, 5, 5), None, dict(kernel_shape=[2]), "kernel_shape=.* must have 2 entries"),
])
def test_bad_window_attributes_are_named(op_type, x_shape, w_shape, attrs, message):
    with pytest.raises(IRError, match=message):
        from_onnx(_single_node(op_type, x_shape, w_shape, **attrs))


def test_symbolic_batch_3d_chain_against_ort():
    """ConvTranspose (output_shape), MaxPool (SAME_UPPER) and AveragePool over a batch named 'b'."""
    weight = onnx.numpy_helper.from_array(np.random.default_rng(0).standard_normal((2, 3, 3, 3, 3)).astype(np.float32),
                                          "w")
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["t"], strides=[2, 2, 2], output_shape=[6, 8, 8]),
             helper.make_node("MaxPool", ["t"], ["p"], kernel_shape=[2, 2, 2], strides=[2, 2, 2],
                              auto_pad="SAME_UPPER"),
             helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[3, 3, 3], pads=[1] * 6, count_include_pad=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 2, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    mod, params = from_onnx(model)
    assert str(mod["main"].body.checked_type) == "Tensor[(b, 3, 3, 4, 4), float32]"
    exported = to_onnx(mod, params)
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 2, 3, 4, 4)).astype(np.float32)
        expected = run_ort(model, {"x": x})[0]
        np.testing.assert_allclose(strategies.build(mod, "cpu", params).run(x=x), expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(run_ort(exported, {"x": x})[0], expected, rtol=1e-5, atol=1e-5)
