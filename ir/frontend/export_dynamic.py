"""Emitters of the ops over run-time shapes (`ir.op.dynamic`): ONNX's own `Shape`, `Reshape`,
`Expand` and `Slice`, whose shape inputs are tensors."""

from __future__ import annotations

from typing import Sequence

from ..expr import Call
from .errors import FrontendError
from .export_context import EmitContext, Value, emits
from .export_indexing import as_int64

#: the first opset whose Reshape takes `allowzero`
ALLOWZERO_OPSET = 14


def _shape_args(ctx: EmitContext, call: Call, args: Sequence[Value]) -> list[Value]:
    return [args[0]] + [as_int64(ctx, a, e) for a, e in zip(args[1:], call.args[1:])]


@emits("shape_of")
def emit_shape_of(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    shape = ctx.node("Shape", args)
    return shape if call.attrs.dtype == "int64" else ctx.node("Cast", [shape], to=ctx.elem(call.attrs.dtype))


@emits("argwhere")
def emit_argwhere(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """NonZero gives one row per axis; argwhere one row per position."""
    rows = ctx.node("Transpose", [ctx.node("NonZero", args)], perm=[1, 0])
    return rows if call.attrs.dtype == "int64" else ctx.node("Cast", [rows], to=ctx.elem(call.attrs.dtype))


@emits("dyn.reshape")
def emit_dyn_reshape(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    if not call.attrs.allowzero:
        return ctx.node("Reshape", _shape_args(ctx, call, args))
    if ctx.opset < ALLOWZERO_OPSET:
        raise FrontendError(f"dyn.reshape(allowzero=True) needs opset {ALLOWZERO_OPSET} or later, got {ctx.opset}")
    return ctx.node("Reshape", _shape_args(ctx, call, args), allowzero=1)


@emits("dyn.expand")
def emit_dyn_expand(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("Expand", _shape_args(ctx, call, args))


@emits("dyn.strided_slice")
def emit_dyn_strided_slice(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    data, begin, end, strides = _shape_args(ctx, call, args)
    return ctx.node("Slice", [data, begin, end, ctx.ints(list(call.attrs.axes)), strides])
