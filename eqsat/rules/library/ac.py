"""Commutativity and associativity of add and multiply: complete, but they grow without bound.

Commutativity is exact for every dtype. Associativity is exact for integers (wrap-around
arithmetic is associative) and holds up to rounding for floats, where it may also move an
overflow: it is declared `exact=False`, and the set is outside `default` for both reasons.
"""

from __future__ import annotations

from ..pattern import call, pvars
from ..rule import birewrite, rule, ruleset

__all__ = ["AC", "COMMUTE"]

x, y, z = pvars("x y z")

COMMUTE = ruleset("commute", [
    rule("add-commute",       call("add", x, y),      call("add", y, x)),
    rule("multiply-commute",  call("multiply", x, y), call("multiply", y, x)),
])
"""bounded on its own: each add or multiply gets one swapped twin, so idioms match either operand order."""

AC = ruleset("ac", [
    *COMMUTE,
    birewrite("add-associate",      call("add", call("add", x, y), z), call("add", x, call("add", y, z)), exact=False),
    birewrite("multiply-associate", call("multiply", call("multiply", x, y), z),
              call("multiply", x, call("multiply", y, z)), exact=False),
])
