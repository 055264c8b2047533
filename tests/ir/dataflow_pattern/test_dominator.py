"""Dominator patterns: paths back to one parent, through call arguments (variables and constants
skipped), post-dominated by the child."""

from __future__ import annotations

import ir
from ir import relay
from ir.dataflow_pattern import (
    K_BROADCAST,
    K_ELEMWISE,
    DFPatternCallback,
    DFPatternMatcher,
    dominates,
    is_op,
    rewrite,
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


def test_a_path_skips_a_constant_input():
    c = relay.nn.conv2d(inp, weight)
    plus_const = dominates(conv, unary_elemwise | is_op("add")(wildcard(), wildcard()), reduction)
    assert plus_const.match((relay.nn.relu(c) + relay.const(1.0)) + relay.nn.leaky_relu(c, alpha=0))


def test_a_path_node_whose_input_is_a_variable_does_not_lead_back_to_the_parent():
    c = relay.nn.conv2d(inp, weight)
    assert not diamond.match(relay.nn.relu(inp) + relay.nn.leaky_relu(c, alpha=0))


bias_path = unary_elemwise | wildcard().has_attr({"TOpPattern": K_BROADCAST})(wildcard(), wildcard())
bias_diamond = dominates(conv, bias_path, reduction)


def test_a_path_through_bias_add_skips_the_bias_variable():
    c = relay.nn.conv2d(inp, weight)
    assert bias_diamond.match(relay.nn.bias_add(relay.nn.relu(c), relay.var("bias")) + relay.nn.leaky_relu(c, alpha=0))


def test_a_path_through_bias_add_from_another_conv_does_not_match():
    c = relay.nn.conv2d(inp, weight)
    other = relay.nn.conv2d(relay.var("input2"), weight)
    out = relay.nn.bias_add(relay.nn.relu(other), relay.var("bias")) + relay.nn.leaky_relu(c, alpha=0)
    assert not bias_diamond.match(out)


def test_a_path_through_multiply_skips_the_constant():
    c = relay.nn.conv2d(inp, weight)
    assert bias_diamond.match(relay.multiply(relay.nn.relu(c), relay.const(2.0)) + relay.nn.leaky_relu(c, alpha=0))


def test_a_path_through_multiply_from_another_conv_does_not_match():
    c = relay.nn.conv2d(inp, weight)
    other = relay.nn.conv2d(relay.var("input2"), weight)
    out = relay.multiply(relay.nn.relu(other), relay.const(2.0)) + relay.nn.leaky_relu(c, alpha=0)
    assert not bias_diamond.match(out)


def test_a_path_node_whose_inputs_are_all_leaves_does_not_match():
    c = relay.nn.conv2d(inp, weight)
    leaves_only = relay.multiply(relay.var("scale"), relay.const(2.0))
    assert not bias_diamond.match(leaves_only + relay.nn.leaky_relu(c, alpha=0))


def test_a_child_whose_inputs_are_all_leaves_does_not_match():
    assert not dominates(conv, wildcard(), reduction).match(inp + relay.const(1.0))


def test_a_variable_that_matches_the_parent_is_the_parent_not_skipped():
    # inputs are tried as the parent first: %x binds the wildcard parent, and relu(%x) leads back to it
    x = relay.var("x")
    out = x + relay.nn.relu(x)
    pattern = dominates(wildcard(), is_op("nn.relu")(wildcard()), reduction)
    matcher = DFPatternMatcher(out)
    assert matcher.match(pattern)
    assert matcher.node_map[pattern.parent] == [x]
    assert matcher.node_map[pattern.path] == [out.args[1]]
    # relu(%x) + %x: relu(%x) is met first and becomes the parent; %x is then only a leaf, skipped
    flipped = relay.nn.relu(x) + x
    matcher = DFPatternMatcher(flipped)
    assert matcher.match(pattern)
    assert matcher.node_map[pattern.parent] == [flipped.args[0]]
    # a parent that is not a wildcard never binds the leaf: then a path from it must reach a real parent
    assert not dominates(is_op("nn.conv2d")(wildcard(), wildcard()), is_op("nn.relu")(wildcard()),
                         reduction).match(out)


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


# -- partition and rewrite: a skipped leaf is an input of the region, not part of it -------------
through_anything = dominates(conv, wildcard(), reduction)  # the path pattern binds no arguments


def region_fn(params, body, name):
    return relay.Function(params, body, attrs={"PartitionedFromPattern": name})


def test_partition_makes_a_skipped_bias_variable_a_parameter():
    bias = relay.var("bias")

    def region(i, w, b):
        c = relay.nn.conv2d(i, w)
        return relay.nn.bias_add(relay.nn.relu(c), b) + relay.nn.leaky_relu(c, alpha=0)

    i, w, b = relay.var("i"), relay.var("w"), relay.var("b")
    f = region_fn([i, w, b], region(i, w, b), "nn.conv2d_nn.relu_nn.bias_add_nn.leaky_relu_add_")
    assert ir.structural_equal(through_anything.partition(region(inp, weight, bias)), f(inp, weight, bias))


def test_partition_makes_a_skipped_constant_a_parameter():
    two = relay.const(2.0)

    def region(i, w, k):
        c = relay.nn.conv2d(i, w)
        return relay.multiply(relay.nn.relu(c), k) + relay.nn.leaky_relu(c, alpha=0)

    i, w, k = relay.var("i"), relay.var("w"), relay.var("k")
    f = region_fn([i, w, k], region(i, w, k), "nn.conv2d_nn.relu_multiply_nn.leaky_relu_add_")
    assert ir.structural_equal(through_anything.partition(region(inp, weight, two)), f(inp, weight, two))


def test_a_skipped_leaf_used_outside_the_region_does_not_block_it():
    bias = relay.var("bias")
    c = relay.nn.conv2d(inp, weight)
    out = relay.nn.bias_add(relay.nn.relu(c), bias) + relay.nn.leaky_relu(c, alpha=0)
    other = relay.nn.bias_add(relay.nn.conv2d(relay.var("input2"), weight), bias)  # shares the bias and weight
    partitioned = through_anything.partition(relay.Tuple([out, other]))
    fused = partitioned.fields[0]
    assert isinstance(fused.op, relay.Function) and list(fused.args) == [inp, weight, bias]
    assert not ir.free_vars(fused.op)
    assert partitioned.fields[1] is other


class _WrapRegion(DFPatternCallback):
    def __init__(self):
        super().__init__(rewrite_once=True)
        self.pattern = through_anything

    def callback(self, pre, post, node_map):
        return relay.tanh(post)


def test_rewrite_fires_on_a_region_with_a_shared_skipped_leaf():
    bias = relay.var("bias")
    c = relay.nn.conv2d(inp, weight)
    out = relay.nn.bias_add(relay.nn.relu(c), bias) + relay.nn.leaky_relu(c, alpha=0)
    result = rewrite(_WrapRegion(), relay.Tuple([out, relay.sigmoid(bias)]))
    assert result.fields[0].op.name == "tanh"
