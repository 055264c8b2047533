"""A small program for the library rules that do not carry their own `example=`: its numerical check.

`tests/eqsat/test_library.py` saturates each example with its rule and compares every program
in the root class with the original on random inputs.
"""

from __future__ import annotations

from typing import Callable

from ir import Expr, relay

__all__ = ["EXAMPLES"]


def _var(name: str, *shape: int) -> Expr:
    return relay.var(name, shape=shape)


EXAMPLES: dict[str, Callable[[], Expr]] = {
    "merge-parallel-conv": lambda: _merge_conv(),
    "merge-parallel-dense": lambda: _merge_dense(),
}


def _merge_conv() -> Expr:
    x = _var("x", 1, 3, 6, 6)
    return relay.add(relay.nn.conv2d(x, _var("w1", 4, 3, 3, 3), padding=(1, 1)),
                     relay.nn.conv2d(x, _var("w2", 4, 3, 3, 3), padding=(1, 1)))


def _merge_dense() -> Expr:
    x = _var("x", 2, 5)
    return relay.Tuple([relay.nn.dense(x, _var("w1", 3, 5)), relay.nn.dense(x, _var("w2", 4, 5))])
