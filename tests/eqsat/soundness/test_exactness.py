"""Never a wrong program: rules exact under IEEE 754 and every dtype, and a verification that can fail.

Each case here was a wrong program that verification passed, or a check that could not see an
error; each test failed before its fix.
"""

from __future__ import annotations

import numpy as np
import pytest

import eqsat
import ir
from ir import relay

from eqsat.soundness.check import check_rule
from eqsat.rules.library import RULESETS
from eqsat.rules.pattern import call, pvars
from eqsat.rules.rule import rule

F32 = "float32"


def _mod(body: ir.Expr) -> ir.IRModule:
    return ir.IRModule.from_expr(body)


def test_x_plus_positive_zero_is_not_x():
    # -x + 0.0 is +0.0 for x = +0.0, so 1 / (-x + 0) is +inf there; 1 / -x would be -inf
    x = relay.var("x", shape=(8,))
    mod = _mod(relay.divide(relay.const(np.float32(1)), relay.add(relay.negative(x), relay.const(np.float32(0)))))
    res = eqsat.optimize(mod, rules="simplify", verify=5)
    assert "add-zero" not in res.report.applied_per_rule
    assert res.op_counts_after.get("add") == 1


def test_x_plus_negative_zero_and_integer_zero_are_x():
    for dtype, zero in ((F32, np.float32(-0.0)), ("int32", np.int32(0))):
        x = relay.var("x", shape=(4,), dtype=dtype)
        res = eqsat.optimize(_mod(relay.nn.relu(relay.add(x, relay.const(zero)))), rules="simplify", verify=5)
        assert res.report.applied_per_rule.get("add-zero") == 1 and "add" not in res.op_counts_after


def test_integer_matmul_is_never_scaled_through_a_float_alpha():
    a = relay.var("a", shape=(4, 5), dtype="int32")
    b = relay.var("b", shape=(5, 3), dtype="int32")
    mod = _mod(relay.multiply(relay.nn.matmul(a, b), relay.const(np.int32(3))))
    res = eqsat.optimize(mod, target="ort", rules="fusion", verify=5)
    assert "nn.fused_matmul" not in res.op_counts_after and "scaled-matmul" not in res.report.applied_per_rule


def test_verification_sees_integer_overflow_and_signed_zeros():
    a = relay.var("a", shape=(4, 5), dtype="int32")
    b = relay.var("b", shape=(5, 3), dtype="int32")
    wrapped = _mod(relay.multiply(relay.nn.matmul(a, b), relay.const(np.int32(3))))
    saturated = _mod(relay.nn.fused_matmul(a, b, alpha=3.0))
    with pytest.raises(eqsat.VerificationError, match="edge"):
        eqsat.verify(wrapped, None, saturated, None, trials=3)
    x = relay.var("x", shape=(8,))
    one = relay.const(np.float32(1))
    with pytest.raises(eqsat.VerificationError, match="NaN or infinity"):
        eqsat.verify(_mod(one / (relay.negative(x) + relay.const(np.float32(0)))), None,
                     _mod(one / relay.negative(x)), None, trials=2)


def test_tolerance_follows_each_outputs_own_magnitude():
    # outputs of about 1e-9: an absolute tolerance of 1e-5 would pass a 1% error
    x = relay.var("x", shape=(64,))
    tiny = _mod(x * relay.const(np.float32(1e-9)))
    off = _mod(x * relay.const(np.float32(1.01e-9)))
    with pytest.raises(eqsat.VerificationError, match="output 0"):
        eqsat.verify(tiny, None, off, None, trials=1)
    v = eqsat.verify(tiny, None, _mod(x * relay.const(np.float32(1e-9)) * relay.const(np.float32(1.0))), None, 1)
    assert v.passed and v.tolerance < 1e-10


def test_noise_where_the_original_is_exactly_zero_is_never_passed():
    # x*y - x*y is exactly 0 whatever the inputs, so its noise scale is 0; (x*y + x) - x - x*y is 0
    # up to rounding noise: the check cannot tell that from a wrong value, so it fails closed
    x, y = relay.var("x", shape=(64,)), relay.var("y", shape=(64,))
    exact_zero = _mod(x * y - x * y)
    noise = _mod((x * y + x) - x - x * y)
    with pytest.raises(eqsat.VerificationError, match="index"):
        eqsat.verify(exact_zero, None, noise, None, trials=1)


def test_verification_of_huge_declared_shapes_is_skipped_with_the_reason():
    x = relay.var("x", shape=(40000, 40000))
    v = eqsat.verify(_mod(relay.nn.relu(x)), None, _mod(relay.nn.relu(relay.nn.relu(x))), None, trials=1)
    assert v.status == "skipped" and "GiB" in v.summary()


def test_integers_the_original_cannot_take_become_small_ones():
    data = relay.var("data", shape=(5,))
    idx = relay.var("idx", shape=(3,), dtype="int64")
    mod = _mod(relay.take(data, idx, axis=0, mode="fast"))  # full-range indices are out of bounds
    scaled = _mod(relay.multiply(relay.take(data, idx, axis=0, mode="fast"), relay.const(np.float32(1))))
    v = eqsat.verify(mod, None, scaled, None, trials=3)
    assert v.kinds == ("normal", "edge", "nonfinite") and v.passed


X, = pvars("x")


def test_the_rule_checker_catches_an_inexact_rule_on_edge_values():
    # x * 0 -> 0 is wrong for inf and NaN; random normal inputs never show it
    wrong = rule("multiply-zero", call("multiply", X, call("subtract", X, X)), call("subtract", X, X))
    x = relay.var("x", shape=(2, 3))
    with pytest.raises(AssertionError, match="multiply-zero"):
        check_rule(wrong, relay.multiply(x, relay.subtract(x, x)))


@pytest.mark.parametrize("name", ["add-zero", "multiply-one", "double-negation", "scaled-matmul"])
def test_exact_rules_hold_for_integers_over_their_whole_range(name):
    rules = {r.name: r for r in RULESETS["all"]}
    r = rules[name]
    a = relay.var("a", shape=(3, 4), dtype="int32")
    example = {"add-zero": lambda: relay.add(a, relay.const(np.zeros(4, "int32"))),
               "multiply-one": lambda: relay.multiply(a, relay.const(np.int32(1))),
               "double-negation": lambda: relay.negative(relay.negative(a))}.get(name)
    if example is None:  # float only: it must not fire on an integer program
        b = relay.var("b", shape=(4, 2), dtype="int32")
        with pytest.raises(eqsat.RuleError, match="does not fire"):
            check_rule(r, relay.multiply(relay.nn.matmul(a, b), relay.const(np.int32(3))))
        return
    assert check_rule(r, example).programs >= 2


@pytest.mark.parametrize("dtype", [F32, "int32"])
def test_empty_dimensions_pass_through_every_rule_set(dtype):
    x = relay.var("x", shape=(0, 3), dtype=dtype)
    zero = relay.const(np.full(3, -0.0 if dtype == F32 else 0, dtype))
    body = relay.Tuple([relay.add(relay.nn.relu(relay.nn.relu(x)), zero),
                        relay.negative(relay.negative(relay.multiply(x, relay.const(np.ones(3, dtype))))),
                        relay.transpose(relay.transpose(x, (1, 0)), (1, 0))])
    for rules in ("simplify", "default", "all"):
        res = eqsat.optimize(_mod(body), target="ops", rules=rules, verify=True)
        assert res.op_counts_after == {"nn.relu": 1} and res.verification.passed
