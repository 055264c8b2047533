"""Shapes known only when the model runs: a shape fed as a graph input, a `Shape` of a tensor with
an unknown dimension, a symbolic size used as data (a `Range` limit, a `Slice` end with no static
form). They import as `shape_of` and the `dyn.*` ops, run on the executor at several sizes from
one program, optimize, and export to ONNX with the same results as ONNX Runtime on the original."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import eqsat
import ir
import strategies
from ir.frontend import from_onnx, to_onnx
from strategies.errors import KernelError
from tests.ir.frontend.ort_helpers import assert_outputs_close, flat_outputs, run_ort

F, I64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64


def node(op_type: str, inputs: list[str], output: str, **attrs) -> onnx.NodeProto:
    return helper.make_node(op_type, inputs, [output], name=output, **attrs)


def model(nodes, inputs, consts=None, opset: int = 17, out: int = F) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "run_time_shapes", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info("y", out, None)],
                              [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in (consts or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def ops_of(mod: ir.IRModule) -> set[str]:
    return {n.op.name for n in ir.post_order(mod["main"]) if isinstance(n, ir.Call)}


def check_runs(proto: onnx.ModelProto, feeds: list[dict[str, np.ndarray]]) -> ir.IRModule:
    """Import `proto`; the executor, the optimized program and its ONNX export each give ONNX
    Runtime's outputs on every feed (different sizes, one program)."""
    mod, params = from_onnx(proto)
    executable = strategies.build(mod, "cpu", params)
    optimized = eqsat.optimize(mod, params, target="ort")
    exported = to_onnx(optimized.mod, optimized.params, contrib=True)
    for feed in feeds:
        expected = run_ort(proto, feed)
        assert_outputs_close(expected, flat_outputs(executable.run(**feed)))
        assert_outputs_close(expected, run_ort(exported, feed))
    return mod


def floats(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("target", [[0, -1], [3, 2, -1], [-1], [2, 0, 2, 2]])
def test_reshape_to_a_shape_given_as_input(target):
    proto = model([node("Reshape", ["x", "shape"], "y")], [("x", F, [2, 3, 4]), ("shape", I64, [len(target)])])
    mod = check_runs(proto, [{"x": floats(2, 3, 4), "shape": np.array(target, np.int64)}])
    assert "dyn.reshape" in ops_of(mod)
    assert mod["main"].checked_type.ret_type == ir.TensorType([ir.Any] * len(target))


def test_reshape_with_a_run_time_target_and_allowzero():
    """With allowzero a 0 in the target is a zero-size dimension, not a copy of the input's."""
    proto = model([node("Reshape", ["x", "shape"], "y", allowzero=1)], [("x", F, [0, 3]), ("shape", I64, [2])],
                  opset=14)
    mod = check_runs(proto, [{"x": floats(0, 3), "shape": np.array([3, 0], np.int64)}])
    assert [c.attrs.allowzero for c in ir.post_order(mod["main"]) if isinstance(c, ir.Call)] == [True]


def test_head_split_of_symbolic_dimensions_with_allowzero():
    """The dynamo exporter's `x.view(N, S, heads, -1)`: Reshape(allowzero=1) to [N, S, 2, 4] built from
    Shape; the symbolic entries are the input's own dimensions, copied."""
    nodes = [node("Shape", ["x"], "s"), node("Slice", ["s", "start", "end"], "ns"),
             node("Concat", ["ns", "heads"], "t", axis=0), node("Reshape", ["x", "t"], "y", allowzero=1)]
    proto = model(nodes, [("x", F, ["N", "S", 8])], {"start": [0], "end": [2], "heads": [2, 4]}, opset=18)
    mod = check_runs(proto, [{"x": floats(n, s, 8)} for n, s in ((1, 5), (3, 2))])
    assert "reshape" in ops_of(mod) and "dyn.reshape" not in ops_of(mod)


@pytest.mark.parametrize("target", [[2, 1, 4], [3, 1], [1, 1, 1, 1], [5, 3, 0]])
def test_expand_to_a_shape_given_as_input(target):
    proto = model([node("Expand", ["x", "shape"], "y")], [("x", F, [3, 1]), ("shape", I64, [len(target)])])
    mod = check_runs(proto, [{"x": floats(3, 1), "shape": np.array(target, np.int64)}])
    assert "dyn.expand" in ops_of(mod)


def test_slice_with_bounds_given_as_inputs():
    proto = model([node("Slice", ["x", "starts", "ends", "axes", "steps"], "y")],
                  [("x", F, [5, 6]), ("starts", I64, [2]), ("ends", I64, [2]), ("steps", I64, [2])],
                  {"axes": np.array([1, 0], np.int64)})
    feeds = [{"x": floats(5, 6), "starts": np.array(s, np.int64), "ends": np.array(e, np.int64),
              "steps": np.array(t, np.int64)}
             for s, e, t in [([0, -1], [4, -100], [2, -1]), ([-2, 1], [100, 3], [1, 1]), ([5, 4], [0, 0], [-2, -3])]]
    assert "dyn.strided_slice" in ops_of(check_runs(proto, feeds))


def test_shape_of_a_symbolic_tensor_is_computed_when_the_model_runs():
    proto = model([node("Shape", ["x"], "y")], [("x", F, ["batch", 3])], out=I64)
    mod = check_runs(proto, [{"x": floats(b, 3)} for b in (1, 5)])
    assert ops_of(mod) >= {"shape_of"}
    assert from_onnx(proto, shape={"x": (4, 3)})[0]["main"].body.data.tolist() == [4, 3]  # static: a constant


def test_symbolic_shape_in_run_time_arithmetic():
    nodes = [node("Shape", ["x"], "s"), node("Add", ["s", "offset"], "t"), node("Cast", ["t"], "y", to=F)]
    proto = model(nodes, [("x", F, ["N", 4, 6]), ("offset", I64, [3])])
    check_runs(proto, [{"x": floats(n, 4, 6), "offset": np.array([1, -2, 7], np.int64)} for n in (1, 3)])


def test_range_to_a_symbolic_size():
    """`torch.arange(x.size(0))` added to x: the limit N is read from x's shape when the model runs."""
    nodes = [node("Shape", ["x"], "s"), node("Gather", ["s", "zero"], "n"), node("Range", ["zero", "n", "one"], "r"),
             node("Cast", ["r"], "rf", to=F), node("Unsqueeze", ["rf", "axes"], "ru"), node("Add", ["x", "ru"], "y")]
    proto = model(nodes, [("x", F, ["N", 4, 6])], {"zero": np.int64(0), "one": np.int64(1), "axes": [1, 2]})
    mod = check_runs(proto, [{"x": floats(n, 4, 6)} for n in (1, 4)])
    assert {"arange", "shape_of"} <= ops_of(mod)


def test_slice_of_a_buffer_to_a_symbolic_length():
    """Hugging Face's `position_ids[:, :seq_len]`: a slice end with no static form on a static axis."""
    nodes = [node("Shape", ["x"], "s"), node("Gather", ["s", "one"], "n"), node("Unsqueeze", ["n", "axes0"], "nu"),
             node("Slice", ["buffer", "start", "nu", "axes1"], "ids"), node("Cast", ["ids"], "idf", to=F),
             node("Add", ["x", "idf"], "y")]
    consts = {"one": np.int64(1), "axes0": [0], "start": [0], "axes1": [1], "buffer": np.arange(16)[None, :]}
    proto = model(nodes, [("x", F, ["N", "S"])], consts)
    mod = check_runs(proto, [{"x": floats(n, s)} for n, s in ((1, 3), (4, 16), (2, 1))])
    assert "dyn.strided_slice" in ops_of(mod)


@pytest.mark.parametrize("shape, axis, dynamic", [
    (["N", "S"], 2, False),        # BERT's TorchScript export flattens its [batch, sequence] mask: [-1, 1]
    (["N", "S", 3, 2], -2, False),  # static trailing dimensions: [-1, 6]
    (["N", 2, "S"], 2, True),       # both parts symbolic: the leading product is read when it runs
    (["N", "S", 3], 1, False),      # one leading dimension: copied
])
def test_flatten_with_symbolic_leading_dimensions(shape, axis, dynamic):
    proto = model([node("Flatten", ["x"], "y", axis=axis)], [("x", F, shape)])
    sizes = [{"N": 1, "S": 5}, {"N": 3, "S": 2}]
    mod = check_runs(proto, [{"x": floats(*(d if isinstance(d, int) else n[d] for d in shape))} for n in sizes])
    assert ("dyn.reshape" in ops_of(mod)) == dynamic


@pytest.mark.parametrize("op", ["Min", "Max"])
def test_min_and_max_of_a_symbolic_size_are_computed_when_the_model_runs(op):
    """GPT-Neo's dynamo export slices to `min(S, positions)`: which operand wins depends on S."""
    nodes = [node("Shape", ["x"], "s"), node("Slice", ["s", "one", "two"], "n"), node(op, ["n", "four"], "end"),
             node("Slice", ["x", "zero", "end", "one"], "y")]
    proto = model(nodes, [("x", F, [3, "S"])], {"zero": [0], "one": [1], "two": [2], "four": [4]}, opset=18)
    mod = check_runs(proto, [{"x": floats(3, s)} for s in (2, 6)])
    assert {"shape_of", "minimum" if op == "Min" else "maximum", "dyn.strided_slice"} <= ops_of(mod)


def test_unknown_dimension_is_read_when_the_model_runs():
    """`x.view(x.size(0), -1)` over an input whose first dimension has no name."""
    nodes = [node("Shape", ["x"], "s"), node("Gather", ["s", "zero"], "n"), node("Unsqueeze", ["n", "axes0"], "nu"),
             node("Concat", ["nu", "minus1"], "t", axis=0), node("Reshape", ["x", "t"], "y")]
    proto = model(nodes, [("x", F, [None, 4, 6])], {"zero": np.int64(0), "axes0": [0], "minus1": [-1]})
    mod = check_runs(proto, [{"x": floats(n, 4, 6)} for n in (1, 3)])
    assert {"shape_of", "dyn.reshape"} <= ops_of(mod)


def test_nonzero_positions_have_a_run_time_count():
    """NonZero's count of positions is known only when the model runs: `argwhere`, transposed."""
    proto = model([node("Greater", ["x", "zero"], "mask"), node("NonZero", ["mask"], "nz"),
                   node("ReduceSum", ["nz", "axis"], "y", keepdims=0)],
                  [("x", F, ["N", 4])], {"zero": np.float32(0.5), "axis": [1]}, out=I64)
    mod = check_runs(proto, [{"x": floats(n, 4, seed=n)} for n in (1, 3)] + [{"x": np.zeros((2, 4), np.float32)}])
    assert "argwhere" in ops_of(mod)


def test_nonzero_of_a_constant_folds():
    proto = model([node("NonZero", ["c"], "nz"), node("Cast", ["nz"], "nzf", to=F), node("Add", ["x", "nzf"], "y")],
                  [("x", F, [2, 3])], {"c": np.array([[0, 1, 0], [2, 0, 3]], np.float32)})
    mod = check_runs(proto, [{"x": floats(2, 3)}])
    assert "argwhere" not in ops_of(mod)


def test_constant_of_a_run_time_shape():
    proto = model([node("ConstantOfShape", ["shape"], "y", value=onnx.numpy_helper.from_array(np.array([2.5], np.float32)))],
                  [("shape", I64, [3])])
    mod = check_runs(proto, [{"shape": np.array(s, np.int64)} for s in ([2, 1, 3], [0, 4, 1])])
    assert "dyn.expand" in ops_of(mod)


def test_a_bad_run_time_shape_is_a_clear_error():
    proto = model([node("Reshape", ["x", "shape"], "y")], [("x", F, [2, 3]), ("shape", I64, [2])])
    mod, params = from_onnx(proto)
    executable = strategies.build(mod, "cpu", params)
    with pytest.raises(KernelError, match=r"dyn.reshape: cannot reshape shape \[2, 3\] to \[4, 2\]"):
        executable.run(x=floats(2, 3), shape=np.array([4, 2], np.int64))


@pytest.mark.parametrize("shape_type, message", [((F, [2]), "1-D int32 or int64"), ((I64, [2, 1]), "1-D"),
                                                 ((I64, ["k"]), "static length")])
def test_a_shape_input_of_the_wrong_type_names_the_node(shape_type, message):
    proto = model([node("Expand", ["x", "shape"], "y")], [("x", F, [3, 1]), ("shape", *shape_type)])
    with pytest.raises(ir.IRError, match=rf"node 'y' \(Expand.*{message}"):
        from_onnx(proto)


def test_wrapped_take_over_a_symbolic_axis_exports():
    """ONNX Gather's negative indices count from the end: exported with the axis length read at run time."""
    x = ir.relay.var("x", shape=(ir.SizeVar("n"), 4))
    mod = ir.IRModule.from_expr(ir.relay.take(x, ir.relay.const(np.array([-1, 0], "int64")), axis=0, mode="wrap"))
    exported = to_onnx(mod)
    for n in (1, 5):
        value = floats(n, 4)
        np.testing.assert_array_equal(run_ort(exported, {"x": value})[0], value[[-1, 0]])


@pytest.mark.parametrize("rows", [5, "n"])
def test_clipped_take_of_run_time_indices_reads_the_axis_length_only_when_it_is_symbolic(rows):
    """An embedding lookup clamps its indices to [0, rows - 1]: a constant bound for a static table,
    one computed from the table's Shape when the model runs for a symbolic one."""
    table = ir.relay.var("table", shape=(ir.SizeVar(rows) if isinstance(rows, str) else rows, 3))
    ids = ir.relay.var("ids", shape=(4,), dtype="int64")
    exported = to_onnx(ir.IRModule.from_expr(ir.relay.take(table, ids, axis=0, mode="clip")))
    assert {"Shape", "Sub"} & {n.op_type for n in exported.graph.node} == (set() if rows == 5 else {"Shape", "Sub"})
    value, indices = floats(5, 3), np.array([-2, 0, 4, 9], "int64")
    np.testing.assert_array_equal(run_ort(exported, {"table": value, "ids": indices})[0], value[[0, 0, 4, 4]])


@pytest.mark.parametrize("contrib", [False, True])
def test_dense_over_rows_of_a_symbolic_size_exports(contrib):
    """A dense layer over (n, 3, 5) data with a constant weight is MatMul on the weight transposed at
    export, then Add: no rows flattened for a Gemm and reshaped back at run time. A weight that is
    a graph input is one Gemm over the rows, reshaped back to sizes read at run time."""
    x = ir.relay.var("x", shape=(ir.SizeVar("n"), 3, 5))
    w, b = (ir.relay.const(floats(*shape, seed=1)) for shape in ((4, 5), (4,)))
    fed = ir.relay.var("w", shape=(4, 5))
    constant = to_onnx(ir.IRModule.from_expr(ir.relay.nn.dense_bias_act(x, w, b, activation="relu")), contrib=contrib)
    assert {n.op_type for n in constant.graph.node} == {"MatMul", "Add", "Relu"}
    given = to_onnx(ir.IRModule.from_expr(ir.relay.Function([x, fed], ir.relay.nn.dense_bias_act(
        x, fed, b, activation="relu"))), contrib=contrib)
    assert {n.op_type for n in given.graph.node} >= {"Shape", "Reshape"}
    for n in (1, 4):
        value = floats(n, 3, 5)
        expected = np.maximum(value @ w.data.T + b.data, 0)
        np.testing.assert_allclose(run_ort(constant, {"x": value})[0], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(run_ort(given, {"x": value, "w": w.data})[0], expected, rtol=1e-5, atol=1e-6)

def test_the_length_of_a_window_sliced_off_a_symbolic_axis_is_computed_when_it_is_data():
    """The last 3 positions of a symbolic axis are `min(S, 3)` long (a `MinDim`); used as a `Range`
    limit it is computed at run time as `minimum(S, 3)`, right on both sides of the window's size."""
    proto = model([node("Slice", ["x", "start", "end", "axis"], "window"),
                   node("Shape", ["window"], "shape"),
                   node("Gather", ["shape", "one"], "length", axis=0),
                   node("Range", ["zero", "length", "step"], "positions"),
                   node("Cast", ["positions"], "offsets", to=F),
                   node("Add", ["window", "offsets"], "y")],
                  [("x", F, ["N", "S"])],
                  {"start": np.array([-3], np.int64), "end": np.array([np.iinfo(np.int64).max]),
                   "axis": np.array([1], np.int64), "one": np.array(1, np.int64), "zero": np.array(0, np.int64),
                   "step": np.array(1, np.int64)})
    mod = check_runs(proto, [{"x": floats(2, 2)}, {"x": floats(2, 5, seed=1)}, {"x": floats(1, 3, seed=2)}])
    assert "minimum" in ops_of(mod)
    window = next(n for n in ir.post_order(mod["main"]) if isinstance(n, ir.Call) and n.op.name == "strided_slice")
    assert str(window.checked_type) == "Tensor[(N, min(S, 3)), float32]"
