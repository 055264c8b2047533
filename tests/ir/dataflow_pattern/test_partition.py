"""Partition: groups, their inputs, names and attributes, and which matches are rejected."""

from __future__ import annotations

import re

import pytest

import ir
from ir import relay
from ir.dataflow_pattern import (
    K_ELEMWISE,
    FunctionPattern,
    InvalidPatternError,
    TupleGetItemPattern,
    dominates,
    is_constant,
    is_expr,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    partition,
    wildcard,
)
from ir.visitor import post_order

from .graphs import resnet_like

unary_elemwise = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())
conv_p = is_op("nn.conv2d")(wildcard(), wildcard())


def fn(params, body, name, **attrs):
    return relay.Function(params, body, attrs={"PartitionedFromPattern": name, **attrs})


def conv_bias_relu(x, w, b):
    return relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w), b))


def bn_arith(x, var, mean, beta, gamma, eps, sqrt=relay.sqrt):
    return gamma * (x - mean) / sqrt(var + eps) + beta


def bn_pattern():
    return bn_arith(*(wildcard() for _ in range(5)), is_constant(), sqrt=is_op("sqrt"))


def test_no_match_returns_the_input_object():
    expr = relay.var("x") + relay.var("y")
    assert is_op("nn.relu")(wildcard()).partition(expr) is expr


def test_double_partition_with_composite_labels():
    relu_p = is_op("nn.relu")(is_op("nn.bias_add")(conv_p, wildcard()))
    bias_p = is_op("nn.bias_add")(conv_p, wildcard())
    x, w, b, w2, b2 = (relay.var(n) for n in ("input", "weight", "bias", "weight", "bias"))
    graph = relay.nn.bias_add(relay.nn.conv2d(conv_bias_relu(x, w, b), w2), b2)
    partitioned = graph
    for pat, label in [(relu_p, "conv_bias_relu"), (bias_p, "conv_bias")]:
        partitioned = pat.partition(partitioned, {"Composite": label})
    i, k, c = relay.var("i"), relay.var("k"), relay.var("c")
    f0 = fn([i, k, c], conv_bias_relu(i, k, c), "nn.conv2d_nn.bias_add_nn.relu_", Composite="conv_bias_relu")
    i, k, c = relay.var("i"), relay.var("k"), relay.var("c")
    f1 = fn([i, k, c], relay.nn.bias_add(relay.nn.conv2d(i, k), c), "nn.conv2d_nn.bias_add_", Composite="conv_bias")
    assert ir.structural_equal(partitioned, f1(f0(x, w, b), w2, b2))


def test_parameters_follow_the_pattern_leaves_in_post_order():
    x, var, mean, beta, gamma = (relay.var(n) for n in ("x", "var", "mean", "beta", "gamma"))
    eps = relay.const(1e-5)
    pattern = bn_pattern()
    params = [relay.var(n) for n in ("gammaf", "xf", "meanf", "varf", "betaf")]
    gf, xf, mf, vf, bf = params
    f = fn(params, bn_arith(xf, vf, mf, bf, gf, eps), "subtract_multiply_add_sqrt_divide_add_")
    partitioned = pattern.partition(bn_arith(x, var, mean, beta, gamma, eps))
    assert ir.structural_equal(partitioned, f(gamma, x, mean, var, beta))


def test_parameter_names_count_candidates_root_first():
    x, var, mean, beta, gamma = (relay.var(n) for n in ("x", "var", "mean", "beta", "gamma"))
    eps = relay.const(1e-5)
    pattern = bn_pattern()
    inner = bn_arith(x, var, mean, beta, gamma, eps)
    outer = pattern.partition(bn_arith(inner, var, mean, beta, gamma, eps))
    assert [p.name_hint for p in outer.op.params] == [f"FunctionVar_0_{i}" for i in range(5)]
    assert [p.name_hint for p in outer.args[1].op.params] == [f"FunctionVar_1_{i}" for i in range(5)]


def test_rejected_candidates_still_consume_a_number():
    x, w, w2 = relay.var("x"), relay.var("w"), relay.var("w2")
    first = relay.nn.relu(relay.nn.conv2d(x, w))
    conv_b = relay.nn.conv2d(first, w2)
    out = relay.nn.relu(conv_b) + conv_b  # the upper candidate's conv escapes: rejected as number 0
    partitioned = is_op("nn.relu")(conv_p).partition(out)
    call = next(n for n in post_order(partitioned) if isinstance(n, ir.Call) and isinstance(n.op, ir.Function))
    assert [p.name_hint for p in call.op.params] == ["FunctionVar_1_0", "FunctionVar_1_1"]


def test_search_starts_at_the_root():
    x = relay.var("x")
    r1 = relay.nn.relu(x)
    chain = relay.nn.relu(relay.nn.relu(r1))
    f0 = relay.var("f0")
    expected = fn([f0], relay.nn.relu(relay.nn.relu(f0)), "nn.relu_nn.relu_")(r1)
    assert ir.structural_equal(is_op("nn.relu")(is_op("nn.relu")(wildcard())).partition(chain), expected)


def test_check_can_reject_a_match_that_still_claims_its_nodes():
    x = relay.var("x")
    chain = relay.nn.relu(relay.nn.relu(relay.nn.relu(x)))
    pattern = is_op("nn.relu")(is_op("nn.relu")(wildcard()))
    assert pattern.partition(chain, check=lambda root: root is not chain) is chain


def test_check_sees_the_original_root():
    x, w = relay.var("input"), relay.var("weight")
    pattern = is_op("nn.relu")(is_op("nn.conv2d")(is_var("input"), wildcard()))
    seen = []
    relu = relay.nn.relu(relay.nn.conv2d(x, w))
    pattern.partition(relu, check=lambda pre: seen.append(pre) or True)
    assert seen == [relu]
    nhwc = relay.nn.relu(relay.nn.conv2d(x, w, data_layout="NHWC"))
    assert pattern.partition(nhwc, check=lambda pre: pre.args[0].attrs.data_layout == "NCHW") is nhwc


def test_overlapping_matches_are_rejected():
    bn = relay.nn.batch_norm(*(relay.var(n) for n in ("x", "gamma", "beta", "mean", "var")), epsilon=1e-5)
    add = bn[0] + bn[0]  # two item nodes share one batch_norm
    pattern = TupleGetItemPattern(is_op("nn.batch_norm")(*[wildcard() for _ in range(5)]), 0)
    assert pattern.partition(add) is add


def test_escaping_intermediates_are_rejected():
    x, w = relay.var("input"), relay.var("weight")
    conv = relay.nn.conv2d(x, w)
    out = relay.nn.relu(conv) + conv
    assert is_op("nn.relu")(conv_p).partition(out) is out


def test_an_outside_use_that_flows_back_into_the_root_is_allowed():
    d, k, b = relay.var("d"), relay.var("k"), relay.var("b")
    added = relay.nn.conv2d(d, k) + b
    sig = relay.sigmoid(added)
    out = relay.transpose(added * sig)
    pattern = is_op("multiply")(is_op("add")(conv_p, wildcard()), wildcard())
    params = [relay.var(f"p{i}") for i in range(4)]
    f = fn(params, (relay.nn.conv2d(params[0], params[1]) + params[2]) * params[3], "nn.conv2d_add_multiply_")
    assert ir.structural_equal(pattern.partition(out), relay.transpose(f(d, k, b, sig)))


def test_a_shared_input_is_one_parameter():
    i, w, left, right = (relay.var(n) for n in ("input", "weight", "left", "right"))
    conv = relay.nn.conv2d(i, w)
    graph = relay.multiply(left, conv) + relay.add(conv, right)
    pattern = is_op("add")(is_op("multiply")(wildcard(), wildcard()), is_op("add")(wildcard(), wildcard()))
    lf, mf, rf = relay.var("lf"), relay.var("mf"), relay.var("rf")
    f = fn([lf, mf, rf], (lf * mf) + (mf + rf), "multiply_add_add_")
    assert ir.structural_equal(pattern.partition(graph), f(left, conv, right))


def test_dominator_regions_become_one_function():
    diamond = dominates(conv_p, unary_elemwise, is_op("add")(wildcard(), wildcard()))
    inp, weight = relay.var("input"), relay.var("weight")

    def classic(i, w):
        c = relay.nn.conv2d(i, w)
        return relay.nn.relu(relay.nn.relu(c)) + relay.nn.leaky_relu(c, alpha=0)

    i, w = relay.var("i"), relay.var("w")
    f = fn([i, w], classic(i, w), "nn.conv2d_nn.relu_nn.relu_nn.leaky_relu_add_")
    assert ir.structural_equal(diamond.partition(classic(inp * inp, weight * weight)), f(inp * inp, weight * weight))


def test_stacked_dominator_regions_are_named_by_their_ops():
    path = unary_elemwise | is_op("add")(wildcard(), wildcard())
    diamond = dominates(conv_p, path, is_op("add")(wildcard(), wildcard()))
    w = relay.var("weight")

    def classic(x):
        c = relay.nn.conv2d(x, w)
        return relay.nn.relu(relay.nn.relu(c)) + relay.nn.leaky_relu(c, alpha=0)

    def single_branch(x):
        r = relay.nn.relu(relay.nn.relu(relay.nn.conv2d(x, w)))
        return r + relay.tanh(r)

    def nested(x):
        c = relay.nn.conv2d(x, w)
        r = relay.nn.relu(c)
        return relay.tanh(r + r) + relay.nn.leaky_relu(c, alpha=0)

    partitioned = diamond.partition(nested(single_branch(classic(relay.var("input")))))
    names = [n.op.attrs["PartitionedFromPattern"] for n in post_order(partitioned)
             if isinstance(n, ir.Call) and isinstance(n.op, ir.Function)]
    assert names == ["nn.conv2d_nn.relu_nn.relu_nn.leaky_relu_add_", "nn.conv2d_nn.relu_nn.relu_tanh_add_",
                     "nn.conv2d_nn.relu_add_tanh_nn.leaky_relu_add_"]


def test_fuzzy_tuple_arguments_each_become_a_parameter():
    x, y = relay.var("x"), relay.var("y")
    pattern = is_op("concatenate")(is_tuple(None))
    for args in ([x], [x, y], [x, y, x + y]):
        params = [relay.var(f"p{i}") for i in range(len(args))]
        f = fn(params, relay.concatenate(params, axis=0), "Tuple_concatenate_")
        assert ir.structural_equal(pattern.partition(relay.concatenate(args, axis=0)), f(*args))


def test_function_bodies_are_part_of_the_group():
    x, y, b = (relay.var(n) for n in "xyb")
    pattern = FunctionPattern(None, wildcard() + wildcard())(None) + wildcard()
    xp, yp = relay.var("xp"), relay.var("yp")
    inner = relay.Function([xp, yp], xp + yp)
    params = [relay.var(f"p{i}") for i in range(3)]
    f = fn(params, relay.Call(inner, params[:2]) + params[2], "add_FunctionCall_add_")
    assert ir.structural_equal(pattern.partition(inner(x, y) + b), f(x, y, b))


def test_function_pattern_with_fixed_parameters():
    x, w, b, x1, w1 = (relay.var(n) for n in ("x", "w", "b", "x1", "w1"))
    wc_x1, wc_w1 = wildcard(), wildcard()
    pattern = FunctionPattern([wc_x1, wc_w1], is_op("nn.conv2d")(wc_x1, wc_w1))(wildcard(), wildcard()) + wildcard()
    func = relay.Function([x1, w1], relay.nn.conv2d(x1, w1))
    params = [relay.var(f"p{i}") for i in range(3)]
    f = fn(params, func(params[0], params[1]) + params[2], "nn.conv2d_FunctionCall_add_")
    assert ir.structural_equal(pattern.partition(func(x, w) + b + b), f(x, w, b) + b)


def test_partitioning_with_a_function_pattern_warns_and_returns_the_input():
    f = relay.Function([relay.var("a")], relay.var("a"))
    with pytest.warns(UserWarning, match="FunctionPattern"):
        assert FunctionPattern(None, wildcard()).partition(f) is f


def test_constants_embedded_or_lifted():
    x, w, b = relay.var("x"), relay.var("w"), relay.var("b")
    wc = relay.const(1)
    xf, wf, bf = relay.var("xf"), relay.var("wf"), relay.var("bf")
    embedded = fn([xf, bf], conv_bias_relu(xf, wc, bf), "nn.conv2d_nn.bias_add_nn.relu_")
    lifted = fn([xf, wf, bf], conv_bias_relu(xf, wf, bf), "nn.conv2d_nn.bias_add_nn.relu_")
    relu, reluc = conv_bias_relu(x, w, b), conv_bias_relu(x, wc, b)

    def pattern(weight):
        return is_op("nn.relu")(is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), weight), wildcard()))

    assert ir.structural_equal(pattern(wildcard()).partition(relu), lifted(x, w, b))
    assert ir.structural_equal(pattern(wildcard()).partition(reluc), lifted(x, wc, b))  # wildcard: lifted
    assert ir.structural_equal(pattern(is_var()).partition(relu), lifted(x, w, b))
    assert pattern(is_var()).partition(reluc) is reluc
    assert pattern(is_constant()).partition(relu) is relu
    assert ir.structural_equal(pattern(is_constant()).partition(reluc), embedded(x, b))
    assert ir.structural_equal(pattern(is_expr(wc)).partition(reluc), embedded(x, b))
    for alt in (is_var() | is_constant(), is_constant() | is_var()):
        assert ir.structural_equal(pattern(alt).partition(relu), lifted(x, w, b))
        assert ir.structural_equal(pattern(alt).partition(reluc), embedded(x, b))


def test_tuple_get_item_names_carry_the_index():
    bn_relu = is_op("nn.relu")(is_tuple_get_item(is_op("nn.batch_norm")(*[wildcard() for _ in range(5)]), 0))
    data, out = resnet_like(blocks=0)
    partitioned = bn_relu.partition(out)
    assert partitioned.op.attrs["PartitionedFromPattern"] == "nn.batch_norm_TupleGetItem0_nn.relu_"


def test_partitioned_functions_are_left_alone():
    x = relay.var("x", shape=(2, 2))
    relu_p = is_op("nn.relu")(wildcard())
    once = relu_p.partition(relay.nn.relu(relay.nn.relu(x)))
    assert relu_p.partition(once) is once
    any_call = wildcard()(None)
    wrapped = any_call.partition(relay.nn.relu(x))
    assert any_call.partition(wrapped) is wrapped  # a call of a partitioned function is not a candidate
    composite = relay.Function([x], relay.nn.relu(x)).with_attr("Composite", "relu")
    assert relu_p.partition(composite) is composite


def test_typed_inputs_give_typed_parameters():
    data, out = resnet_like(blocks=1)
    out = ir.infer_type(out)
    conv_bn_relu = is_op("nn.relu")(is_tuple_get_item(
        is_op("nn.batch_norm")(conv_p, wildcard(), wildcard(), wildcard(), wildcard()), 0))
    partitioned = conv_bn_relu.partition(out, {"Composite": "conv_bn_relu"})
    calls = [n for n in post_order(partitioned) if isinstance(n, ir.Call) and isinstance(n.op, ir.Function)]
    assert len(calls) == 2  # the stem and the block's first layer; the second ends without a relu
    assert all(p.type_annotation is not None for c in calls for p in c.op.params)
    assert ir.infer_type(partitioned).checked_type == out.checked_type
    assert re.search(r"fn \(\s*%FunctionVar_\d+_0: Tensor\[\(1, 3, 8, 8\), float32\]", str(partitioned))


def test_untyped_graphs_give_untyped_parameters():
    x, w = relay.var("x", shape=(1, 3, 4, 4)), relay.var("w", shape=(2, 3, 3, 3))  # annotated, not inferred
    partitioned = is_op("nn.relu")(conv_p).partition(relay.nn.relu(relay.nn.conv2d(x, w)))
    assert [p.type_annotation for p in partitioned.op.params] == [None, None]


@pytest.mark.parametrize("kwargs, message", [
    ({"attrs": ["Composite"]}, "attrs must be a dict"),
    ({"check": True}, "check must be a function"),
])
def test_bad_partition_arguments(kwargs, message):
    with pytest.raises(InvalidPatternError, match=message):
        wildcard().partition(relay.var("x"), **kwargs)


def test_partition_needs_a_pattern_and_an_expression():
    with pytest.raises(InvalidPatternError, match="partition expects a pattern"):
        partition("relu", relay.var("x"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="partition expects an IR expression"):
        partition(wildcard(), "x")  # type: ignore[arg-type]
