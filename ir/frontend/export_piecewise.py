"""Emitters of the piecewise activations and instance normalization (`ir.op.piecewise`).

ONNX Runtime runs `Elu`, `Selu` and `InstanceNormalization` only in float16/float32 and `Celu` only in
float32; other dtypes get the formula, in the graph's dtype.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..expr import Call, Constant
from ..op.shapes import normalize_axis
from .export_context import EmitContext, Value, emits
from .export_tensor import reduce

#: the dtypes ONNX Runtime has a kernel for, per op
_ORT_DTYPES = {"Elu": ("float16", "float32"), "Selu": ("float16", "float32"), "Celu": ("float32",),
               "InstanceNormalization": ("float16", "float32")}


def _elu_formula(ctx: EmitContext, data: str, alpha: float, dtype: str) -> str:
    """x for x > 0, else alpha * (exp(x) - 1), from the non-positive part of x (so exp never overflows)."""
    negative = ctx.node("Min", [data, ctx.const(0.0, dtype)])
    curve = ctx.node("Mul", [ctx.node("Sub", [ctx.node("Exp", [negative]), ctx.const(1.0, dtype)]),
                             ctx.const(alpha, dtype)])
    return ctx.node("Where", [ctx.node("Greater", [data, ctx.const(0.0, dtype)]), data, curve])


@emits("nn.elu", "nn.selu", "nn.celu")
def emit_elu_family(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    attrs, dtype, data = call.attrs, ctx.type_of(call).dtype, args[0]
    op_type = {"nn.elu": "Elu", "nn.selu": "Selu", "nn.celu": "Celu"}[call.op.name]
    if dtype in _ORT_DTYPES[op_type]:
        return ctx.node(op_type, args, alpha=attrs.alpha, gamma=attrs.get("gamma"))
    if op_type == "Celu":  # max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
        scaled = ctx.node("Div", [data, ctx.const(attrs.alpha, dtype)])
        curve = ctx.node("Mul", [ctx.node("Sub", [ctx.node("Exp", [scaled]), ctx.const(1.0, dtype)]),
                                 ctx.const(attrs.alpha, dtype)])
        zero = ctx.const(0.0, dtype)
        return ctx.node("Add", [ctx.node("Max", [data, zero]), ctx.node("Min", [curve, zero])])
    out = _elu_formula(ctx, data, attrs.alpha, dtype)
    return ctx.node("Mul", [out, ctx.const(attrs.gamma, dtype)]) if op_type == "Selu" else out


@emits("nn.shrink")
def emit_shrink(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("Shrink", args, lambd=call.attrs.lambd, bias=call.attrs.bias)


def channel_shape(channels: int | str, axis: int, ndim: int) -> list:
    """The shape [C, 1, ...] that ONNX broadcasting aligns with `axis` of a rank-`ndim` tensor."""
    return [channels] + [1] * (ndim - 1 - axis)


@emits("nn.prelu")
def emit_prelu(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """PRelu with the per-channel slope shaped [C, 1, ...] (ONNX broadcasts the slope from the right)."""
    ndim = ctx.type_of(call).ndim
    axis = normalize_axis(call.attrs.axis, ndim)
    shape = channel_shape(-1, axis, ndim)
    if isinstance(call.args[1], Constant):
        slope = ctx.const(np.asarray(call.args[1].data).reshape(shape))
    else:
        slope = args[1] if axis == ndim - 1 else ctx.node("Reshape", [args[1], ctx.ints(shape)])
    return ctx.node("PRelu", [args[0], slope])


@emits("nn.instance_norm")
def emit_instance_norm(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """InstanceNormalization for channels at axis 1 with scale and shift in the dtypes ONNX Runtime runs it
    in; the formula otherwise."""
    attrs, ty = call.attrs, ctx.type_of(call)
    axis = normalize_axis(attrs.axis, ty.ndim)
    if axis == 1 and attrs.center and attrs.scale and ty.dtype in _ORT_DTYPES["InstanceNormalization"]:
        return ctx.node("InstanceNormalization", args, epsilon=attrs.epsilon)
    data, gamma, beta = args
    spatial = [i for i in range(1, ty.ndim) if i != axis]
    centered = ctx.node("Sub", [data, reduce(ctx, "ReduceMean", data, spatial, keepdims=True)])
    var = reduce(ctx, "ReduceMean", ctx.node("Mul", [centered, centered]), spatial, keepdims=True)
    std = ctx.node("Sqrt", [ctx.node("Add", [var, ctx.const(attrs.epsilon, ty.dtype)])])
    out = ctx.node("Div", [centered, std])
    shape = ctx.ints(channel_shape(-1, axis, ty.ndim))
    if attrs.scale:
        out = ctx.node("Mul", [out, ctx.node("Reshape", [gamma, shape])])
    return ctx.node("Add", [out, ctx.node("Reshape", [beta, shape])]) if attrs.center else out
