"""Commutativity and associativity of add and multiply: complete, but they grow without bound."""

from __future__ import annotations

from ..pattern import call, pvars
from ..rule import birewrite, rule, ruleset

__all__ = ["AC"]

x, y, z = pvars("x y z")

AC = ruleset("ac", [
    rule("add-commute",       call("add", x, y),      call("add", y, x)),
    rule("multiply-commute",  call("multiply", x, y), call("multiply", y, x)),
    birewrite("add-associate",      call("add", call("add", x, y), z), call("add", x, call("add", y, z))),
    birewrite("multiply-associate", call("multiply", call("multiply", x, y), z),
              call("multiply", x, call("multiply", y, z))),
])
