"""Dominator patterns: paths back to one parent, through call arguments, post-dominated by the child."""

from __future__ import annotations

from ir import relay
from ir.dataflow_pattern import (
    K_ELEMWISE,
    DFPatternMatcher,
    dominates,
    is_op,
    wildcard,
)

unary_elemwise = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())
conv = is_op("nn.conv2d")(wildcard(), wildcard())
reduction = is_op("add")(wildcard(), wildcard())
diamond = dominates(conv, unary_elemwise, reduction)
inp, weight = relay.var("input"), relay.var("weight")


def test_classic_diamond():
    c = relay.nn.conv2d(inp, weight)
    assert diamond.match(relay.nn.relu(relay.nn.relu(c)) + relay.nn.leaky_relu(c, alpha=0))


def test_deeper_branch():
    c = relay.nn.conv2d(inp, weight)
    assert diamond.match(relay.tanh(relay.nn.relu(relay.nn.relu(c))) + relay.nn.leaky_relu(c, alpha=0))


def test_single_branch_through_a_shared_path_node():
    c = relay.nn.conv2d(inp, weight)
    r = relay.nn.relu(relay.nn.relu(c))
    assert diamond.match(r + relay.tanh(r))


def test_fuzzy_path_with_a_nested_diamond():
    nested = dominates(conv, unary_elemwise | is_op("add")(wildcard(), wildcard()), reduction)
    c = relay.nn.conv2d(inp, weight)
    r = relay.nn.relu(c)
    out = relay.tanh(r + r) + relay.nn.leaky_relu(c, alpha=0)
    assert nested.match(out)
    assert not diamond.match(out)  # the inner add is not element-wise


def test_two_different_parents_do_not_match():
    c1 = relay.nn.conv2d(relay.var("input1"), relay.var("weight1"))
    c2 = relay.nn.conv2d(relay.var("input2"), relay.var("weight2"))
    assert not diamond.match(relay.nn.relu(c1) + relay.nn.leaky_relu(c2, alpha=0))


def test_a_path_may_not_end_at_a_variable_or_constant():
    c = relay.nn.conv2d(inp, weight)
    assert not diamond.match(relay.nn.relu(inp) + relay.nn.leaky_relu(c, alpha=0))
    plus_const = dominates(conv, unary_elemwise | is_op("add")(wildcard(), wildcard()), reduction)
    assert not plus_const.match((relay.nn.relu(c) + relay.const(1.0)) + relay.nn.leaky_relu(c, alpha=0))


def test_no_parent_at_all():
    r = relay.nn.relu(relay.nn.relu(inp))
    assert not diamond.match(r + relay.tanh(r))


def test_at_most_one_parent():
    p, i, c = conv, is_op("nn.relu")(wildcard()), reduction
    pattern = dominates(p, i, c)
    x, w = relay.var("x"), relay.var("w")
    n6 = relay.nn.conv2d(x, w)
    n8 = relay.nn.conv2d(relay.tanh(n6), w)
    assert not pattern.match(relay.nn.relu(n8) + relay.nn.relu(n6))  # parent at n8 and at n6
    assert not pattern.match(n8 + relay.nn.relu(n6))


def test_paths_go_through_call_arguments_not_the_callee():
    f = relay.var("f")  # a function-valued variable: the callee is not part of any path
    c = relay.nn.conv2d(inp, weight)
    call = relay.Call(f, [relay.nn.relu(c), relay.nn.leaky_relu(c, alpha=0)])
    assert dominates(conv, unary_elemwise, wildcard()(None)).match(call)


def test_the_child_must_post_dominate_the_parent():
    c = relay.nn.conv2d(inp, weight)
    out = relay.nn.relu(c) + relay.nn.leaky_relu(c, alpha=0)
    escaped = relay.Tuple([out, c])  # the conv is also used around the child
    assert diamond.match(out)  # alone, `out` is the whole graph
    assert not DFPatternMatcher(escaped).match(diamond, out)
    assert DFPatternMatcher(relay.Tuple([out])).match(diamond, out)  # only the child uses the region


def test_typed_dominator():
    typed_inp = relay.var("input", relay.TensorType((1, 3, 12, 12), "float32"))
    typed_w = relay.var("weight", relay.TensorType((3, 3, 3, 3), "float32"))
    c = relay.nn.conv2d(typed_inp, typed_w)
    out = relay.nn.relu(relay.nn.relu(c)) + relay.nn.leaky_relu(c, alpha=0)
    path = unary_elemwise.has_dtype("float32")
    assert dominates(conv, path, reduction.has_shape([1, 3, 10, 10])).match(out)
    assert not dominates(conv, path, reduction.has_shape([1, 1, 10, 10])).match(out)
    assert not dominates(conv, unary_elemwise.has_dtype("float16"), reduction).match(out)


def test_path_matches_are_listed_once_each():
    c = relay.nn.conv2d(inp, weight)
    r = relay.nn.relu(c)
    out = relay.tanh(r) + relay.sigmoid(r)  # r is reached along both paths
    matcher = DFPatternMatcher(out)
    assert matcher.match(diamond)
    node_map = matcher.node_map
    assert node_map[conv] == [c]
    assert node_map[unary_elemwise] == [out.args[0], r, out.args[1]]
