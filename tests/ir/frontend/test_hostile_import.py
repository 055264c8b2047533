"""Hostile ONNX models: sizes past int64, non-finite Resize scales, shadowed inputs and splat weights.
Each is imported, or refused with a `FrontendError`/`TypeInferenceError` (CLI exit 2), never an
internal error, a `MemoryError` or an `OverflowError`."""

from __future__ import annotations

from pathlib import Path

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


# -- an initializer that gives a graph input its default value -----------------------------------------

def scaled(ir_version: int = 8, declared=(3,), default=(2.0, 3.0, 4.0)) -> onnx.ModelProto:
    """`y = x * scale + 1` where graph input `scale` has an initializer: its default value."""
    nodes = [helper.make_node("Mul", ["x", "scale"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])]
    model = model_of(nodes, [("x", F, [2, 3]), ("scale", F, declared)], [("y", F, [2, 3])],
                     [floats("scale", default), floats("b", [1, 1, 1])], opset=17)
    model.ir_version = ir_version
    return model


def test_an_input_with_a_default_stays_an_input():
    mod, params = from_onnx(scaled())
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["x", "scale"] and ir.input_defaults(main) == {"scale"}
    assert list(params) == ["scale"] and params["scale"].tolist() == [2, 3, 4]
    exported = ir.frontend.to_onnx(mod, params)
    assert [v.name for v in exported.graph.input] == ["x", "scale"]
    assert "scale" in {t.name for t in exported.graph.initializer}


def test_before_ir_version_4_an_initializer_listed_as_an_input_is_a_weight():
    mod, params = from_onnx(scaled(ir_version=3))
    assert [p.name_hint for p in mod["main"].params] == ["x"] and not params


def test_an_input_without_a_declared_shape_takes_its_defaults():
    model = scaled()
    model.graph.input[1].type.tensor_type.ClearField("shape")
    mod, _ = from_onnx(model)
    assert mod["main"].params[1].type_annotation.shape == (3,)


def test_a_default_that_does_not_fit_its_input_is_refused():
    with pytest.raises(FrontendError, match="graph input 'scale' is declared .* default value .* shape \\[4\\]"):
        from_onnx(scaled(default=(1.0, 2.0, 3.0, 4.0)))


# -- splats stay lazy: a value and a shape -------------------------------------------------------------

def test_vgg19_with_constant_of_shape_weights_imports_under_the_default_cap():
    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_vgg19.onnx"
    mod, params = from_onnx(path)  # its 25088 x 4096 fully connected weight is 411 MB: over the 256 MiB cap
    splats = [n for n in ir.post_order(mod["main"].body) if isinstance(n, ir.Call) and n.op.name == "broadcast_to"]
    assert [sorted(n.attrs.shape) for n in splats] == [[4096, 25088]] and splats[0].args[0].data.size == 1
    exported = ir.frontend.to_onnx(mod, params)
    assert exported.ByteSize() < 2**20 and "Expand" in {n.op_type for n in exported.graph.node}
