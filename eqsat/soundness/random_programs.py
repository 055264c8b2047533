"""Seeded random programs for checking rules beyond their examples: element-wise ops over
broadcasting shapes, scalar and per-axis constants (zeros of both signs, ones, small integers),
transposes and reshapes, in float32 and int32.

    for mod in random_programs(20, seed=0): ...
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from ir import Expr, IRModule, relay
from ir.op.registry import make_call

__all__ = ["random_programs"]

#: the program's full shape, and the shapes an operand may have (each broadcasts to it)
SHAPE = (2, 3)
OPERAND_SHAPES = ((2, 3), (3,), (2, 1), (1, 3), ())
_UNARY = {"float32": ("nn.relu", "negative", "abs", "sigmoid", "exp", "tanh", "sqrt"),
          "int32": ("nn.relu", "negative", "abs")}
_BINARY = {"float32": ("add", "subtract", "multiply", "divide", "maximum", "minimum"),
           "int32": ("add", "subtract", "multiply", "maximum", "minimum")}
_CONSTANTS = (0.0, -0.0, 1.0, 0.5, 2.0)


def _constant(rng: np.random.Generator, dtype: str) -> Expr:
    shape = OPERAND_SHAPES[rng.integers(len(OPERAND_SHAPES))]
    if rng.random() < 0.5:
        data = np.full(shape, _CONSTANTS[rng.integers(len(_CONSTANTS))])
    else:
        data = rng.integers(-3, 4, shape)
    return relay.const(np.asarray(data, dtype))


def _step(rng: np.random.Generator, pool: list[Expr], inputs: list[Expr], dtype: str) -> Expr:
    a = pool[rng.integers(len(pool))]
    kind = rng.integers(4)
    if kind == 0:
        return make_call(_UNARY[dtype][rng.integers(len(_UNARY[dtype]))], [a], {})
    if kind == 1:
        other = (inputs + pool)[rng.integers(len(inputs) + len(pool))]
        operands = [a, other] if rng.random() < 0.5 else [other, a]
        return make_call(_BINARY[dtype][rng.integers(len(_BINARY[dtype]))], operands, {})
    if kind == 2:
        return make_call(("add", "multiply")[rng.integers(2)], [a, _constant(rng, dtype)], {})
    if rng.random() < 0.5:
        return relay.transpose(relay.transpose(a, (1, 0)), (1, 0))
    return relay.reshape(relay.reshape(a, (3, 2)), SHAPE)


def random_programs(count: int, seed: int = 0, steps: tuple[int, int] = (2, 7)) -> Iterator[IRModule]:
    """`count` programs of `steps` ops each (from the range), over a (2, 3) input and inputs of the
    other operand shapes, whose last two values are the output."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        dtype = ("float32", "int32")[rng.integers(2)]
        inputs = [relay.var(f"x{i}", shape=s, dtype=dtype) for i, s in enumerate(OPERAND_SHAPES[:3])]
        pool: list[Expr] = [inputs[0]]
        for _ in range(rng.integers(steps[0], steps[1] + 1)):
            pool.append(_step(rng, pool, inputs, dtype))
        yield IRModule.from_expr(relay.Tuple(pool[-2:]))
