"""Simplifications that never grow a program: idempotence, cancellation, identities."""

from __future__ import annotations

import numpy as np

from ir import Expr, relay
from ir.op.shapes import transpose_axes

from ..match import Match
from ..pattern import attr, avar, call, const_pat, nn, ops, pvars
from ..rule import rule, ruleset

__all__ = ["SIMPLIFY"]

x, = pvars("x")


def _composed(m: Match) -> list[int]:
    """The permutation of `transpose(transpose(x, p), q)` as one."""
    ndim = m.ndim("x")
    inner, outer = transpose_axes(m["p"], ndim), transpose_axes(m["q"], ndim)
    return [inner[i] for i in outer]


def _is_identity_perm(m: Match) -> bool:
    return transpose_axes(m["p"], m.ndim("x")) == tuple(range(m.ndim("x")))


def _static_result(m: Match) -> bool:
    return all(isinstance(d, int) for d in m.root_type().shape)


def _keeps_shape(m: Match) -> bool:
    """The constant adds no axes to `x` (`x + 0` and `x * 1` are `x` bit for bit, signed zeros, infinities and
    NaN included, for an integer zero and a float -0.0: -0.0 + +0.0 is +0.0 under IEEE 754, so `x + 0.0` is not `x`)."""
    return m.tensor_type("x") == m.root_type()


def _zeros_keep_shape(m: Match) -> bool:
    """The addend is zeros of either sign and adds no axes: inside a softmax `x + 0` is `x` bit for bit
    (exp(+0 - m) and exp(-0 - m) are one value), so an all-zero mask, which exporters leave where a
    model has none, goes."""
    return not np.any(m.const("z")) and m.tensor_type("x") == m.root_type()


def _v(*shape: int) -> Expr:
    return relay.var("x", shape=shape)


def _c(value) -> Expr:
    return relay.const(np.asarray(value, "float32"))


SIMPLIFY = ruleset("simplify", [
    rule("relu-idempotent",     nn.relu(nn.relu(x)),                         nn.relu(x),
         example=lambda: relay.nn.relu(relay.nn.relu(_v(2, 3))),
         near_miss=lambda: relay.nn.relu(relay.nn.leaky_relu(_v(2, 3)))),
    rule("double-negation",     -(-x),                                       x,
         example=lambda: relay.negative(relay.negative(_v(2, 3))),
         near_miss=lambda: relay.negative(relay.abs(_v(2, 3)))),
    rule("transpose-compose",   ops.transpose(ops.transpose(x, axes=avar("p")), axes=avar("q")),
         ops.transpose(x, axes=_composed),
         example=lambda: relay.transpose(relay.transpose(_v(2, 3, 4), (1, 2, 0)), (2, 0, 1)),
         near_miss=lambda: relay.transpose(relay.reshape(_v(2, 3, 4), (3, 2, 4)), (2, 0, 1))),
    rule("transpose-identity",  ops.transpose(x, axes=avar("p")),            x, when=_is_identity_perm,
         example=lambda: relay.transpose(_v(2, 3, 4), (0, 1, 2)),
         near_miss=lambda: relay.transpose(_v(2, 3, 4), (0, 2, 1))),
    rule("reshape-compose",     ops.reshape(ops.reshape(x)),
         ops.reshape(x, newshape=lambda m: list(m.root_type().shape)), when=_static_result,
         example=lambda: relay.reshape(relay.reshape(_v(2, 3, 4), (6, 4)), (4, -1)),
         near_miss=lambda: relay.reshape(relay.transpose(_v(2, 3, 4), (0, 2, 1)), (4, -1))),
    rule("reshape-noop",        ops.reshape(x),                              x,
         when=lambda m: m.type("x") == m.root_type(),
         example=lambda: relay.reshape(_v(2, 3), (2, 3)), near_miss=lambda: relay.reshape(_v(2, 3), (3, 2))),
    rule("add-zero",            x + -0.0,                                    x, when=_keeps_shape,
         example=lambda: relay.add(_v(2, 3), _c(np.full(3, -0.0))),
         near_miss=[lambda: relay.add(_v(2, 3), _c(np.zeros(3))),              # +0.0 turns -0.0 into +0.0
                    lambda: relay.add(_v(2, 3), _c(np.full((2, 2, 3), -0.0)))]),  # the zero adds an axis
    rule("softmax-zero-mask",   call("nn.softmax", call("add", x, const_pat("z"), bind_attrs="ad"), bind_attrs="sm"),
         nn.softmax(x, axis=attr("sm", "axis")), when=_zeros_keep_shape,
         example=lambda: relay.nn.softmax(relay.add(_v(2, 3, 3), _c(np.zeros((2, 1, 3))))),
         near_miss=[lambda: relay.nn.softmax(relay.add(_v(2, 3, 3), _c(np.full((2, 1, 3), 1e-30)))),
                    lambda: relay.nn.softmax(relay.add(_v(3, 3), _c(np.zeros((2, 3, 3)))))]),  # adds an axis
    rule("multiply-one",        x * 1.0,                                     x, when=_keeps_shape,
         example=lambda: relay.multiply(_v(2, 3), _c(np.ones((2, 3)))),
         near_miss=lambda: relay.multiply(_v(2, 3), _c([1.0, 2.0, 1.0]))),
])
