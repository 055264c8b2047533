"""A model ONNX Runtime would refuse is refused at import too, with an error naming the culprit:
values defined twice, cycles, nodes that break their op's schema, tensors whose data does not fit
their dims, and folded constants past the size cap, which fail before anything is allocated."""

from __future__ import annotations

import tracemalloc

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import ir
from ir.frontend import FrontendError, from_onnx
from ir.frontend.import_context import MAX_FOLDED_BYTES
from tests.ir.frontend.test_errors import F, model_of

I64 = onnx.TensorProto.INT64


def ints(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


# -- values defined once ----------------------------------------------------------------------------

def test_two_nodes_defining_one_value():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="first"), helper.make_node("Neg", ["x"], ["y"], name="second")]
    model = model_of(nodes, [("x", F, [2])], [("y", F, [2])])
    with pytest.raises(FrontendError, match=r"'y' is defined twice: by node 'first' \(Relu\) and by node 'second' \(Neg\)"):
        from_onnx(model)


def test_a_node_output_shadowing_a_graph_input():
    model = model_of([helper.make_node("Relu", ["x"], ["x"], name="r")], [("x", F, [2])], [("x", F, [2])])
    with pytest.raises(FrontendError, match=r"'x' is defined twice: by graph input 'x' and by node 'r' \(Relu\)"):
        from_onnx(model)


def test_a_node_output_shadowing_an_initializer():
    nodes = [helper.make_node("Relu", ["x"], ["w"], name="r"), helper.make_node("Add", ["x", "w"], ["y"])]
    model = model_of(nodes, [("x", F, [2])], [("y", F, [2])], [numpy_helper.from_array(np.ones(2, np.float32), "w")])
    with pytest.raises(FrontendError, match=r"'w' is defined twice: by initializer 'w' and by node 'r' \(Relu\)"):
        from_onnx(model)


def test_two_initializers_of_one_name():
    inits = [numpy_helper.from_array(np.full(2, v, np.float32), "w") for v in (1, 2)]
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])], [("x", F, [2])], [("y", F, [2])], inits)
    with pytest.raises(FrontendError, match=r"'w' is defined twice: by initializer 'w' and by initializer 'w'"):
        from_onnx(model)


def test_an_initializer_may_give_a_graph_input_its_default():
    init = numpy_helper.from_array(np.ones(2, np.float32), "w")
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])], [("x", F, [2]), ("w", F, [2])], [("y", F, [2])],
                     [init])
    mod, params = from_onnx(model)  # it stays an input (IR version 8), its default in params
    assert [p.name_hint for p in mod["main"].params] == ["x", "w"] and params["w"].tolist() == [1, 1]


def test_a_branch_output_shadowing_an_outer_value():
    then = helper.make_graph([helper.make_node("Neg", ["x"], ["x"], name="inner")], "then", [],
                             [helper.make_tensor_value_info("x", F, [2])])
    other = helper.make_graph([helper.make_node("Relu", ["x"], ["z"])], "else", [],
                              [helper.make_tensor_value_info("z", F, [2])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other, name="if")
    model = model_of([node], [("x", F, [2]), ("c", onnx.TensorProto.BOOL, [1])], [("y", F, [2])])
    with pytest.raises(FrontendError, match=r"'x' is defined twice: by a value of the enclosing graph and by "
                                            r"node 'inner' \(Neg\)"):
        from_onnx(model)


# -- node order and cycles --------------------------------------------------------------------------

def test_nodes_out_of_order_are_sorted():
    nodes = [helper.make_node("Neg", ["h"], ["y"]), helper.make_node("Relu", ["x"], ["h"])]
    mod, _ = from_onnx(model_of(nodes, [("x", F, [2])], [("y", F, [2])]))
    assert [n.op.name for n in ir.post_order(mod["main"].body) if isinstance(n, ir.Call)] == ["nn.relu", "negative"]


def test_a_cycle_names_its_nodes():
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="A"), helper.make_node("Relu", ["a"], ["b"], name="B"),
             helper.make_node("Neg", ["a"], ["y"], name="after")]
    model = model_of(nodes, [("x", F, [2])], [("y", F, [2])])
    with pytest.raises(FrontendError, match=r"cycle: node 'A' \(Add\) uses 'b' from node 'B' \(Relu\), "
                                            r"node 'B' \(Relu\) uses 'a' from node 'A' \(Add\)$"):
        from_onnx(model)


def test_a_node_reading_its_own_output():
    model = model_of([helper.make_node("Add", ["x", "y"], ["y"], name="loop")], [("x", F, [2])], [("y", F, [2])])
    with pytest.raises(FrontendError, match=r"cycle: node 'loop' \(Add\) uses 'y' from node 'loop' \(Add\)"):
        from_onnx(model)


# -- op schemas ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("node, message", [
    (helper.make_node("Relu", ["x", "x"], ["y"], name="n"), r"Relu takes 1 inputs, got 2"),
    (helper.make_node("Add", ["x"], ["y"], name="n"), r"Add takes 2 inputs, got 1"),
    (helper.make_node("Transpose", ["x"], ["y"], perm=[1.0, 0.0], name="n"), r"attribute 'perm' must be of type INTS, got FLOATS"),
    (helper.make_node("Relu", ["x"], ["y"], alpha=1.0, name="n"), r"Relu has no attribute 'alpha'"),
    (helper.make_node("Gelu", ["x"], ["y"], name="n"), r"ONNX op Gelu does not exist in opset 13"),
], ids=["too-many-inputs", "too-few-inputs", "attribute-type", "unknown-attribute", "op-too-new"])
def test_a_node_that_breaks_its_schema(node, message):
    model = model_of([node], [("x", F, [2, 2])], [("y", F, None)])
    with pytest.raises(FrontendError, match=rf"node 'n' \({node.op_type}, opset 13\): {message}"):
        from_onnx(model)


# -- tensor data --------------------------------------------------------------------------------------

def test_initializer_dims_that_its_raw_data_does_not_fill():
    weight = numpy_helper.from_array(np.ones(4, np.float32), "w")
    weight.dims[:] = [100000, 100000]
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])], [("x", F, [4])], [("y", F, None)], [weight])
    with pytest.raises(FrontendError, match=r"initializer 'w' declares dims \[100000, 100000\] \(10000000000 "
                                            r"elements, 40000000000 bytes\) but holds 16 bytes of raw data"):
        from_onnx(model)


def test_initializer_dims_that_its_typed_data_does_not_fill():
    weight = helper.make_tensor("w", F, [2], [1.0, 2.0])
    weight.dims[:] = [3]
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])], [("x", F, [3])], [("y", F, None)], [weight])
    with pytest.raises(FrontendError, match=r"initializer 'w' declares dims \[3\] .* but holds 2 elements"):
        from_onnx(model)


def test_tensor_attribute_dims_that_its_data_does_not_fill():
    value = helper.make_tensor("v", I64, [2], [1, 2])
    value.dims[:] = [2, 3]
    model = model_of([helper.make_node("Constant", [], ["y"], value=value, name="c")], [], [("y", I64, None)])
    with pytest.raises(FrontendError, match=r"node 'c' \(Constant, opset 13\): attribute 'value' declares dims"):
        from_onnx(model)


# -- folded constants are capped ----------------------------------------------------------------------

def constant_of_shape(shape) -> onnx.ModelProto:
    node = helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill")
    return model_of([node], [], [("y", F, None)], [ints("shape", shape)])


@pytest.mark.parametrize("nodes, inits", [
    ([helper.make_node("ConstantOfShape", ["shape"], ["y"], name="n")], [ints("shape", [40000, 40000])]),
    ([helper.make_node("Expand", ["one", "shape"], ["y"], name="n")],
     [numpy_helper.from_array(np.ones(1, np.float32), "one"), ints("shape", [2**20, 2**20])]),
])
def test_a_huge_splat_stays_lazy_fast_and_small(nodes, inits):
    data = model_of(nodes, [], [("y", F, None)], inits).SerializeToString()
    assert len(data) < 200
    tracemalloc.start()
    mod, _ = from_onnx(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    body = mod["main"].body
    assert body.op.name == "broadcast_to" and body.args[0].data.size == 1 and peak < 16 * 2**20


@pytest.mark.parametrize("nodes, inits", [
    ([helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="n")],
     [ints("start", 0), ints("limit", 2**40), ints("delta", 1)]),
    ([helper.make_node("Add", ["column", "row"], ["y"], name="n")],
     [ints("column", np.zeros((40000, 1))), ints("row", np.zeros((1, 40000)))]),
    ([helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="n")],
     [ints("start", 2**40), ints("limit", 0), ints("delta", -3)]),
])
def test_other_huge_folds_fail_before_allocating(nodes, inits):
    model = model_of(nodes, [], [("y", F, None)], inits)
    with pytest.raises(FrontendError, match=rf"node 'n' \({nodes[0].op_type}, opset 13\): folding gives a constant "
                                            rf"of shape \[\d+(, \d+)?\] .* over the {MAX_FOLDED_BYTES}-byte cap"):
        from_onnx(model)


def test_the_cap_is_a_keyword():
    model = model_of([helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="n")], [], [("y", I64, None)],
                     [ints("start", 0), ints("limit", 2048), ints("delta", 1)])
    assert from_onnx(model)[0]["main"].body.data.shape == (2048,)
    with pytest.raises(FrontendError, match=r"\(16384 bytes\), over the 1000-byte cap"):
        from_onnx(model, max_folded_bytes=1000)


def test_a_negative_dim_in_a_folded_shape():
    with pytest.raises(FrontendError, match=r"node 'fill'.*shape \[4, -1\]: dims must be non-negative"):
        from_onnx(constant_of_shape([4, -1]))


def test_a_range_with_zero_delta():
    model = model_of([helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="n")], [], [("y", I64, None)],
                     [ints("start", 0), ints("limit", 4), ints("delta", 0)])
    with pytest.raises(FrontendError, match=r"node 'n' \(Range, opset 13\): .*delta must not be 0, got 0, 4, 0"):
        from_onnx(model)


def test_relayout_of_a_large_weight_is_not_a_fold():
    weight = numpy_helper.from_array(np.ones((64, 32), np.float32), "w")
    model = model_of([helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", F, [1, 64])], [("y", F, None)], [weight])
    mod, _ = from_onnx(model, max_folded_bytes=1024)  # the transposed weight is no larger than the weight
    assert mod["main"].checked_type.ret_type == ir.TensorType((1, 32))
