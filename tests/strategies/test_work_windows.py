"""FLOP counts of N-d convolution, transposed convolution, pooling and resizing (`strategies.work.op_work`)."""

from __future__ import annotations

import ir
from ir import relay
from strategies.work import conv_macs, op_work


def _typed(call):
    ir.infer_type(call)
    return call.attrs, [a.checked_type for a in call.args], call.checked_type


def test_conv_macs_in_every_rank():
    attrs, ins, out = _typed(relay.nn.conv1d(relay.var("x", shape=(2, 4, 9)), relay.var("w", shape=(6, 2, 3)),
                                             groups=2))
    assert conv_macs(attrs, ins, out) == 2 * 6 * 7 * (2 * 3)  # outputs x (in / groups) x taps
    attrs, ins, out = _typed(relay.nn.conv3d(relay.var("x", shape=(1, 4, 5, 5, 5)), relay.var("w", shape=(3, 4, 2, 2, 2))))
    assert conv_macs(attrs, ins, out) == 3 * 4 ** 3 * (4 * 8)


def test_transposed_convolution_costs_what_its_adjoint_costs():
    x, w = relay.var("x", shape=(1, 3, 9, 8)), relay.var("w", shape=(4, 3, 3, 2))
    attrs, ins, out = _typed(relay.nn.conv2d(x, w, strides=2, padding=1))
    t_attrs, t_ins, t_out = _typed(relay.nn.conv2d_transpose(relay.var("y", shape=out.concrete_shape), w, strides=2,
                                                             padding=1))
    assert conv_macs(t_attrs, t_ins, t_out) == conv_macs(attrs, ins, out)


def test_pool_and_resize_flops():
    attrs, ins, out = _typed(relay.nn.max_pool3d(relay.var("x", shape=(1, 2, 4, 4, 4)), pool_size=2, strides=2))
    assert op_work("nn.max_pool3d", attrs, ins, out).flops == 2 * 8 * 8
    x = relay.var("x", shape=(1, 2, 4, 4))
    for method, taps in (("nearest_neighbor", 0), ("linear", 4), ("cubic", 16)):
        attrs, ins, out = _typed(relay.image.resize2d(x, size=(8, 8), method=method))
        assert op_work("image.resize2d", attrs, ins, out).flops == 2 * taps * 2 * 64
