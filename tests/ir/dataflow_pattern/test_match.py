"""Matching: a match and a no-match case for each builder, then the semantic corners one by one."""

from __future__ import annotations

import numpy as np
import pytest

from ir import relay
from ir.dataflow_pattern import (
    K_BROADCAST,
    K_ELEMWISE,
    K_OUT_ELEMWISE_FUSABLE,
    DFPatternMatcher,
    FunctionPattern,
    InvalidPatternError,
    dominates,
    find_matches,
    has_attr,
    has_dtype,
    has_shape,
    has_type,
    is_constant,
    is_expr,
    is_if,
    is_let,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    match,
    wildcard,
)

x, y, z = relay.var("x"), relay.var("y"), relay.var("z")


# -- one pair per builder -----------------------------------------------------------------------
def test_op():
    assert is_op("add").match(relay.op.op.get("add"))
    assert not is_op("add").match(relay.op.op.get("subtract"))


def test_call():
    assert is_op("add")(wildcard(), wildcard()).match(x + y)
    assert not is_op("add")(wildcard(), wildcard()).match(x - y)


def test_call_with_any_arguments():
    any_call = wildcard()(None)
    assert any_call.match(relay.nn.relu(x)) and any_call.match(x + y)
    assert not any_call.match(x)


def test_call_arity_must_agree():
    assert is_op("concatenate")(is_tuple([wildcard()])).match(relay.concatenate([x], axis=0))
    assert not wildcard()(wildcard()).match(x + y)
    assert not wildcard()().match(relay.nn.relu(x))


def test_var():
    assert is_var().match(x) and is_var("x").match(x)
    assert not is_var("y").match(x) and not is_var().match(relay.const(1))


def test_constant():
    assert is_constant().match(relay.const(np.ones(3, "float32")))
    assert not is_constant().match(x)


def test_expr_compares_structurally():
    assert is_expr(x + y).match(x + y)  # a different node with the same structure
    assert not is_expr(x + y).match(y + x)
    assert is_expr(relay.const(0)).match(relay.const(0))
    assert not is_expr(relay.const(0)).match(relay.const(0.0))  # int32 vs float32
    assert not is_expr(x).match(relay.var("x"))  # distinct free variables differ


def test_wildcard():
    for expr in (x, relay.const(1), x + y, relay.Tuple([x]), relay.op.op.get("add")):
        assert wildcard().match(expr)


def test_tuple():
    add = relay.op.op.get("add")
    assert is_tuple((is_var("x"), wildcard(), is_op("add"))).match(relay.Tuple((x, y, add)))
    assert not is_tuple((is_var("x"), wildcard(), is_op("add"), wildcard())).match(relay.Tuple((x, y, add)))
    assert is_tuple(None).match(relay.Tuple([])) and not is_tuple(None).match(x)


def test_tuple_get_item():
    tup = relay.Tuple((x, y, z))
    assert is_tuple_get_item(is_tuple(None), 1).match(relay.TupleGetItem(tup, 1))
    assert not is_tuple_get_item(is_tuple(None), 1).match(relay.TupleGetItem(tup, 2))


def test_tuple_get_item_none_index_matches_any_index():
    tup = relay.Tuple((x, y, z))
    any_item = is_tuple_get_item(is_tuple(None))
    assert all(any_item.match(relay.TupleGetItem(tup, i)) for i in range(3))
    assert not any_item.match(tup)


def test_function():
    wc1, wc2 = wildcard(), wildcard()
    assert FunctionPattern([wc1, wc2], wc1 + wc2).match(relay.Function([x, y], x + y))
    assert not FunctionPattern([wc1, wc2], wc1 + wc2).match(relay.Function([x, y], x - y))
    assert not FunctionPattern([wildcard()], wildcard()).match(relay.Function([x, y], x))
    assert FunctionPattern(None, wildcard()).match(relay.Function([x, y], x))


def test_if():
    px, py = is_var("x"), is_var("y")
    pat = is_if(is_op("less")(px, py), px, py)
    assert pat.match(relay.If(x < y, x, y))
    assert not pat.match(relay.If(x > y, x, y))
    assert not pat.match(relay.If(x < y, y, x))


def test_let():
    px, py, lv = is_var("x"), is_var("y"), is_var("let")
    pat = is_let(lv, is_op("less")(px, py), lv)
    let = relay.var("let")
    assert pat.match(relay.Let(let, x < y, let))
    assert not pat.match(relay.Let(let, x > y, let))
    assert not pat.match(relay.Let(let, x < y, let * x))


def test_alternative():
    pat = is_op("nn.relu")(wildcard()) | is_op("tanh")(wildcard())
    assert pat.match(relay.nn.relu(x)) and pat.match(relay.tanh(x))
    assert not pat.match(relay.sigmoid(x))


def test_optional_chains():
    w = relay.var("w")
    conv = relay.nn.conv2d(x, w)
    pattern = is_op("nn.conv2d")(wildcard(), wildcard()).optional(is_op("nn.relu")).optional(is_op("tanh"))
    assert pattern.match(conv) and pattern.match(relay.nn.relu(conv)) and pattern.match(relay.tanh(conv))
    assert pattern.match(relay.tanh(relay.nn.relu(conv)))
    assert not pattern.match(relay.nn.relu(relay.tanh(conv)))


# -- types -----------------------------------------------------------------------------------
def test_type_patterns_on_annotated_variables():
    f32 = relay.var("a", shape=(10, 10), dtype="float32")
    i32 = relay.var("b", shape=(10, 10), dtype="int32")
    assert has_type(relay.TensorType((10, 10), "float32")).match(f32)
    assert not has_type(relay.TensorType((10, 10), "float32")).match(i32)
    assert has_dtype("float32").match(f32) and not has_dtype("float32").match(i32)
    assert has_shape((10, 10)).match(f32) and not has_shape((10, 5)).match(f32)


def test_type_patterns_infer_types_on_demand():
    a = relay.var("a", shape=(2, 3))
    expr = relay.nn.relu(a) + relay.const(np.ones((2, 3), "float32"))
    assert not expr.type_inferred
    assert has_shape((2, 3)).match(expr) and expr.type_inferred
    assert not has_shape((3, 2)).match(relay.nn.relu(a))


def test_symbolic_shapes_match_by_name():
    a = relay.var("a", shape=("n", 4))
    assert has_shape(("n", 4)).match(a)
    assert not has_shape(("m", 4)).match(a) and not has_shape((3, 4)).match(a)


def test_untypeable_expressions_do_not_match_type_patterns():
    untyped = relay.nn.relu(x)  # %x has no type annotation
    assert not has_dtype("float32").match(untyped)
    assert not has_shape(()).match(untyped)
    assert not has_type(relay.TensorType((), "float32")).match(untyped)


def test_type_of_a_tuple():
    a, b = relay.var("a", shape=(2,)), relay.var("b", shape=(3,), dtype="int32")
    tuple_type = relay.TupleType([relay.TensorType((2,)), relay.TensorType((3,), "int32")])
    assert has_type(tuple_type).match(relay.Tuple([a, b]))
    assert not has_dtype("float32").match(relay.Tuple([a, b]))  # not a tensor


# -- attributes by node kind -------------------------------------------------------------------
def test_op_attributes_come_from_the_registry():
    add_broadcast = is_op("add").has_attr({"TOpPattern": K_BROADCAST})(wildcard(), wildcard())
    assert add_broadcast.match(x + y)
    assert not add_broadcast.match(x - y)
    assert not is_op("nn.dense").has_attr({"TOpPattern": K_ELEMWISE})(wildcard(), wildcard()).match(
        relay.nn.dense(x, y))
    elemwise_call = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())
    assert elemwise_call.match(relay.nn.relu(x)) and not elemwise_call.match(relay.nn.softmax(x))
    assert not is_op("add").has_attr({"NoSuchAttr": 1}).match(relay.op.op.get("add"))


def test_call_attributes():
    conv = relay.nn.conv2d(x, y, kernel_size=[3, 3])
    assert is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"data_layout": "NCHW"}).match(conv)
    assert not is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"data_layout": "NHWC"}).match(conv)
    assert has_attr({"kernel_size": [3, 3]}).match(conv) and not has_attr({"kernel_size": [2, 1]}).match(conv)
    assert not has_attr({"RandomAttr": "NCHW"}).match(conv)
    assert has_attr({"dtype": "float32"}).match(relay.cast(x, "float32"))
    assert not has_attr({"TOpPattern": K_OUT_ELEMWISE_FUSABLE}).match(conv)  # an op attribute, not the call's


def test_attributes_of_non_op_calls():
    with_attr = relay.Call(x, [y], attrs={"call_attr": "attr"})
    pattern = wildcard()(wildcard()).has_attr({"call_attr": "attr"})
    assert pattern.match(with_attr)
    for other in (relay.Call(x, [y]), relay.Call(x, [y], attrs={"wrong": "attr"}),
                  relay.Call(x, [y], attrs={"call_attr": "wrong"})):
        assert not pattern.match(other)
    empty = wildcard()(wildcard()).has_attr({})
    assert empty.match(relay.Call(x, [y])) and empty.match(with_attr)


def test_function_attributes():
    f = relay.Function([x, y], x + y)
    assert has_attr({"Composite": "add"}).match(f.with_attr("Composite", "add"))
    assert not has_attr({"Composite": "add"}).match(f.with_attr("Composite", "conv_bias"))
    assert not has_attr({"Composite": "add"}).match(f.with_attr("RandomTest", "add"))


def test_attributes_never_match_other_node_kinds():
    assert not has_attr({}).match(x)
    assert not has_attr({}).match(relay.Tuple([x]))
    add_broadcast = is_op("add").has_attr({"TOpPattern": K_BROADCAST})(wildcard(), wildcard())
    assert not add_broadcast.match(relay.Let(z, x + y, z))


# -- semantic corners ----------------------------------------------------------------------------
def test_a_subpattern_used_twice_binds_one_node():
    wc = wildcard()
    assert (wc + wc).match(x + x)
    assert not (wc + wc).match(x + y)
    assert (wildcard() + wildcard()).match(x + y)
    a = relay.var("a", shape=(2,))
    assert not (wc * wc).match(relay.multiply(relay.nn.relu(a), relay.nn.relu(a)))  # equal, not the same node


def test_a_failed_alternative_forgets_its_bindings():
    a = wildcard()
    left = is_op("add")(a, is_var("nope"))  # binds a := %x, then fails on %y
    right = is_op("add")(wildcard(), a)     # needs a := %y
    assert (left | right).match(x + y)


@pytest.mark.parametrize("op", ["add", "multiply"])
def test_commutative_retry_for_add_and_multiply(op):
    pattern = is_op(op)(is_var("x"), is_var("y"))
    build = relay.op.get(op)
    assert pattern.match(build(x, y)) and pattern.match(build(y, x))


@pytest.mark.parametrize("op", ["subtract", "divide", "maximum", "minimum"])
def test_no_commutative_retry_for_other_ops(op):
    pattern = is_op(op)(is_var("x"), is_var("y"))
    build = relay.op.get(op)
    assert pattern.match(build(x, y)) and not pattern.match(build(y, x))


def test_commutative_retry_needs_the_op_itself():
    wrapped = is_op("add").has_attr({"TOpPattern": K_BROADCAST})(is_var("x"), is_var("y"))
    assert wrapped.match(x + y) and not wrapped.match(y + x)


def test_divide_and_multiply_reassociate():
    a, b, c = wildcard(), wildcard(), wildcard()
    div_of_mul = (a * b) / c
    assert div_of_mul.match((x * y) / z)
    assert div_of_mul.match(x * (y / z)) and div_of_mul.match((y / z) * x)
    assert not div_of_mul.match(x + (y / z))
    mul_of_div = a * (b / c)
    assert mul_of_div.match((x * y) / z)
    assert not mul_of_div.match((x + y) / z)


def test_node_map_lists_bindings():
    a, b = wildcard(), wildcard()
    pattern = is_op("nn.relu")(a + b)
    expr = relay.nn.relu(x + y)
    matcher = DFPatternMatcher(expr)
    assert matcher.match(pattern)
    node_map = matcher.node_map
    assert node_map[a] == [x] and node_map[b] == [y] and node_map[pattern] == [expr]
    assert not matcher.match(pattern, x) and matcher.node_map == {}


def test_find_matches_returns_nodes_in_post_order():
    r1 = relay.nn.relu(x)
    r2 = relay.nn.relu(r1)
    assert find_matches(is_op("nn.relu")(wildcard()), r2 + r1) == [r1, r2]


def test_matching_needs_a_pattern_and_an_expression():
    with pytest.raises(InvalidPatternError, match="match expects a pattern"):
        match(x, x)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs an IR expression"):
        match(wildcard(), 3)  # type: ignore[arg-type]


def test_dominator_needs_the_node_in_the_indexed_graph():
    pattern = dominates(wildcard(), wildcard(), wildcard()(wildcard()))
    with pytest.raises(ValueError, match="not part of the indexed graph"):
        DFPatternMatcher(x).match(pattern, relay.nn.relu(y))
