"""Hostile ONNX models: sizes past int64, non-finite Resize scales, shadowed inputs and splat weights.
Each is imported, or refused with a `FrontendError`/`TypeInferenceError` (CLI exit 2), never an
internal error, a `MemoryError` or an `OverflowError`."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import ir
from ir.frontend import FrontendError, from_onnx
from tests.ir.frontend.test_errors import F, model_of

I64 = onnx.TensorProto.INT64
HUGE = 2**62


def ints(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def floats(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, np.float32), name)


# -- sizes bounded to int64 ----------------------------------------------------------------------------

def one_node(op: str, inputs: list[str], initializers: list[onnx.TensorProto], x_shape=(2,)) -> onnx.ModelProto:
    given = [("x", F, list(x_shape))] if "x" in inputs else []
    return model_of([helper.make_node(op, inputs, ["y"])], given, [("y", F, None)], initializers, opset=17)


HOSTILE_SIZES = {
    "pad 2^62": one_node("Pad", ["x", "p"], [ints("p", [HUGE, 0])]),
    "pad of a constant 2^62": one_node("Pad", ["c", "p"], [floats("c", [1, 2]), ints("p", [HUGE, 0])]),
    "pads summing past int64": one_node("Pad", ["x", "p"], [ints("p", [HUGE, HUGE])]),
    "reshape of an empty tensor": one_node("Reshape", ["x", "s"], [ints("s", [HUGE, HUGE, -1])], x_shape=(0,)),
    "expand": one_node("Expand", ["x", "s"], [ints("s", [HUGE, HUGE])], x_shape=(1,)),
    "expand of a constant": one_node("Expand", ["c", "s"], [floats("c", [1]), ints("s", [HUGE, HUGE])]),
    "constant of shape": one_node("ConstantOfShape", ["s"], [ints("s", [HUGE, HUGE])]),
    "tile": one_node("Tile", ["x", "s"], [ints("s", [HUGE])]),
    "resize sizes": one_node("Resize", ["x", "", "", "s"], [ints("s", [1, 1, HUGE, 2])], x_shape=(1, 1, 2, 2)),
    "input dims": one_node("Relu", ["x"], [], x_shape=(HUGE, HUGE)),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_SIZES))
def test_sizes_past_int64_are_user_errors(case):
    with pytest.raises(ir.IRError, match="int64 bound|cap on folded constants"):
        from_onnx(HOSTILE_SIZES[case])


def test_a_shape_override_past_int64_is_a_user_error():
    model = one_node("Relu", ["x"], [])
    with pytest.raises(FrontendError, match="graph input 'x'.*int64 bound"):
        from_onnx(model, shape={"x": (2**64,)})


def test_the_largest_int64_dimension_of_a_byte_tensor_still_imports():
    model = model_of([helper.make_node("Not", ["x"], ["y"])], [("x", onnx.TensorProto.BOOL, [2**63 - 1])],
                     [("y", onnx.TensorProto.BOOL, None)])
    mod, _ = from_onnx(model)
    assert mod["main"].checked_type.ret_type.shape == (2**63 - 1,)


def test_a_dim_value_past_int64_is_read_negative_and_refused():
    model = one_node("Relu", ["x"], [])
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -(2**63)  # what 2^63 decodes to
    with pytest.raises(FrontendError, match="negative dimension"):
        from_onnx(model)


def test_type_num_elements_never_wraps():
    assert ir.TensorType((2**32, 2**32), "float32").num_elements() == 2**64


# -- Resize scales ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("scale", [np.inf, -np.inf, np.nan, -2.0])
@pytest.mark.parametrize("opset", [10, 17])
def test_non_finite_resize_scales_are_user_errors(scale, opset):
    scales = floats("sc", [1, 1, scale, 1])
    inputs = ["x", "sc"] if opset == 10 else ["x", "", "sc"]
    model = model_of([helper.make_node("Resize", inputs, ["y"])], [("x", F, [1, 1, 2, 2])], [("y", F, None)],
                     [scales], opset=opset)
    with pytest.raises(FrontendError, match="scales must be finite"):
        from_onnx(model)


def test_a_resize_scale_overflowing_float32_is_a_user_error(recwarn):
    model = one_node("Resize", ["x", "", "sc"], [floats("sc", [1, 1, 3e38, 1])], x_shape=(1, 1, 2, 2))
    with pytest.raises(FrontendError, match="too large for float32"):
        from_onnx(model)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
