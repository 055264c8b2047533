"""Seeded random programs for checking rules beyond their examples: element-wise ops over
broadcasting shapes, scalar and per-axis constants (zeros of both signs, ones, small integers, and
each dtype's edge values: its largest and smallest, its smallest normal, a subnormal, values past
2^53), chains of constant scales and shifts, clamps, products with constant weights, row
reductions, transposes and reshapes, in every dtype of `DTYPES`.

    for mod in random_programs(20, seed=0): ...
    for mod in random_programs(20, seed=0, dtypes=("float16", "uint8")): ...
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from ir import Expr, IRModule, relay
from ir.dtype_info import float_info, is_float, numpy_dtype
from ir.expr import Constant
from ir.op.registry import make_call

__all__ = ["random_programs", "edge_constants", "DTYPES"]

#: the program's full shape, and the shapes an operand may have (each broadcasts to it)
SHAPE = (2, 3)
OPERAND_SHAPES = ((2, 3), (3,), (2, 1), (1, 3), ())
DTYPES = ("float32", "int32", "float16", "bfloat16", "float64", "int64", "uint8")
_FLOAT_UNARY = ("nn.relu", "negative", "abs", "sigmoid", "exp", "tanh", "sqrt")
_FLOAT_BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum")
_INT_BINARY = ("add", "subtract", "multiply", "maximum", "minimum")
_CONSTANTS = (0.0, -0.0, 1.0, 0.5, 2.0)


def _unary(dtype: str) -> tuple[str, ...]:
    if is_float(dtype):
        return _FLOAT_UNARY
    return ("nn.relu", "negative", "abs") if numpy_dtype(dtype).kind == "i" else ("abs", "negative")


def edge_constants(dtype: str) -> list[float | int]:
    """The extreme values of `dtype`: for floats its largest, smallest normal, smallest subnormal
    and a huge and a tiny scale (both signs); for integers its max and min, their neighbours, and
    2^53 + 1 where it fits (the first integer a float64 cannot hold)."""
    if is_float(dtype):
        info = float_info(dtype)
        big, tiny, sub = float(info.max), float(info.tiny), float(info.smallest_subnormal)
        return [big, -big, tiny, -tiny, sub, big / 3, 3e4, 1e-4, -1e-4, float(info.eps)]
    info = np.iinfo(numpy_dtype(dtype))
    values = [int(info.max), int(info.min), int(info.max) - 1, int(info.min) + 1]
    return values + ([2 ** 53 + 1, -(2 ** 53) - 1] if info.max > 2 ** 53 else [])


def _constant(rng: np.random.Generator, dtype: str, scalar: bool = False) -> Expr:
    shape = () if scalar else OPERAND_SHAPES[rng.integers(len(OPERAND_SHAPES))]
    np_dtype = numpy_dtype(dtype)
    pick = rng.random()
    if pick < 0.35:
        values = [v for v in _CONSTANTS if is_float(dtype) or v >= 0 or np_dtype.kind == "i"]
        data = np.full(shape, values[rng.integers(len(values))], np.float64)
    elif pick < 0.6:
        edges = edge_constants(dtype)
        return Constant(np.full(shape, edges[rng.integers(len(edges))]).astype(np_dtype))
    else:
        data = rng.integers(-3 if np_dtype.kind != "u" else 0, 4, shape)
    return Constant(np.asarray(data).astype(np_dtype))  # ir.const would narrow float64


def _step(rng: np.random.Generator, pool: list[Expr], inputs: list[Expr], dtype: str) -> Expr:
    a = pool[rng.integers(len(pool))]
    kind = rng.integers(7)
    if kind == 0:
        ops = _unary(dtype)
        return make_call(ops[rng.integers(len(ops))], [a], {})
    if kind == 1:
        other = (inputs + pool)[rng.integers(len(inputs) + len(pool))]
        operands = [a, other] if rng.random() < 0.5 else [other, a]
        ops = _FLOAT_BINARY if is_float(dtype) else _INT_BINARY
        return make_call(ops[rng.integers(len(ops))], operands, {})
    if kind == 2:
        return make_call(("add", "multiply")[rng.integers(2)], [a, _constant(rng, dtype)], {})
    if kind == 3:  # two scalar scales or shifts in a row: what constant-combining rules fold
        op = ("add", "multiply")[rng.integers(2)]
        inner = make_call(op, [a, _constant(rng, dtype, scalar=True)], {})
        return make_call(op, [inner, _constant(rng, dtype, scalar=True)], {})
    if kind == 4:  # a clamp: min(max(a, lo), hi) with scalar bounds
        low = make_call("maximum", [a, _constant(rng, dtype, scalar=True)], {})
        return make_call("minimum", [low, _constant(rng, dtype, scalar=True)], {})
    if kind == 5:  # a product with a constant weight (what becomes a dense layer), or a row reduction
        if rng.random() < 0.5:
            weight = Constant(rng.integers(0 if numpy_dtype(dtype).kind == "u" else -2, 3, (3, 3))
                              .astype(numpy_dtype(dtype)))
            return relay.nn.matmul(a, weight)
        reduce = ("sum", "max", "mean" if is_float(dtype) else "min")[rng.integers(3)]
        return make_call("add", [a, make_call(reduce, [a], {"axis": [1], "keepdims": True})], {})
    if rng.random() < 0.5:
        return relay.transpose(relay.transpose(a, (1, 0)), (1, 0))
    return relay.reshape(relay.reshape(a, (3, 2)), SHAPE)


def random_programs(count: int, seed: int = 0, steps: tuple[int, int] = (2, 7),
                    dtypes: Sequence[str] = DTYPES) -> Iterator[IRModule]:
    """`count` programs of `steps` ops each (from the range), each in one dtype drawn from
    `dtypes`, over a (2, 3) input and inputs of the other operand shapes, whose last two values
    are the output."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        dtype = dtypes[rng.integers(len(dtypes))]
        numpy_dtype(dtype)  # registers bfloat16 with numpy (through ml_dtypes) before a var names it
        inputs = [relay.var(f"x{i}", shape=s, dtype=dtype) for i, s in enumerate(OPERAND_SHAPES[:3])]
        pool: list[Expr] = [inputs[0]]
        for _ in range(rng.integers(steps[0], steps[1] + 1)):
            pool.append(_step(rng, pool, inputs, dtype))
        yield IRModule.from_expr(relay.Tuple(pool[-2:]))
