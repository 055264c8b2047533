"""Emitters of element-wise IR ops: arithmetic, comparisons, logic, activations, clip, cast, where."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..expr import Call
from ..op.activation import HARD_SWISH_ALPHA, HARD_SWISH_BETA
from .export_context import EmitContext, Value, emits

#: the first opset with a `Gelu` op (with the `approximate` attribute)
GELU_OPSET = 20
#: the first opset whose `Mod` takes floats with fmod=0 (the floored remainder)
FLOAT_FLOOR_MOD_OPSET = 28
#: the dtypes ONNX Runtime runs `HardSigmoid` (so `HardSwish`) and `Gelu` in: it has no float64 HardSigmoid
#: and evaluates a float64 Gelu with float32 constants
_ORT_ACTIVATION_DTYPES = ("float32", "float16")

_UNARY = {
    "abs": "Abs", "negative": "Neg", "copy": "Identity", "sign": "Sign", "nn.relu": "Relu", "sigmoid": "Sigmoid",
    "tanh": "Tanh", "erf": "Erf", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "floor": "Floor", "ceil": "Ceil",
    "round": "Round", "logical_not": "Not", "isnan": "IsNaN", "isinf": "IsInf", "sin": "Sin", "cos": "Cos",
}
_BINARY = {
    "add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "power": "Pow", "maximum": "Max",
    "minimum": "Min", "equal": "Equal", "less": "Less", "greater": "Greater", "less_equal": "LessOrEqual",
    "greater_equal": "GreaterOrEqual", "logical_and": "And", "logical_or": "Or",
}
#: dtypes ONNX Runtime's CPU `Where` lacks -> the dtype it selects them in, losslessly
_WHERE_WIDER = {"bool": "uint8", "int16": "int32", "uint16": "int32"}


@emits(*_UNARY)
def emit_unary(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node(_UNARY[call.op.name], args)


@emits("isfinite")
def emit_isfinite(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """ONNX has no IsFinite: not (NaN or infinite)."""
    return ctx.node("Not", [ctx.node("Or", [ctx.node("IsNaN", args), ctx.node("IsInf", args)])])


@emits(*_BINARY)
def emit_binary(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node(_BINARY[call.op.name], args)


@emits("where")
def emit_where(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """Where; values of a dtype ONNX Runtime's kernel lacks (bool, 16-bit integers) are selected in a
    wider one and cast back. A condition that is a constant true throughout picks the first values,
    broadcast: an `Expand` of them (the e-graph's static form of an expand, `where(True, x, zeros)`),
    which ONNX Runtime runs several times faster than `Where`."""
    cond = ctx.value_of(args[0])
    other = ctx.type_of(call.args[2]).shape
    if cond is not None and cond.all() and all(isinstance(d, int) for d in other):
        return ctx.node("Expand", [args[1], ctx.ints(np.broadcast_shapes(cond.shape, tuple(other)))])
    dtype = ctx.type_of(call).dtype
    wider = _WHERE_WIDER.get(dtype)
    if wider is None:
        return ctx.node("Where", args)
    cond, *values = args
    picked = ctx.node("Where", [cond, *(ctx.node("Cast", [v], to=ctx.elem(wider)) for v in values)])
    return ctx.node("Cast", [picked], to=ctx.elem(dtype))


@emits("not_equal")
def emit_not_equal(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("Not", [ctx.node("Equal", args)])


@emits("mod")
def emit_mod(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("Mod", args, fmod=1)  # truncated remainder: the sign of the dividend


@emits("floor_mod")
def emit_floor_mod(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """Mod with fmod=0 for integers (and floats since opset 28); before, the truncated remainder moved
    by the divisor where its sign differs from the divisor's, as numpy's floored remainder is exact."""
    dtype = ctx.type_of(call).dtype
    if np.issubdtype(np.dtype(dtype), np.integer) or ctx.opset >= FLOAT_FLOOR_MOD_OPSET:
        return ctx.node("Mod", args, fmod=0)
    lhs, rhs = args
    rem = ctx.node("Mod", args, fmod=1)
    zero = ctx.const(0.0, dtype)
    signs_differ = ctx.node("Xor", [ctx.node("Less", [rem, zero]), ctx.node("Less", [rhs, zero])])
    moves = ctx.node("And", [signs_differ, ctx.node("Not", [ctx.node("Equal", [rem, zero])])])
    return ctx.node("Where", [moves, ctx.node("Add", [rem, rhs]), rem])


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
    """x * Phi(x) from Erf (exact) or Tanh (approximate), in the graph's dtype: the spellings ONNX Runtime's
    optimizer fuses into Gelu and FastGelu, PyTorch's `x / sqrt(2)` and GPT-2's `pow(x, 3)` (it fuses neither
    `x * (1 / sqrt(2))` nor `x * x * x`)."""
    half_x = ctx.node("Mul", [data, ctx.const(0.5, dtype)])
    if approximate == "tanh":
        cube = ctx.node("Pow", [data, ctx.const(3.0, dtype)])
        inner = ctx.node("Add", [data, ctx.node("Mul", [cube, ctx.const(0.044715, dtype)])])
        phi = ctx.node("Tanh", [ctx.node("Mul", [inner, ctx.const(math.sqrt(2 / math.pi), dtype)])])
    else:
        phi = ctx.node("Erf", [ctx.node("Div", [data, ctx.const(math.sqrt(2), dtype)])])
    return ctx.node("Mul", [half_x, ctx.node("Add", [phi, ctx.const(1.0, dtype)])])


def gelu_node(ctx: EmitContext, data: str, approximate: str, dtype: str) -> str:
    """ONNX `Gelu` since opset 20, its formula before (and for float64)."""
    if ctx.opset >= GELU_OPSET and dtype in _ORT_ACTIVATION_DTYPES:
        return ctx.node("Gelu", [data], approximate=approximate)
    return gelu(ctx, data, approximate, dtype)


@emits("nn.gelu")
def emit_gelu(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return gelu_node(ctx, args[0], call.attrs.approximate, ctx.type_of(call).dtype)


def hard_sigmoid(ctx: EmitContext, data: str, alpha: float, beta: float, dtype: str) -> str:
    """clip(alpha * x + beta, 0, 1): one `HardSigmoid` where ONNX Runtime has its kernel, else the formula."""
    if dtype in _ORT_ACTIVATION_DTYPES:
        return ctx.node("HardSigmoid", [data], alpha=alpha, beta=beta)
    linear = ctx.node("Add", [ctx.node("Mul", [data, ctx.const(alpha, dtype)]), ctx.const(beta, dtype)])
    return ctx.node("Clip", [linear, ctx.const(0.0, dtype), ctx.const(1.0, dtype)])


def sigmoid_gate(ctx: EmitContext, data: str, alpha: float, dtype: str) -> str:
    """x * sigmoid(alpha * x) as `Sigmoid` and `Mul` (SiLU when alpha is 1)."""
    scaled = data if alpha == 1.0 else ctx.node("Mul", [data, ctx.const(alpha, dtype)])
    return ctx.node("Mul", [data, ctx.node("Sigmoid", [scaled])])


@emits("nn.hard_sigmoid")
def emit_hard_sigmoid(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return hard_sigmoid(ctx, args[0], call.attrs.alpha, call.attrs.beta, ctx.type_of(call).dtype)


def hard_swish(ctx: EmitContext, data: str, dtype: str) -> str:
    """ONNX `HardSwish` since opset 14 (where ONNX Runtime runs it), x * HardSigmoid(x) otherwise."""
    if ctx.opset >= 14 and dtype in _ORT_ACTIVATION_DTYPES:
        return ctx.node("HardSwish", [data])
    return ctx.node("Mul", [data, hard_sigmoid(ctx, data, HARD_SWISH_ALPHA, HARD_SWISH_BETA, dtype)])


@emits("nn.hard_swish")
def emit_hard_swish(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return hard_swish(ctx, args[0], ctx.type_of(call).dtype)


@emits("nn.silu", "nn.quick_gelu")
def emit_sigmoid_gate(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    alpha = call.attrs.alpha if call.op.name == "nn.quick_gelu" else 1.0
    return sigmoid_gate(ctx, args[0], alpha, ctx.type_of(call).dtype)


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
