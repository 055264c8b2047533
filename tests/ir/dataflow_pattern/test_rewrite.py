"""Rewrite: callbacks at match roots, fixed points, rewrite_once, require_type, and callback errors."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay
from ir.dataflow_pattern import (
    K_ELEMWISE,
    MAX_REWRITE_PASSES,
    DFPatternCallback,
    InvalidPatternError,
    RewriteDivergenceError,
    RewriteError,
    dominates,
    is_constant,
    is_expr,
    is_op,
    is_var,
    rewrite,
    wildcard,
)

x, y, z, w = relay.var("x"), relay.var("y"), relay.var("z"), relay.var("w")
EPS = float(np.float32(1e-5))  # the float32 constant's value, read back as a Python float


class Callback(DFPatternCallback):
    """A callback from a pattern and a function, counting its calls."""

    def __init__(self, pattern, fn, **kwargs):
        super().__init__(**kwargs)
        self.pattern = pattern
        self.fn = fn
        self.calls = 0

    def callback(self, pre, post, node_map):
        self.calls += 1
        return self.fn(pre, post, node_map)


def add_to_sub():
    return Callback(is_op("add")(wildcard(), wildcard()), lambda pre, post, m: post.args[0] - post.args[1])


class BatchnormCallback(DFPatternCallback):
    def __init__(self):
        super().__init__()
        self.x, self.var, self.mean, self.beta, self.gamma = (wildcard() for _ in range(5))
        self.eps = is_constant()
        self.pattern = self.gamma * (self.x - self.mean) / is_op("sqrt")(self.var + self.eps) + self.beta

    def callback(self, pre, post, node_map):
        x, var, mean, beta, gamma, eps = (node_map[p][0] for p in (self.x, self.var, self.mean, self.beta,
                                                                   self.gamma, self.eps))
        return relay.nn.batch_norm(x, gamma, beta, mean, var, epsilon=eps.data.numpy().item())[0]


def bn(data, gamma, beta, mean, var):
    return relay.nn.batch_norm(data, gamma, beta, mean, var, epsilon=EPS)[0]


def test_rewrite_at_the_match_root():
    sub = is_op("subtract")(wildcard(), wildcard())
    assert sub.match(rewrite(add_to_sub(), x + y))
    func = relay.Function([relay.var("i"), relay.var("k")], relay.nn.relu(relay.var("i")))
    assert sub.match(rewrite(add_to_sub(), func(x, w) + y))


def test_no_match_returns_the_input_object():
    expr = relay.nn.relu(x)
    assert rewrite(add_to_sub(), expr) is expr


def test_inline_a_composite_function():
    f = relay.Function([x, y], x + y).with_attr("Composite", "add")
    a, b = relay.var("a"), relay.var("b")
    inline = Callback(wildcard().has_attr({"Composite": "add"})(wildcard(), wildcard()),
                      lambda pre, post, m: post.args[0] + post.args[1])
    out = rewrite(inline, relay.abs(relay.Call(f, [a, b])))
    assert ir.structural_equal(out, relay.abs(a + b))


def test_returning_post_keeps_the_graph():
    y_add = y + y
    n0 = x + y_add
    graph = (x + n0) + n0
    a, b = wildcard(), wildcard()
    p0 = is_op("add")(a, b)
    pattern = is_op("add")(p0, is_op("add")(p0, a))
    keep = Callback(pattern, lambda pre, post, m: post)
    assert ir.structural_equal(rewrite(keep, graph), graph) and keep.calls == 1


def test_fuse_batchnorm_variants():
    x_, var, mean, beta, gamma = (relay.var(n) for n in ("x", "var", "mean", "beta", "gamma"))
    eps = relay.const(1e-5)
    plain = gamma * (x_ - mean) / relay.sqrt(var + eps) + beta
    commuted = beta + gamma * (x_ - mean) / relay.sqrt(var + eps)
    div_of_mul = (gamma * (x_ - mean)) / relay.sqrt(var + eps) + beta
    mul_of_div = gamma * ((x_ - mean) / relay.sqrt(var + eps)) + beta
    expected = bn(x_, gamma, beta, mean, var)
    for graph in (plain, commuted, div_of_mul, mul_of_div):
        assert ir.structural_equal(rewrite(BatchnormCallback(), graph), expected)
    fake = gamma * (x_ - mean) / relay.sqrt(var + eps) - beta
    assert ir.structural_equal(rewrite(BatchnormCallback(), fake), fake)


def test_inner_rewrites_reach_outer_callbacks():
    x_, var, mean, beta, gamma = (relay.var(n) for n in ("x", "var", "mean", "beta", "gamma"))
    eps = relay.const(1e-5)
    inner = gamma * (x_ - mean) / relay.sqrt(var + eps) + beta
    outer = gamma * (inner - mean) / relay.sqrt(var + eps) + beta
    expected = bn(bn(x_, gamma, beta, mean, var), gamma, beta, mean, var)
    assert ir.structural_equal(rewrite(BatchnormCallback(), outer), expected)
    fake_inner = gamma * (x_ - mean) / relay.sqrt(var + eps) - beta
    partial = gamma * (fake_inner - mean) / relay.sqrt(var + eps) + beta
    assert ir.structural_equal(rewrite(BatchnormCallback(), partial), bn(fake_inner, gamma, beta, mean, var))


def test_dominator_regions_rewrite_to_fixed_point():
    inp, weight = wildcard(), wildcard()
    elemwise = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard()) | is_op("add")(wildcard(), wildcard())
    pattern = dominates(is_op("nn.conv2d")(inp, weight), elemwise, is_op("add")(wildcard(), wildcard()))
    collapse = Callback(pattern, lambda pre, post, m: relay.nn.conv2d(m[inp][0], m[weight][0]))

    def classic(data):
        c = relay.nn.conv2d(data, w)
        return relay.nn.relu(relay.nn.relu(c)) + relay.nn.leaky_relu(c, alpha=0)

    def nested(data):
        c = relay.nn.conv2d(data, w)
        r = relay.nn.relu(c)
        return relay.tanh(r + r) + relay.nn.leaky_relu(c, alpha=0)

    out = rewrite(collapse, nested(classic(classic(x))))
    assert ir.structural_equal(out, relay.nn.conv2d(relay.nn.conv2d(relay.nn.conv2d(x, w), w), w))


def test_rewrite_respects_escaping_intermediates():
    conv = relay.nn.conv2d(x, w)
    graph = relay.nn.relu(conv) + conv
    never = Callback(is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard())), lambda *a: x)
    assert rewrite(never, graph) is graph and never.calls == 0


def algebraic_simplify(expr):
    zero = is_expr(relay.const(0)) | is_expr(relay.const(0.0))
    one = is_expr(relay.const(1)) | is_expr(relay.const(1.0))
    keep = wildcard()

    def to(p):
        return lambda pre, post, node_map: node_map[p][0]

    return rewrite([
        Callback(keep + zero, to(keep)), Callback(keep - zero, to(keep)), Callback(keep * one, to(keep)),
        Callback(keep / one, to(keep)), Callback(zero * wildcard(), to(zero)), Callback(zero / wildcard(), to(zero)),
    ], expr)


def test_algebraic_simplification():
    one, zero, onef, zerof = relay.const(1), relay.const(0), relay.const(1.0), relay.const(0.0)
    for expr in (x + zero, x + zerof, zero + x, zerof + x, x - zero, x - zerof, x * one, x * onef, one * x,
                 onef * x, x / one, x / onef):
        assert algebraic_simplify(expr) is x
    assert ir.structural_equal(algebraic_simplify(x * zero), zero)
    assert ir.structural_equal(algebraic_simplify(zerof / x), zerof)
    assert ir.structural_equal(algebraic_simplify((x + zero * y) / one + (y * one) - zero / x), x + y)


def test_callbacks_run_in_order_within_a_round():
    to_tanh = Callback(is_op("nn.relu")(wildcard()), lambda pre, post, m: relay.tanh(post.args[0]))
    to_sigmoid = Callback(is_op("nn.relu")(wildcard()), lambda pre, post, m: relay.sigmoid(post.args[0]))
    assert is_op("tanh")(x).match(rewrite([to_tanh, to_sigmoid], relay.nn.relu(x)))
    assert is_op("sigmoid")(x).match(rewrite([to_sigmoid, to_tanh], relay.nn.relu(x)))


class DropLastConcatArg(DFPatternCallback):
    def __init__(self, rewrite_once):
        super().__init__(rewrite_once=rewrite_once)
        self.pattern = is_op("concatenate")(None)

    def callback(self, pre, post, node_map):
        fields = post.args[0].fields
        return relay.concatenate(fields[:-1], axis=0) if len(fields) > 1 else fields[0]


class ReluAfterSoftmax(DFPatternCallback):
    def __init__(self):
        super().__init__(rewrite_once=True)
        self.pattern = is_op("nn.softmax")(None)

    def callback(self, pre, post, node_map):
        return relay.nn.relu(post)


def test_fixed_point_versus_rewrite_once():
    concat = relay.concatenate([x, y, z], axis=0)
    assert rewrite(DropLastConcatArg(False), concat) is x
    assert ir.structural_equal(rewrite(DropLastConcatArg(True), concat), relay.concatenate([x, y], axis=0))


def test_rewrite_once_retires_each_callback_separately():
    before = relay.nn.softmax(relay.concatenate([x, y, z], axis=0))
    once = rewrite([ReluAfterSoftmax(), DropLastConcatArg(True)], before)
    assert ir.structural_equal(once, relay.nn.relu(relay.nn.softmax(relay.concatenate([x, y], axis=0))))
    recursive = rewrite([ReluAfterSoftmax(), DropLastConcatArg(False)], before)
    assert ir.structural_equal(recursive, relay.nn.relu(relay.nn.softmax(x)))


def test_a_callback_that_never_converges_is_named():
    toggle = Callback(is_op("add")(wildcard(), is_constant()),  # x + 0 -> x + 1 -> x + 0 -> ...
                      lambda pre, post, m: post.args[0] + relay.const(1.0 - post.args[1].data.item()))
    with pytest.raises(RewriteDivergenceError, match=r"after 100 passes.*callback Callback \(pattern: "
                                                     r"is_op\(\"add\"\)\(wildcard\(\), is_constant\(\)\)\)"):
        rewrite(toggle, x + relay.const(0.0))
    assert toggle.calls == MAX_REWRITE_PASSES


def test_a_callback_doubling_its_matches_stops_before_exhausting_memory():
    double = Callback(is_op("nn.relu")(wildcard()), lambda pre, post, m: relay.nn.relu(post))
    with pytest.raises(RewriteDivergenceError, match=r"grew the graph past 10200 nodes in 14 passes; growing it: "
                                                     r"callback Callback"):
        rewrite(double, relay.nn.relu(x))  # 2 nodes: 2**k relus after k passes


def test_a_callback_growing_its_own_match_stops_at_the_pass_limit():
    grow = Callback(is_op("nn.relu")(is_var()), lambda pre, post, m: relay.nn.relu(post))
    with pytest.raises(RewriteDivergenceError, match="rewrite_once=True"):
        rewrite(grow, relay.nn.relu(x))
    assert grow.calls == MAX_REWRITE_PASSES


def test_require_type_types_the_graph_first():
    a = relay.var("a", shape=(2, 3))
    seen = []

    def record(pre, post, node_map):
        seen.append(pre.checked_type)
        return post.args[0]

    relu_p = is_op("nn.relu")(wildcard())
    rewrite(Callback(relu_p, record, require_type=True), relay.nn.relu(a) + a)
    assert seen == [relay.TensorType((2, 3))]
    untyped = Callback(relu_p, lambda pre, post, m: pre.checked_type and post)
    with pytest.raises(ValueError, match="not inferred yet"):
        rewrite(untyped, relay.nn.relu(relay.var("b", shape=(2,))))


def test_require_type_on_an_untypeable_graph_names_the_callback():
    cb = Callback(is_op("nn.relu")(wildcard()), lambda pre, post, m: post, require_type=True)
    with pytest.raises(RewriteError, match=r"callback Callback .*require_type=True.*%x has no type"):
        rewrite(cb, relay.nn.relu(x))


def test_a_non_expression_result_names_the_callback_and_pattern():
    cb = Callback(is_op("nn.relu")(wildcard()), lambda pre, post, m: 3)
    with pytest.raises(RewriteError, match=r"callback Callback \(pattern: is_op\(\"nn.relu\"\)\(wildcard\(\)\)\) "
                                           r"returned int 3"):
        rewrite(cb, relay.nn.relu(x))


def test_an_ill_typed_result_is_rejected():
    a = ir.infer_type(relay.nn.relu(relay.var("a", shape=(2, 3))))
    wrong_shape = Callback(is_op("nn.relu")(wildcard()), lambda pre, post, m: relay.transpose(post))
    with pytest.raises(RewriteError, match=r"replaced a node of type Tensor\[\(2, 3\), float32\] by one of type "
                                           r"Tensor\[\(3, 2\), float32\]"):
        rewrite(wrong_shape, a)
    bad_add = Callback(is_op("nn.relu")(wildcard()),
                       lambda pre, post, m: post + relay.const(np.ones((4,), "float32")))
    with pytest.raises(RewriteError, match=r"callback Callback .* returned an ill-typed expression: add"):
        rewrite(bad_add, a)


def test_bad_callbacks_are_named():
    class NoPattern(DFPatternCallback):
        pass

    with pytest.raises(InvalidPatternError, match="callback NoPattern has no pattern"):
        rewrite(NoPattern(), x)
    with pytest.raises(InvalidPatternError, match="expects DFPatternCallback objects, got int"):
        rewrite([add_to_sub(), 3], x)
    with pytest.raises(InvalidPatternError, match="a DFPatternCallback or a list"):
        rewrite(lambda pre, post, m: post, x)

    class NoCallback(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = wildcard()

    with pytest.raises(NotImplementedError, match="NoCallback must implement callback"):
        rewrite(NoCallback(), x)


def test_callbacks_without_base_init_use_the_defaults():
    class Minimal(DFPatternCallback):
        def __init__(self):  # the guide's text copy never calls super().__init__()
            self.pattern = is_op("nn.relu")(wildcard())

        def callback(self, pre, post, node_map):
            return post.args[0]

    assert Minimal().rewrite(relay.nn.relu(x)) is x
