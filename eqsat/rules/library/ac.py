"""Commutativity and associativity of add and multiply: complete, but they grow without bound.

Commutativity is exact for every dtype. Associativity is exact for integers (wrap-around
arithmetic is associative) and holds up to rounding for floats, where it may also move an
overflow: it is declared `exact=False`, and the set is outside `default` for both reasons.
"""

from __future__ import annotations

from ir import Expr, relay

from ..pattern import call, pvars
from ..rule import rule, ruleset

__all__ = ["AC", "COMMUTE"]

x, y, z = pvars("x y z")


def _v(name: str, *shape: int) -> Expr:
    return relay.var(name, shape=shape)


def _three(outer, inner, nested_left: bool) -> Expr:
    """outer(inner(x, y), z) when `nested_left`, else outer(x, inner(y, z)), with broadcasting operands."""
    a, b, c = _v("x", 2, 3), _v("y", 3), _v("z", 2, 1)
    return outer(inner(a, b), c) if nested_left else outer(a, inner(b, c))


def _associate(op: str, fn) -> list:
    """Both directions of associativity of `op` (exact for integers, up to rounding for floats)."""
    left, right = call(op, call(op, x, y), z), call(op, x, call(op, y, z))
    return [rule(f"{op}-associate", left, right, exact=False, example=lambda: _three(fn, fn, True),
                 near_miss=lambda: _three(fn, relay.subtract, True)),
            rule(f"{op}-associate-rev", right, left, exact=False, example=lambda: _three(fn, fn, False),
                 near_miss=lambda: _three(fn, relay.subtract, False))]


COMMUTE = ruleset("commute", [
    rule("add-commute",       x + y,                  y + x,
         example=lambda: relay.add(_v("x", 2, 3), _v("y", 3)),
         near_miss=lambda: relay.subtract(_v("x", 2, 3), _v("y", 3))),
    rule("multiply-commute",  x * y,                  y * x,
         example=lambda: relay.multiply(_v("x", 2, 3), _v("y", 2, 1)),
         near_miss=lambda: relay.divide(_v("x", 2, 3), _v("y", 2, 1))),
])
"""bounded on its own: each add or multiply gets one swapped twin, so idioms match either operand order."""

AC = ruleset("ac", [*COMMUTE, _associate("add", relay.add), _associate("multiply", relay.multiply)])
