"""Simplifications that never grow a program: idempotence, cancellation, identities."""

from __future__ import annotations

import numpy as np

from ir import Expr
from ir.op.registry import make_call

from ..match import Match
from ..pattern import avar, call, const_pat, pvars
from ..rule import rule, ruleset

__all__ = ["SIMPLIFY"]

x, = pvars("x")


def _perm(axes, ndim: int) -> tuple[int, ...]:
    return tuple(reversed(range(ndim))) if axes is None else tuple(a % ndim for a in axes)


def _compose_transposes(m: Match) -> Expr:
    ndim = m.ndim("x")
    inner, outer = _perm(m["p"], ndim), _perm(m["q"], ndim)
    return make_call("transpose", [m.expr("x")], {"axes": [inner[i] for i in outer]})


def _is_identity_perm(m: Match) -> bool:
    return _perm(m["p"], m.ndim("x")) == tuple(range(m.ndim("x")))


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


SIMPLIFY = ruleset("simplify", [
    rule("relu-idempotent",     call("nn.relu", call("nn.relu", x)),                      call("nn.relu", x)),
    rule("double-negation",     call("negative", call("negative", x)),                    x),
    rule("transpose-compose",   call("transpose", call("transpose", x, axes=avar("p")), axes=avar("q")),
         _compose_transposes),
    rule("transpose-identity",  call("transpose", x, axes=avar("p")),                      x, when=_is_identity_perm),
    rule("reshape-compose",     call("reshape", call("reshape", x)),                      _reshape_to_result),
    rule("reshape-noop",        call("reshape", x),                                       x,
         when=lambda m: m.type("x") == m.root_type()),
    rule("add-zero",            call("add", x, const_pat("c")),                           x, when=_identity_addend),
    rule("multiply-one",        call("multiply", x, const_pat("c")),                      x, when=_all_ones),
])
