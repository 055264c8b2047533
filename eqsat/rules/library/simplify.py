"""Simplifications that never grow a program: idempotence, cancellation, identities."""

from __future__ import annotations

import numpy as np

from ir import Expr, relay
from ir.op.registry import make_call
from ir.op.shapes import transpose_axes

from ..match import Match
from ..pattern import avar, call, const_pat, pvars
from ..rule import rule, ruleset

__all__ = ["SIMPLIFY"]

x, = pvars("x")


def _compose_transposes(m: Match) -> Expr:
    ndim = m.ndim("x")
    inner, outer = transpose_axes(m["p"], ndim), transpose_axes(m["q"], ndim)
    return make_call("transpose", [m.expr("x")], {"axes": [inner[i] for i in outer]})


def _is_identity_perm(m: Match) -> bool:
    return transpose_axes(m["p"], m.ndim("x")) == tuple(range(m.ndim("x")))


def _reshape_to_result(m: Match) -> Expr | None:
    shape = m.root_type().shape
    if not all(isinstance(d, int) for d in shape):
        return None
    return make_call("reshape", [m.expr("x")], {"newshape": list(shape)})


def _keeps_shape(m: Match) -> bool:
    return m.tensor_type("x") == m.root_type()


def _identity_addend(m: Match) -> bool:
    """`x + c == x` bit for bit: integers with c == 0; floats only with c == -0.0, since
    -0.0 + +0.0 is +0.0 under IEEE 754 (so `x + 0.0 -> x` would flip the sign of a zero)."""
    c = m.const("c")
    if not (_keeps_shape(m) and np.all(c == 0)):
        return False
    return c.dtype.kind in "iu" or bool(np.all(np.signbit(c)))


def _all_ones(m: Match) -> bool:
    """`x * 1 == x` for every dtype and value (signed zeros, infinities and NaN included)."""
    return _keeps_shape(m) and bool(np.all(m.const("c") == 1))


def _v(*shape: int) -> Expr:
    return relay.var("x", shape=shape)


def _c(value) -> Expr:
    return relay.const(np.asarray(value, "float32"))


SIMPLIFY = ruleset("simplify", [
    rule("relu-idempotent",     call("nn.relu", call("nn.relu", x)),                      call("nn.relu", x),
         example=lambda: relay.nn.relu(relay.nn.relu(_v(2, 3))),
         near_miss=lambda: relay.nn.relu(relay.nn.leaky_relu(_v(2, 3)))),
    rule("double-negation",     call("negative", call("negative", x)),                    x,
         example=lambda: relay.negative(relay.negative(_v(2, 3))),
         near_miss=lambda: relay.negative(relay.abs(_v(2, 3)))),
    rule("transpose-compose",   call("transpose", call("transpose", x, axes=avar("p")), axes=avar("q")),
         _compose_transposes,
         example=lambda: relay.transpose(relay.transpose(_v(2, 3, 4), (1, 2, 0)), (2, 0, 1)),
         near_miss=lambda: relay.transpose(relay.reshape(_v(2, 3, 4), (3, 2, 4)), (2, 0, 1))),
    rule("transpose-identity",  call("transpose", x, axes=avar("p")),                      x, when=_is_identity_perm,
         example=lambda: relay.transpose(_v(2, 3, 4), (0, 1, 2)),
         near_miss=lambda: relay.transpose(_v(2, 3, 4), (0, 2, 1))),
    rule("reshape-compose",     call("reshape", call("reshape", x)),                      _reshape_to_result,
         example=lambda: relay.reshape(relay.reshape(_v(2, 3, 4), (6, 4)), (4, -1)),
         near_miss=lambda: relay.reshape(relay.transpose(_v(2, 3, 4), (0, 2, 1)), (4, -1))),
    rule("reshape-noop",        call("reshape", x),                                       x,
         when=lambda m: m.type("x") == m.root_type(),
         example=lambda: relay.reshape(_v(2, 3), (2, 3)), near_miss=lambda: relay.reshape(_v(2, 3), (3, 2))),
    rule("add-zero",            call("add", x, const_pat("c")),                           x, when=_identity_addend,
         example=lambda: relay.add(_v(2, 3), _c(np.full(3, -0.0))),
         near_miss=[lambda: relay.add(_v(2, 3), _c(np.zeros(3))),              # +0.0 turns -0.0 into +0.0
                    lambda: relay.add(_v(2, 3), _c(np.full((2, 2, 3), -0.0)))]),  # the zero adds an axis
    rule("multiply-one",        call("multiply", x, const_pat("c")),                      x, when=_all_ones,
         example=lambda: relay.multiply(_v(2, 3), _c(np.ones((2, 3)))),
         near_miss=lambda: relay.multiply(_v(2, 3), _c([1.0, 2.0, 1.0]))),
])
