"""Rules written as algebra: operators and op namespaces, literals, variadic tuples, attribute copying."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay

from eqsat.egraph.lower import lift, lower
from eqsat.errors import RuleError
from eqsat.extract import GreedyDagExtractor, OpCount
from eqsat.limits import Limits
from eqsat.rules.pattern import MAX_PARTS, PLit, attr, call, choose, const_pat, many, nn, ops, pvars
from eqsat.rules.rule import rule, ruleset
from eqsat.runner import saturate

x, y, a = pvars("x y a")


def _applied(r, body: ir.Expr) -> int:
    """How often rule `r` applied on `body` (two iterations)."""
    low = lower(ir.IRModule.from_expr(body))
    report = saturate(low.egraph, ruleset("one", [r]), Limits(iterations=2))
    return report.applied_per_rule.get(r.name, 0)


def _rewritten(r, body: ir.Expr) -> ir.Expr:
    """The smallest program of `body`'s class once `r` has run to saturation."""
    low = lower(ir.IRModule.from_expr(body))
    saturate(low.egraph, ruleset("one", [r]), Limits(iterations=4))
    view = low.view()
    choice = GreedyDagExtractor().extract(view, view.roots, OpCount())
    return lift(low, view, choice.node_of)["main"].body


def _v(*shape: int, dtype: str = "float32", name: str = "v") -> ir.Expr:
    return relay.var(name, shape=shape, dtype=dtype)


def _c(value, dtype: str = "float32") -> ir.Expr:
    return relay.const(np.asarray(value, dtype))


# -- operators and op namespaces ----------------------------------------------------------------------

def test_operators_build_the_calls_they_name():
    assert x + y == call("add", x, y) and x - y == call("subtract", x, y)
    assert x * y == call("multiply", x, y) and x / y == call("divide", x, y)
    assert -x == call("negative", x) and x @ y == call("nn.matmul", x, y)
    assert 2.0 * x == call("multiply", PLit("", 2.0), x) and 1 - x == call("subtract", PLit("", 1), x)
    assert x * ops.sigmoid(x) == call("multiply", x, call("sigmoid", x))


def test_op_namespaces_mirror_the_registry():
    assert nn.relu(x) == call("nn.relu", x) == ops.nn.relu(x)
    assert ops.transpose(x, axes=[1, 0]) == call("transpose", x, axes=[1, 0])
    assert ops.dyn.reshape(x, y) == call("dyn.reshape", x, y)
    assert "relu" in dir(nn) and "nn" in dir(ops)


@pytest.mark.parametrize("build", [lambda: nn.rleu(x), lambda: ops.nosuch(x), lambda: call("sigmoidd", x),
                                   lambda: nn.sigmoid(x)])  # sigmoid is a top-level op, as in relay
def test_an_unknown_op_is_a_rule_error_where_the_rule_is_written(build):
    with pytest.raises(RuleError, match="unknown op"):
        build()


def test_a_nan_literal_is_refused():
    with pytest.raises(RuleError, match="NaN"):
        x * float("nan")


# -- literals -----------------------------------------------------------------------------------------

TIMES_ONE = rule("times-one", x * 1.0, x)
PLUS_NEGATIVE_ZERO = rule("plus-negative-zero", x + -0.0, x)
PLUS_ZERO = rule("plus-zero", x + 0.0, x)


@pytest.mark.parametrize("one, fires", [(1.0, True), (np.ones((2, 3)), True), (np.ones(3, "int32"), True),
                                        (1.0000001, False), ([1.0, 2.0, 1.0], False), (-1.0, False)])
def test_a_literal_matches_a_constant_every_element_of_which_equals_it(one, fires):
    dtype = "int32" if np.asarray(one).dtype.kind == "i" else "float32"
    assert _applied(TIMES_ONE, relay.multiply(_v(2, 3, dtype=dtype), _c(one, dtype))) == int(fires)


def test_a_float_zero_literal_matches_only_zeros_of_its_sign_and_integer_zeros_either():
    assert _applied(PLUS_NEGATIVE_ZERO, relay.add(_v(3), _c([-0.0, -0.0, -0.0]))) == 1
    assert _applied(PLUS_NEGATIVE_ZERO, relay.add(_v(3), _c([-0.0, 0.0, -0.0]))) == 0
    assert _applied(PLUS_NEGATIVE_ZERO, relay.add(_v(3), _c(0.0))) == 0
    assert _applied(PLUS_ZERO, relay.add(_v(3), _c(-0.0))) == 0
    assert _applied(PLUS_ZERO, relay.add(_v(3), _c(0.0))) == 1
    for literal in (PLUS_ZERO, PLUS_NEGATIVE_ZERO):
        assert _applied(literal, relay.add(_v(3, dtype="int32"), _c(0, "int32"))) == 1


def test_a_named_literal_is_read_by_a_guard():
    r = rule("times-one-no-wider", x * const_pat("c", 1.0), x, when=lambda m: m.const("c").ndim <= m.ndim("x"))
    assert _applied(r, relay.multiply(_v(3), _c([1.0, 1.0, 1.0]))) == 1
    assert _applied(r, relay.multiply(_v(3), _c(np.ones((1, 3))))) == 0
    assert _applied(r, relay.multiply(_v(3), _c([1.0, 1.0, 1.0000001]))) == 0


def test_two_equal_literals_need_not_be_one_constant():
    r = rule("ones", (x * 1.0) * 1.0, x)
    assert _applied(r, relay.multiply(relay.multiply(_v(3), _c(1.0)), _c([1.0, 1.0, 1.0]))) == 1


def test_a_right_side_literal_takes_the_dtype_of_the_class_it_rewrites():
    triple = rule("triple", (x + x) + x, x * 3)
    for dtype in ("float16", "int32"):
        v = _v(3, dtype=dtype)
        out = _rewritten(triple, relay.add(relay.add(v, v), v))
        assert out.op.name == "multiply" and out.args[1].data.dtype == dtype and out.args[1].data.shape == ()


def test_a_right_side_literal_its_dtype_cannot_hold_is_declined():
    half = rule("half", x + x, x * 0.5)   # not an equality: only the declining is under test
    for dtype, applied in (("float32", 1), ("int32", 0)):
        v = _v(3, dtype=dtype)
        assert _applied(half, relay.add(v, v)) == applied


# -- variadic tuples ----------------------------------------------------------------------------------

RELU_OF_CONCAT = rule("relu-of-concat", ops.concatenate(many(nn.relu(a))), nn.relu(ops.concatenate(many(a))))


def _relu_concat(parts: int, axis: int = 1) -> ir.Expr:
    return relay.concatenate([relay.nn.relu(_v(2, 3, name=f"p{i}")) for i in range(parts)], axis=axis)


@pytest.mark.parametrize("parts", [2, 3, 9, MAX_PARTS])
def test_one_variadic_rule_matches_every_tuple_size(parts):
    out = _rewritten(RELU_OF_CONCAT, _relu_concat(parts, axis=0))
    assert out.op.name == "nn.relu" and len(out.args[0].args[0].fields) == parts
    assert out.args[0].attrs.axis == 0  # copied from the matched concatenate


def test_a_variadic_rule_skips_tuples_out_of_its_bounds():
    assert _applied(RELU_OF_CONCAT, _relu_concat(MAX_PARTS + 1)) == 0
    wide = rule("wide", ops.concatenate(many(nn.relu(a), min_parts=3)), nn.relu(ops.concatenate(many(a))))
    assert _applied(wide, _relu_concat(2)) == 0 and _applied(wide, _relu_concat(3)) == 1


def test_a_part_that_does_not_match_refuses_the_tuple():
    body = relay.concatenate([relay.nn.relu(_v(2, 3, name="p0")), relay.sigmoid(_v(2, 3, name="p1"))], axis=1)
    assert _applied(RELU_OF_CONCAT, body) == 0


def test_a_guard_reads_the_parts_by_their_indexed_names():
    same = rule("same-shapes", ops.concatenate(many(nn.relu(a))), nn.relu(ops.concatenate(many(a))),
                when=lambda m: len({m.type(n) for n in m.each("a")}) == 1)
    assert _applied(same, _relu_concat(3)) == 1
    mixed = relay.concatenate([relay.nn.relu(_v(2, 3, name="p0")), relay.nn.relu(_v(2, 4, name="p1"))], axis=1)
    assert _applied(same, mixed) == 0


def test_two_variadic_tuples_in_one_left_side_are_refused():
    with pytest.raises(RuleError, match="one many"):
        rule("two", ops.concatenate(many(a)) + ops.concatenate(many(x)), x)


# -- attribute copying --------------------------------------------------------------------------------

def _leaky_of_transpose() -> ir.Expr:
    return relay.nn.leaky_relu(relay.transpose(-(-_v(2, 3, 4)), (2, 0, 1)), alpha=0.3)


def test_a_template_call_copies_the_attributes_of_the_left_call_of_its_op():
    swap = rule("swap", nn.leaky_relu(ops.transpose(-(-x))), ops.transpose(nn.leaky_relu(x)))
    out = _rewritten(swap, _leaky_of_transpose())
    assert out.op.name == "transpose" and tuple(out.attrs.axes) == (2, 0, 1)
    assert out.args[0].attrs.alpha == pytest.approx(0.3)


def test_a_template_attribute_overrides_the_copied_one():
    swap = rule("swap", nn.leaky_relu(ops.transpose(-(-x))), ops.transpose(nn.leaky_relu(x, alpha=0.5)))
    inner = _rewritten(swap, _leaky_of_transpose()).args[0]
    assert inner.op.name == "nn.leaky_relu" and inner.attrs.alpha == 0.5


def test_with_two_left_calls_of_the_op_nothing_is_copied_unless_named():
    left = ops.transpose(ops.transpose(x, bind_attrs="inner"))
    plain, named = rule("plain", left, ops.transpose(x)), rule("named", left, ops.transpose(x, attrs_from="inner"))
    body = relay.transpose(relay.transpose(_v(3, 3), (1, 0)), (0, 1))   # only the attributes are under test
    assert _rewritten(plain, body).attrs.axes is None
    assert tuple(_rewritten(named, body).attrs.axes) == (1, 0)


# -- a right side's form picked by the match ------------------------------------------------------------

def test_choose_builds_the_form_its_test_picks():
    scaled = rule("scaled", nn.leaky_relu(x, bind_attrs="act") * 1.0,
                  choose(lambda m: m["act"].alpha > 0.2, nn.relu(x), nn.leaky_relu(x, alpha=attr("act", "alpha"))))
    def body(alpha: float) -> ir.Expr:
        return relay.multiply(relay.nn.leaky_relu(_v(3), alpha=alpha), _c(1.0))
    assert _rewritten(scaled, body(0.5)).op.name == "nn.relu"      # not an equality: only the form is under test
    out = _rewritten(scaled, body(0.125))
    assert out.op.name == "nn.leaky_relu" and out.attrs.alpha == 0.125


def test_choose_on_a_left_side_is_refused():
    with pytest.raises(RuleError, match="right side"):
        rule("left", choose(lambda m: True, nn.relu(x), x), x)
