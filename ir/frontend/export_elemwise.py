"""Emitters of element-wise IR ops: arithmetic, comparisons, logic, activations, clip, cast, where."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..expr import Call
from .export_context import EmitContext, Value, emits

_UNARY = {
    "abs": "Abs", "negative": "Neg", "copy": "Identity", "sign": "Sign", "nn.relu": "Relu", "sigmoid": "Sigmoid",
    "tanh": "Tanh", "erf": "Erf", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "floor": "Floor", "ceil": "Ceil",
    "round": "Round", "logical_not": "Not",
}
_BINARY = {
    "add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "power": "Pow", "maximum": "Max",
    "minimum": "Min", "equal": "Equal", "less": "Less", "greater": "Greater", "less_equal": "LessOrEqual",
    "greater_equal": "GreaterOrEqual", "logical_and": "And", "logical_or": "Or", "where": "Where",
}


@emits(*_UNARY)
def emit_unary(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node(_UNARY[call.op.name], args)


@emits(*_BINARY)
def emit_binary(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node(_BINARY[call.op.name], args)


@emits("not_equal")
def emit_not_equal(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("Not", [ctx.node("Equal", args)])


@emits("mod")
def emit_mod(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("Mod", args, fmod=1)  # truncated remainder: the sign of the dividend


@emits("floor_divide")
def emit_floor_divide(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    if np.issubdtype(np.dtype(ctx.type_of(call).dtype), np.floating):
        return ctx.node("Floor", [ctx.node("Div", args)])
    # integers: (a - a mod b) / b is exact, with mod taking the divisor's sign
    lhs, rhs = args
    return ctx.node("Div", [ctx.node("Sub", [lhs, ctx.node("Mod", [lhs, rhs], fmod=0)]), rhs])


@emits("rsqrt")
def emit_rsqrt(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("Reciprocal", [ctx.node("Sqrt", args)])


@emits("nn.leaky_relu")
def emit_leaky_relu(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("LeakyRelu", args, alpha=call.attrs.alpha)


def gelu(ctx: EmitContext, data: str, approximate: str, dtype: str) -> str:
    """x * Phi(x) from Erf (exact) or Tanh (approximate), in the graph's dtype."""
    half_x = ctx.node("Mul", [data, ctx.const(0.5, dtype)])
    if approximate == "tanh":
        cube = ctx.node("Mul", [ctx.node("Mul", [data, data]), data])
        inner = ctx.node("Add", [data, ctx.node("Mul", [cube, ctx.const(0.044715, dtype)])])
        phi = ctx.node("Tanh", [ctx.node("Mul", [inner, ctx.const(math.sqrt(2 / math.pi), dtype)])])
    else:
        phi = ctx.node("Erf", [ctx.node("Mul", [data, ctx.const(1 / math.sqrt(2), dtype)])])
    return ctx.node("Mul", [half_x, ctx.node("Add", [phi, ctx.const(1.0, dtype)])])


@emits("nn.gelu")
def emit_gelu(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return gelu(ctx, args[0], call.attrs.approximate, ctx.type_of(call).dtype)


def _bound(value: float, dtype: str) -> np.ndarray:
    if np.issubdtype(np.dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        return np.asarray(min(max(value, info.min), info.max)).astype(dtype)
    return np.asarray(value, dtype=dtype)


@emits("clip")
def emit_clip(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    dtype = ctx.type_of(call).dtype
    bounds = [ctx.const(_bound(v, dtype)) for v in (call.attrs.a_min, call.attrs.a_max)]
    return ctx.node("Clip", [args[0], *bounds])


@emits("cast")
def emit_cast(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("Cast", args, to=ctx.elem(call.attrs.dtype))
