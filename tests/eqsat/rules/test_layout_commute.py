"""Element-wise ops commute with transposes and reshapes, so layout pairs around them cancel."""

from __future__ import annotations

import collections

import numpy as np

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


def test_a_channel_scale_follows_its_operand_into_nhwc():
    x = relay.var("x", shape=(1, 3, 3, 4))
    scale = np.arange(1, 5, dtype="float32")
    nchw = relay.multiply(relay.const(scale.reshape(4, 1, 1)), relay.transpose(x, (0, 3, 1, 2)))
    mod = _optimized(relay.transpose(nchw, (0, 2, 3, 1)))
    assert _ops(mod) == {"multiply": 1}
    constants = [n for n in ir.visitor.post_order(mod["main"].body) if isinstance(n, ir.Constant)]
    assert [c.data.shape for c in constants] == [(1, 1, 1, 4)]
    np.testing.assert_array_equal(constants[0].data.reshape(-1), scale)


def test_a_scaled_residual_stream_runs_in_the_blocks_layout():
    """ConvNeXt's spelling: each block computes in NHWC (here a softmax over channels), scales per
    channel in NCHW and adds its input in NCHW. After the rules the sums run in NHWC, and an NHWC
    input and output leave no transpose at all."""
    x = relay.var("x", shape=(1, 3, 3, 4))
    stream = relay.transpose(x, (0, 3, 1, 2))
    for index in range(3):
        scale = relay.const(np.full((4, 1, 1), 0.5 + index, "float32"))
        block = relay.transpose(relay.nn.softmax(relay.transpose(stream, (0, 2, 3, 1)), axis=-1), (0, 3, 1, 2))
        stream = relay.add(relay.multiply(scale, block), stream)
    mod = _optimized(relay.transpose(stream, (0, 2, 3, 1)))
    assert _ops(mod) == {"nn.softmax": 3, "multiply": 3, "add": 3}


def test_a_constant_that_grows_the_result_keeps_the_transpose():
    x = relay.var("x", shape=(2, 3))
    grown = relay.add(relay.transpose(x, (1, 0)), relay.const(np.ones((4, 3, 2), "float32")))
    mod = _optimized(relay.transpose(grown, (0, 2, 1)))
    assert _ops(mod)["transpose"] == 2
