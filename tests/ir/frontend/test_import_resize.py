"""ONNX Resize (opsets 10, 11, 13, 18, 19) and Upsample (opsets 7, 9): onnx's own node cases run on the
executor, single-node models against ONNX Runtime, and the errors for what is not supported."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ir
import strategies
from ir import relay
from ir.errors import IRError
from ir.frontend import FrontendError, from_onnx, to_onnx
from tests.ir.frontend.onnx_node_cases import node_cases, run_node_case
from tests.ir.frontend.ort_helpers import run_ort

CASES = node_cases("Resize") + node_cases("Upsample")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_onnx_node_case(case):
    frozen = (1, 2, 3) if case.model.graph.node[0].op_type == "Resize" else (1,)
    expected, actual = run_node_case(case, frozen)
    for e, a in zip(expected, actual):
        assert e.shape == a.shape and e.dtype == a.dtype
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


def _model(op_type: str, opset: int, shape, inputs=(), **attrs) -> onnx.ModelProto:
    """A one-node model of data `x` and constant inputs given as (name, array) pairs ('' for none)."""
    initializers = [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in inputs if n]
    node = helper.make_node(op_type, ["x"] + [n for n, _ in inputs], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _against_ort(model: onnx.ModelProto) -> np.ndarray:
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    expected = run_ort(model, {"x": x})[0]
    mod, params = from_onnx(model)
    actual = strategies.build(mod, "cpu", params).run(x=x)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
    return actual


def f32(*values):
    return np.array(values, np.float32)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [(1, 1, 0.6, 0.5), (1, 1, 1.7, 2.5), (1, 1, 0.6, 1.5)])
def test_resize_10(mode, scales):
    _against_ort(_model("Resize", 10, [1, 2, 4, 5], [("scales", f32(*scales))], mode=mode))


@pytest.mark.parametrize("opset, shape, attrs", [
    (11, [1, 2, 4, 5], dict(mode="linear")),
    (11, [1, 2, 4, 5], dict(mode="linear", coordinate_transformation_mode="align_corners")),
    (11, [1, 2, 4, 5], dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel")),
    (11, [1, 2, 4, 5], dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")),
    (11, [1, 2, 4, 5], dict(mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn",
                            nearest_mode="ceil")),
    (13, [1, 2, 4, 5], dict(mode="nearest", nearest_mode="round_prefer_ceil")),
    (19, [1, 2, 4, 5], dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric")),
    (13, [1, 2, 3, 4, 5], dict(mode="linear")),
    (13, [1, 2, 4, 5], dict(mode="cubic")),
    (13, [1, 2, 4, 5], dict(mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1,
                            coordinate_transformation_mode="asymmetric")),
    (18, [1, 2, 9, 8], dict(mode="linear", antialias=1)),
    (18, [1, 2, 9, 8], dict(mode="cubic", antialias=1, exclude_outside=1)),
    (13, [1, 2, 7], dict(mode="nearest")),
])
@pytest.mark.parametrize("scaled", [True, False], ids=["scales", "sizes"])
def test_resize_11_to_19(opset, shape, attrs, scaled):
    if scaled and attrs.get("coordinate_transformation_mode") == "align_corners":
        pytest.skip("with scales that do not divide the length ONNX Runtime divides by the output length, the spec "
                    "by length x scale (onnx's case test_resize_downsample_scales_linear_align_corners checks that)")
    factors = [1.0, 1.0] + [0.6, 1.75, 2.5][:len(shape) - 2]
    if scaled:
        inputs = [("", None), ("scales", f32(*factors))]
    else:
        sizes = np.array([int(s * f) + 1 for s, f in zip(shape, factors)], np.int64)
        sizes[:2] = shape[:2]
        inputs = [("", None), ("scales", f32()) if opset < 13 else ("", None), ("sizes", sizes)]
    if opset < 13 or attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        inputs[0] = ("roi", f32())
    _against_ort(_model("Resize", opset, shape, inputs, **attrs))


def test_tf_crop_and_resize_and_axes():
    roi = ("roi", f32(0.0, 0.0, 0.1, 0.3, 1.0, 1.0, 0.7, 1.2))
    _against_ort(_model("Resize", 13, [1, 2, 4, 5], [roi, ("", None), ("sizes", np.array([1, 2, 3, 4]))],
                        mode="linear", coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=2.0))
    _against_ort(_model("Resize", 18, [1, 2, 4, 5], [("", None), ("scales", f32(2.0, 0.5))], axes=[3, 2],
                        mode="nearest"))
    out = _against_ort(_model("Resize", 18, [1, 2, 4, 5], [("", None), ("", None), ("sizes", np.array([6, 6]))],
                              axes=[2, 3], keep_aspect_ratio_policy="not_larger", mode="linear"))
    assert out.shape == (1, 2, 5, 6)  # the smaller factor, 6 / 5, for both axes


@pytest.mark.parametrize("opset, mode", [(7, "nearest"), (7, "linear"), (9, "nearest"), (9, "linear")])
def test_upsample(opset, mode):
    scales = [1.0, 1.0, 2.0, 1.5]
    if opset == 7:
        model = _model("Upsample", 7, [1, 2, 3, 4], scales=scales, mode=mode)
    else:
        model = _model("Upsample", 9, [1, 2, 3, 4], [("scales", f32(*scales))], mode=mode)
    assert _against_ort(model).shape == (1, 2, 6, 6)


@pytest.mark.parametrize("opset, shape, inputs, attrs, message", [
    (13, [1, 2, 4], [("", None), ("scales", f32(1, 1, 2))], dict(mode="area"), "mode='area' is not supported"),
    (13, [1, 2, 4], [("", None), ("scales", f32(1, 2, 2))], {}, "may only resize the spatial axes"),
    (13, [1, 2, 4], [("", None), ("scales", f32(1, 1, 2)), ("sizes", np.array([1, 2, 8]))], {},
     "exactly one of scales and sizes"),
    (13, [4, 5], [("", None), ("scales", f32(1, 2))], {}, "1-D, 2-D and 3-D images"),
    (13, [1, 2, 4], [("", None), ("scales", f32(1, 1, 2))], dict(coordinate_transformation_mode="tf_crop_and_resize"),
     "needs the roi input"),
    (18, [1, 2, 4], [("", None), ("", None), ("sizes", np.array([1, 2, 8]))], dict(keep_aspect_ratio_policy="fit"),
     "keep_aspect_ratio_policy"),
])
def test_resize_errors(opset, shape, inputs, attrs, message):
    with pytest.raises(IRError, match=message):
        from_onnx(_model("Resize", opset, shape, inputs, **attrs))


def test_scales_computed_at_run_time_are_refused():
    scales = helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])
    node = helper.make_node("Resize", ["x", "", "s"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
                                            scales], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(IRError, match="the scales.* must be a constant"):
        from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))


def test_export_refuses_scales_that_do_not_give_the_size():
    x = relay.var("x", shape=(1, 2, 4, 5))
    mod = ir.IRModule({"main": relay.Function([x], relay.image.resize2d(x, size=(3, 8), scales=(0.6, 1.75)))})
    with pytest.raises(FrontendError, match=r"size \[3, 8\] is not floor\(input length x scale\) = \[2, 8\]"):
        to_onnx(ir.infer_type(mod))


def test_symbolic_batch_round_trip():
    n = relay.SizeVar("n")
    x = relay.var("x", ir.TensorType((n, 2, 4, 5)))
    body = relay.Tuple([relay.image.resize2d(x, size=(7, 3), method="cubic"),
                        relay.image.resize2d(x, size=(2, 8), scales=(0.6, 1.75))])
    mod = ir.infer_type(ir.IRModule({"main": relay.Function([x], body)}))
    model = to_onnx(mod)
    data = np.random.default_rng(0).standard_normal((3, 2, 4, 5)).astype(np.float32)
    for expected, actual in zip(strategies.build(mod, "cpu").run(x=data), run_ort(model, {"x": data})):
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
    reimported, _ = from_onnx(model)
    assert str(reimported["main"].body.checked_type) == str(mod["main"].body.checked_type)
    scaled = _model("Resize", 13, ["batch", 2, 4, 5], [("", None), ("scales", f32(1, 1, 2, 0.5))], mode="linear")
    assert str(from_onnx(scaled)[0]["main"].body.checked_type) == "Tensor[(batch, 2, 8, 2), float32]"


@pytest.mark.parametrize("method", ["linear", "cubic"])
def test_antialias_exports_from_opset_18(method):
    x = relay.var("x", shape=(1, 2, 9, 8))
    mod = ir.infer_type(ir.IRModule({"main": relay.Function([x], relay.image.resize2d(
        x, size=(4, 3), method=method, antialias=True, coordinate_transformation_mode="align_corners"))}))
    with pytest.raises(FrontendError, match="image.resize2d with antialias needs opset 18 or newer"):
        to_onnx(mod, opset=17)
    data = np.random.default_rng(0).standard_normal((1, 2, 9, 8)).astype(np.float32)
    actual = run_ort(to_onnx(mod, opset=18), {"x": data})[0]
    np.testing.assert_allclose(actual, strategies.build(mod, "cpu").run(x=data), rtol=1e-5, atol=1e-6)
