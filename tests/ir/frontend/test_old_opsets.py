"""Models below opset 9 (ONNX's backend test data is mostly opset 6) are upgraded by
`onnx.version_converter` before import: each opset 6/7/8 form below runs like ONNX Runtime runs
the upgraded model, and an op the converter cannot upgrade is named in the error."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import strategies
from ir.frontend import FrontendError, from_onnx
from ir.frontend.onnx_import import upgrade
from tests.ir.frontend.ort_helpers import assert_outputs_close, flat_outputs, run_ort

F = onnx.TensorProto.FLOAT
RNG = np.random.default_rng(0)


def weight(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def model_at(opset: int, nodes, inputs: dict[str, tuple], initializers: dict[str, np.ndarray]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "old", [helper.make_tensor_value_info(n, F, s) for n, s in inputs.items()],
                              [helper.make_tensor_value_info("y", F, None)],
                              [onnx.numpy_helper.from_array(v, n) for n, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=3)


def cnn_opset6() -> onnx.ModelProto:
    """Opset 6 forms: Add with `broadcast`, BatchNormalization with `is_test`, Dropout with
    `is_test`, Gemm with `broadcast`, Reshape with a shape input (opset 5)."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c", "b"], ["cb"], broadcast=1),
        helper.make_node("BatchNormalization", ["cb", "s", "o", "m", "v"], ["bn"], is_test=1, epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("Dropout", ["r"], ["d"], is_test=1, ratio=0.5),
        helper.make_node("MaxPool", ["d"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p", "shape"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1, broadcast=1),
    ]
    inits = {"w": weight(4, 3, 3, 3), "b": weight(4, 1, 1), "s": weight(4), "o": weight(4), "m": weight(4),
             "v": np.abs(weight(4)) + 0.5, "shape": np.array([2, 64], np.int64), "wf": weight(5, 64), "bf": weight(5)}
    return model_at(6, nodes, {"x": [2, 3, 8, 8]}, inits)


def elementwise_opset7() -> onnx.ModelProto:
    """Opset 7: multidirectional broadcasting without attributes, PRelu broadcasting its slope."""
    nodes = [helper.make_node("Mul", ["x", "a"], ["m"]), helper.make_node("Sub", ["m", "x"], ["s"]),
             helper.make_node("PRelu", ["s", "slope"], ["u"]), helper.make_node("Sigmoid", ["u"], ["y"])]
    return model_at(7, nodes, {"x": [2, 3, 4, 4]}, {"a": weight(4), "slope": weight(3, 1, 1)})


def variadic_opset8() -> onnx.ModelProto:
    """Opset 8: Max/Mean/Sum broadcast their inputs, Expand, MaxPool with `storage_order`."""
    nodes = [helper.make_node("Max", ["x", "a"], ["mx"]), helper.make_node("Mean", ["mx", "x", "b"], ["me"]),
             helper.make_node("Expand", ["me", "shape"], ["e"]),
             helper.make_node("MaxPool", ["e"], ["p"], kernel_shape=[2, 2], storage_order=0),
             helper.make_node("Sum", ["p", "p"], ["y"])]
    inits = {"a": weight(3, 1, 1), "b": weight(1, 4), "shape": np.array([2, 3, 4, 4], np.int64)}
    return model_at(8, nodes, {"x": [1, 3, 4, 4]}, inits)


@pytest.mark.parametrize("build", [cnn_opset6, elementwise_opset7, variadic_opset8], ids=lambda f: f.__name__)
def test_old_opset_runs_like_onnxruntime(build):
    model = build()
    mod, params = from_onnx(model)
    func = mod["main"]
    inputs = {p.name_hint: RNG.standard_normal(p.checked_type.concrete_shape).astype(np.float32) for p in func.params}
    expected = run_ort(upgrade(model), inputs)
    got = flat_outputs(strategies.build(mod, "cpu", params).run(**inputs))
    assert_outputs_close(expected, got)


def test_new_enough_model_is_not_copied():
    model = model_at(9, [helper.make_node("Relu", ["x"], ["y"])], {"x": [2]}, {})
    assert upgrade(model) is model


def test_unconvertible_op_is_named():
    """Upsample-1 needs `width_scale`/`height_scale`; the converter refuses it without them."""
    model = model_at(6, [helper.make_node("Relu", ["x"], ["r"]),
                         helper.make_node("Upsample", ["r"], ["y"], scales=[1.0, 1.0, 2.0, 2.0])],
                     {"x": [1, 1, 2, 2]}, {})
    with pytest.raises(FrontendError, match=r"cannot upgrade op\(s\) Upsample from opset 6 to opset 9"):
        from_onnx(model)
