"""Element-wise ops commute with transposes and reshapes, so layout pairs around them cancel."""

from __future__ import annotations

import collections

import ir
from ir import relay

import eqsat


def _ops(mod: ir.IRModule) -> collections.Counter:
    return collections.Counter(n.op.name for n in ir.visitor.post_order(mod["main"].body) if isinstance(n, ir.Call))


def _optimized(expr: ir.Expr) -> ir.IRModule:
    return eqsat.optimize(ir.IRModule.from_expr(expr), target="cpu", verify=True).mod


def test_an_nhwc_sandwich_around_an_activation_cancels():
    x = relay.var("x", shape=(1, 3, 4, 5))
    nhwc = relay.transpose(x, (0, 2, 3, 1))
    mod = _optimized(relay.transpose(relay.sigmoid(relay.nn.relu(nhwc)), (0, 3, 1, 2)))
    assert _ops(mod) == {"nn.relu": 1, "sigmoid": 1}


def test_transposes_of_both_operands_leave_a_binary_op():
    a, b = relay.var("a", shape=(4, 6)), relay.var("b", shape=(4, 6))
    mod = _optimized(relay.transpose(relay.add(relay.transpose(a, (1, 0)), relay.transpose(b, (1, 0))), (1, 0)))
    assert _ops(mod) == {"add": 1}


def test_a_reshape_round_trip_around_an_activation_cancels():
    x = relay.var("x", shape=(2, 12))
    mod = _optimized(relay.reshape(relay.exp(relay.reshape(x, (2, 3, 4))), (2, 12)))
    assert _ops(mod) == {"exp": 1}


def test_transposes_that_do_not_cancel_stay():
    x = relay.var("x", shape=(2, 3, 4))
    mod = _optimized(relay.transpose(relay.nn.relu(relay.transpose(x, (0, 2, 1))), (1, 0, 2)))
    ops = _ops(mod)
    assert ops["nn.relu"] == 1 and ops["transpose"] == 1
