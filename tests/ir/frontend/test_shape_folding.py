"""Shape computations fold at import: whatever ops lie between `Shape` and the op that reads a
shape argument, the imported program computes no integer tensors. With static shapes everything
folds to constants; with a symbolic batch `N` the shape arguments fold to dimension expressions
(`N`, `N*2`, ...) wherever the IR can express them. Each case runs like ONNX Runtime runs it."""

from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import helper

import ir
import strategies
from ir.frontend import FrontendError, from_onnx
from tests.ir.frontend.ort_helpers import assert_outputs_close, flat_outputs, run_ort

F, I64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64


def ints(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def node(op_type: str, inputs: list[str], output: str, **attrs) -> onnx.NodeProto:
    return helper.make_node(op_type, inputs, [output], name=output, **attrs)


def model(nodes, x_shape, consts: dict[str, np.ndarray], opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "shapes", [helper.make_tensor_value_info("x", F, x_shape)],
                              [helper.make_tensor_value_info("y", F, None)],
                              [onnx.numpy_helper.from_array(v, n) for n, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


# Each case: the graph on an input of shape (B, 4, 6), B static or symbolic.
CASES: dict[str, Callable[[], tuple[list[onnx.NodeProto], dict[str, np.ndarray]]]] = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


@case
def flatten_gather_unsqueeze_concat():
    """PyTorch's `x.view(x.size(0), -1)`."""
    return [node("Shape", ["x"], "s"), node("Gather", ["s", "zero"], "n", axis=0),
            node("Unsqueeze", ["n", "axes0"], "nu"), node("Concat", ["nu", "minus1"], "t", axis=0),
            node("Reshape", ["x", "t"], "y")], {"zero": ints(0)[0], "axes0": ints(0), "minus1": ints(-1)}


@case
def slice_arithmetic():
    """`x.view(b, c // 2, 2 * w)` with c and w read by Slice and Gather, through Div and Mul."""
    return [node("Shape", ["x"], "s"), node("Slice", ["s", "zero1", "one1"], "b"),
            node("Gather", ["s", "one1"], "c"), node("Div", ["c", "two1"], "half"),
            node("Gather", ["s", "two1"], "w"), node("Mul", ["w", "two1"], "dw"),
            node("Concat", ["b", "half", "dw"], "t", axis=0), node("Reshape", ["x", "t"], "y")], \
        {"zero1": ints(0), "one1": ints(1), "two1": ints(2)}


@case
def batch_times_channels():
    """`x.reshape(b * c, w)`: a product of a symbolic and a static dimension, through Cast."""
    return [node("Shape", ["x"], "s"), node("Cast", ["s"], "sc", to=I64),
            node("Gather", ["sc", "zero1"], "b"), node("Gather", ["sc", "one1"], "c"),
            node("Mul", ["b", "c"], "bc"), node("Gather", ["sc", "two1"], "w"),
            node("Concat", ["bc", "w"], "t", axis=0), node("Reshape", ["x", "t"], "y")], \
        {"zero1": ints(0), "one1": ints(1), "two1": ints(2)}


@case
def add_sub_slice_bounds():
    """`x[:, :, 1:w - 1]` with the end computed from the shape, and `x[:, 1:]` to the computed end."""
    return [node("Shape", ["x"], "s"), node("Gather", ["s", "two1"], "w"), node("Sub", ["w", "one1"], "end"),
            node("Slice", ["x", "one1", "end", "two1"], "inner"), node("Gather", ["s", "one1"], "c"),
            node("Add", ["c", "zero1"], "cend"), node("Slice", ["inner", "one1", "cend", "one1"], "y")], \
        {"zero1": ints(0), "one1": ints(1), "two1": ints(2)}


@case
def expand_to_computed_shape():
    """A bias expanded to `x`'s shape, read with Shape."""
    return [node("Shape", ["x"], "s"), node("Expand", ["bias", "s"], "e"), node("Add", ["x", "e"], "y")], \
        {"bias": np.arange(6, dtype=np.float32)}


@case
def where_equal_on_shapes():
    """`Where(Equal(target, 0), shape, target)` (ONNX's copy-this-dimension spelled out) with
    `Equal(shape, -1)` deciding nothing for a symbolic size, as a reshape target, then Unsqueeze."""
    return [node("Shape", ["x"], "s"), node("Equal", ["target", "zero"], "copy"),
            node("Where", ["copy", "s", "target"], "t"),
            node("Equal", ["s", "minus1"], "never"), node("Where", ["never", "one", "t"], "u"),
            node("Reshape", ["x", "u"], "r"), node("Unsqueeze", ["r", "axes0"], "y")], \
        {"target": ints(0, 4, -1), "zero": ints(0), "minus1": ints(-1), "one": ints(1), "axes0": ints(0)}


@case
def reduce_prod_flatten():
    """`x.flatten(1)` spelled `Reshape(x, Concat(Shape[:1], ReduceProd(Shape[1:])))`."""
    return [node("Shape", ["x"], "s"), node("Slice", ["s", "zero1", "one1"], "b"),
            node("Slice", ["s", "one1", "big"], "rest"), node("ReduceProd", ["rest"], "prod", keepdims=1),
            node("Concat", ["b", "prod"], "t", axis=0), node("Reshape", ["x", "t"], "y")], \
        {"zero1": ints(0), "one1": ints(1), "big": ints(2**62)}


@case
def max_min_clamp():
    """`x.view(max(b, 1), min(c * w, 24))`: Max and Min decided for every size a batch may take."""
    return [node("Shape", ["x"], "s"), node("Gather", ["s", "zero1"], "b"), node("Max", ["b", "one1"], "bm"),
            node("Slice", ["s", "one1", "three1"], "cw"), node("ReduceProd", ["cw"], "n", keepdims=1),
            node("Min", ["n", "limit"], "nm"), node("Concat", ["bm", "nm"], "t", axis=0), node("Reshape", ["x", "t"], "y")], \
        {"zero1": ints(0), "one1": ints(1), "three1": ints(3), "limit": ints(24)}


@case
def constant_of_shape_and_range():
    """A ConstantOfShape of the shape (the fill broadcast to a symbolic batch), plus a Range up to
    half the last dimension through Cast, Mul and Floor."""
    fill = onnx.numpy_helper.from_array(np.array([0.5], np.float32))
    return [node("Shape", ["x"], "s"), node("ConstantOfShape", ["s"], "c", value=fill),
            node("Gather", ["s", "two"], "w"), node("Cast", ["w"], "wf", to=F), node("Mul", ["wf", "half"], "hf"),
            node("Floor", ["hf"], "fl"), node("Cast", ["fl"], "lim", to=I64),
            node("Range", ["zero", "lim", "one"], "r"),
            node("Cast", ["r"], "rf", to=F), node("Pad", ["rf", "pads"], "rp"), node("Add", ["c", "rp"], "y")], \
        {"two": ints(2)[0], "half": np.array(0.5, np.float32), "zero": ints(0)[0], "one": ints(1)[0],
         "pads": ints(0, 3)}


# cases that need the batch as data (a fill, a range, pads): they fold only with static shapes
STATIC_ONLY: dict[str, Callable] = {}


def static_case(fn):
    STATIC_ONLY[fn.__name__] = fn
    return fn


@static_case
def pads_from_shape():
    """Pad the last axis up to 8: pads = Concat(zeros, 8 - w)."""
    return [node("Shape", ["x"], "s"), node("Gather", ["s", "two1"], "w"), node("Sub", ["eight", "w"], "d"),
            node("Concat", ["zeros", "d"], "p", axis=0), node("Pad", ["x", "p"], "y")], \
        {"two1": ints(2), "eight": ints(8), "zeros": ints(0, 0, 0, 0, 0)}


def integer_calls(mod: ir.IRModule) -> list[str]:
    """Ops of the program that compute integer tensors (a shape computation left to run time)."""
    return [n.op.name for n in ir.post_order(mod["main"].body)
            if isinstance(n, ir.Call) and n.checked_type.dtype.startswith(("int", "uint"))]


def check_runs_like_onnxruntime(proto: onnx.ModelProto, batches: tuple[int, ...]) -> ir.IRModule:
    mod, params = from_onnx(proto)
    assert integer_calls(mod) == []
    executable = strategies.build(mod, "cpu", params)
    for batch in batches:
        x = np.random.default_rng(batch).standard_normal((batch, 4, 6)).astype(np.float32)
        assert_outputs_close(run_ort(proto, {"x": x}), flat_outputs(executable.run(x=x)))
    return mod


@pytest.mark.parametrize("name", sorted(CASES) + sorted(STATIC_ONLY))
def test_static_shapes_fold_to_constants(name):
    nodes, consts = {**CASES, **STATIC_ONLY}[name]()
    mod = check_runs_like_onnxruntime(model(nodes, [3, 4, 6], consts), (3,))
    assert not any(isinstance(n, ir.Call) and n.op.name in ("take", "concatenate") for n in ir.post_order(mod["main"]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_symbolic_batch_folds_to_dimension_expressions(name):
    nodes, consts = CASES[name]()
    mod = check_runs_like_onnxruntime(model(nodes, ["N", 4, 6], consts), (1, 4))
    assert ir.SizeVar("N") in mod["main"].params[0].checked_type.shape


def test_flatten_of_symbolic_batch_is_symbolic():
    nodes, consts = CASES["batch_times_channels"]()
    mod, _ = from_onnx(model(nodes, ["N", 4, 6], consts))
    assert mod["main"].checked_type.ret_type == ir.TensorType((ir.SizeVar("N") * 4, 6))


def test_pads_of_a_static_axis_fold_over_a_symbolic_batch():
    nodes, consts = STATIC_ONLY["pads_from_shape"]()
    check_runs_like_onnxruntime(model(nodes, ["N", 4, 6], consts), (1, 2))


def test_symbolic_pads_are_refused_by_name():
    nodes = [node("Shape", ["x"], "s"), node("Gather", ["s", "zero1"], "n"), node("Concat", ["zeros", "n"], "p", axis=0),
             node("Pad", ["x", "p"], "y")]
    with pytest.raises(FrontendError, match=r"node 'y' \(Pad.*pads \[0, 0, 0, 0, 0, N\] depends on symbolic "
                                            r"dimensions \(N\)"):
        from_onnx(model(nodes, ["N", 4, 6], {"zero1": ints(0), "zeros": ints(0, 0, 0, 0, 0)}))


def test_constant_of_a_derived_symbolic_size_is_refused_by_name():
    nodes = [node("Shape", ["x"], "s"), node("Mul", ["s", "two"], "s2"), node("ConstantOfShape", ["s2"], "c"),
             node("ReduceSum", ["c"], "y", keepdims=0)]
    with pytest.raises(FrontendError, match=r"node 'c' \(ConstantOfShape.*cannot broadcast to dimension N\*2"):
        from_onnx(model(nodes, ["N", 4, 6], {"two": ints(2)}))


def test_symbolic_shape_as_run_time_data_is_refused_by_name():
    nodes = [node("Shape", ["x"], "s"), node("Cast", ["s"], "sf", to=F), node("ReduceSum", ["x"], "r", keepdims=0),
             node("Add", ["r", "sf"], "y")]
    with pytest.raises(FrontendError, match=r"node 'sf' \(Cast.*cannot convert symbolic dimensions \(N\) to float32"):
        from_onnx(model(nodes, ["N", 4, 6], {}))


def test_undecided_comparison_is_refused_by_name():
    nodes, consts = CASES["where_equal_on_shapes"]()
    consts["minus1"] = ints(3)  # N == 3 holds for one batch size only
    with pytest.raises(FrontendError, match=r"node 'never' \(Equal.*whether N equals 3 depends on the sizes"):
        from_onnx(model(nodes, ["N", 4, 6], consts))


def test_symbolic_indices_are_refused_by_name():
    nodes = [node("Shape", ["x"], "s"), node("Gather", ["s", "zero"], "n"), node("Gather", ["table", "n"], "y")]
    with pytest.raises(FrontendError, match=r"node 'y' \(Gather.*the indices \[N\] depends on symbolic"):
        from_onnx(model(nodes, ["N", 4, 6], {"zero": ints(0), "table": np.zeros(10, np.float32)}))


def test_range_of_run_time_bounds_is_an_arange():
    nodes = [node("ReduceMax", ["x"], "m", keepdims=0), node("Cast", ["m"], "limit", to=F),
             node("Range", ["zero", "limit", "half"], "y")]
    graph = helper.make_graph(nodes, "range", [helper.make_tensor_value_info("x", I64, [3])],
                              [helper.make_tensor_value_info("y", F, None)],
                              [onnx.numpy_helper.from_array(np.array(v, np.float32), n)
                               for n, v in (("zero", 0.0), ("half", 0.5))])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod, params = from_onnx(proto)
    assert mod["main"].checked_type.ret_type == ir.TensorType((ir.Any,), "float32")
    x = np.array([2, 5, 3], np.int64)  # the executor plans static output shapes: run the reference interpreter
    assert_outputs_close(run_ort(proto, {"x": x}), flat_outputs(strategies.evaluate(mod, {"x": x}, params)))


def test_static_entries_of_a_run_time_shape_fold():
    """TorchScript's Phi-3 slices q to `cos.shape[-1]` where cos has a length known only at run
    time: the Gather of that static entry is a constant, so the slice is a static one."""
    nodes = [node("Range", ["zero", "n", "one"], "r"), node("Unsqueeze", ["r", "axis1"], "col"),
             node("Cast", ["col"], "colf", to=F), node("Mul", ["colf", "w"], "t"), node("Shape", ["t"], "s"),
             node("Gather", ["s", "last"], "d", axis=0), node("Unsqueeze", ["d", "axis0"], "end"),
             node("Slice", ["x", "start", "end", "axes"], "y")]
    consts = {"zero": np.array(0, np.int64), "one": np.array(1, np.int64), "axis0": ints(0), "axis1": ints(1),
              "w": np.ones((1, 4), np.float32), "last": np.array(-1, np.int64), "start": ints(0), "axes": ints(-1)}
    graph = helper.make_graph(nodes, "static_entry", [helper.make_tensor_value_info("x", F, [2, 6]),
                                                      helper.make_tensor_value_info("n", I64, [])],
                              [helper.make_tensor_value_info("y", F, None)],
                              [onnx.numpy_helper.from_array(v, k) for k, v in consts.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod, params = from_onnx(proto)
    assert mod["main"].checked_type.ret_type == ir.TensorType((2, 4), "float32")
    ops = {c.op.name for c in ir.post_order(mod["main"]) if isinstance(c, ir.Call)}
    assert "shape_of" not in ops and "dyn.strided_slice" not in ops, ops
    inputs = {"x": np.arange(12, dtype=np.float32).reshape(2, 6), "n": np.array(3, np.int64)}
    assert_outputs_close(run_ort(proto, inputs), flat_outputs(strategies.evaluate(mod, inputs, params)))
