"""Emitters of the indexing, scan and generating ops (`ir.op.indexing`, `ir.op.scan`, `ir.op.generate`).

The IR keeps TVM's forms where ONNX differs: `gather_nd` and `scatter_nd` indices lead with the index
tuple (ONNX puts it last, and takes only int64), `one_hot` gives no position to a negative index (ONNX counts
it from the end), `topk` may return int32 indices (ONNX gives int64).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..expr import Call, Constant, Expr
from ..op.shapes import known, normalize_axis
from .errors import FrontendError
from .export_context import EmitContext, Value, emits

#: scatter_nd mode -> the first opset whose ScatterND takes it as `reduction`
SCATTER_REDUCTION_OPSETS = {"add": 16, "mul": 16, "min": 18, "max": 18}
#: the first opset with `Trilu`
TRILU_OPSET = 14


def as_int64(ctx: EmitContext, value: str, expr: Expr) -> str:
    """`value` (of IR `expr`) as int64, the only index type some ONNX ops take."""
    return value if ctx.type_of(expr).dtype == "int64" else ctx.node("Cast", [value], to=ctx.elem("int64"))


@emits("gather")
def emit_gather(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("GatherElements", args, axis=call.attrs.axis)


def _tuple_last(ctx: EmitContext, value: str, indices: Expr) -> str:
    """The IR's [M, Y...] indices as ONNX's int64 [Y..., M]: the value a Transpose moved the tuple to the
    front from (the import's own, for indices computed in the model), else a Transpose of them."""
    rank = ctx.type_of(indices).ndim
    value = as_int64(ctx, value, indices)
    made = ctx.transposed(value)
    if made is not None and made[1] == [rank - 1, *range(rank - 1)]:
        ctx.bypassable[value] = made[0]  # left out when nothing else reads it
        return made[0]
    return ctx.node("Transpose", [value], perm=[*range(1, rank), 0])


@emits("gather_nd")
def emit_gather_nd(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    data, indices = args
    return ctx.node("GatherND", [data, _tuple_last(ctx, indices, call.args[1])], batch_dims=call.attrs.batch_dims)


@emits("scatter_nd")
def emit_scatter_nd(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    data, indices, updates = args
    indices = _tuple_last(ctx, indices, call.args[1])
    mode = call.attrs.mode
    if mode != "update" and ctx.opset < SCATTER_REDUCTION_OPSETS[mode]:
        raise FrontendError(f"scatter_nd(mode={mode!r}) needs opset {SCATTER_REDUCTION_OPSETS[mode]} or newer "
                            f"(ScatterND's reduction), not {ctx.opset}")
    return ctx.node("ScatterND", [data, indices, updates], reduction=None if mode == "update" else mode)


#: the output dtypes ONNX Runtime's OneHot gives from int64 indices and depth
_ORT_ONE_HOT_DTYPES = ("float32", "int64")


@emits("one_hot")
def emit_one_hot(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """OneHot where ONNX Runtime has the kernel, with negative indices moved past the end (where ONNX,
    too, gives them no position); otherwise `Where` of the indices equal to each position."""
    indices, on_value, off_value = args
    index_expr, attrs = call.args[0], call.attrs
    ndim = ctx.type_of(index_expr).ndim
    axis = normalize_axis(attrs.axis, ndim + 1)
    if attrs.dtype not in _ORT_ONE_HOT_DTYPES:
        positions = np.arange(attrs.depth, dtype="int64").reshape([attrs.depth] + [1] * (ndim - axis))
        column = ctx.node("Unsqueeze", [as_int64(ctx, indices, index_expr), ctx.ints([axis])])
        return ctx.node("Where", [ctx.node("Equal", [column, ctx.const(positions)]), on_value, off_value])
    if isinstance(index_expr, Constant):
        values = np.asarray(index_expr.data)
        indices = ctx.const(np.where(values < 0, attrs.depth, values).astype("int64"))
    else:
        indices = as_int64(ctx, indices, index_expr)
        negative = ctx.node("Less", [indices, ctx.const(np.int64(0))])
        indices = ctx.node("Where", [negative, ctx.const(np.int64(attrs.depth)), indices])
    pair = ctx.node("Concat", [ctx.node("Reshape", [v, ctx.ints([1])]) for v in (off_value, on_value)], axis=0)
    return ctx.node("OneHot", [indices, ctx.ints([attrs.depth]), pair], axis=axis)


@emits("cumsum")
def emit_cumsum(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    data, axis = args[0], call.attrs.axis
    if axis is None:
        data, axis = ctx.node("Reshape", [data, ctx.ints([-1])]), 0
    return ctx.node("CumSum", [data, ctx.const(np.int64(axis))], exclusive=int(call.attrs.exclusive))


@emits("reverse")
def emit_reverse(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    start, end = ctx.ints([-1]), ctx.ints([np.iinfo(np.int64).min])
    return ctx.node("Slice", [args[0], start, end, ctx.ints([call.attrs.axis]), ctx.ints([-1])])


@emits("topk")
def emit_topk(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    attrs, data = call.attrs, ctx.type_of(call.args[0])
    axis = normalize_axis(attrs.axis, data.ndim)
    k = attrs.k
    if k < 1:
        if not known(data.shape[axis]):
            raise FrontendError(f"topk(k={k}) selects every element: it needs a static axis {axis}, "
                                f"got shape {data.shape_str()}")
        k = data.shape[axis]
    values, indices = ctx.node("TopK", [args[0], ctx.ints([k])], outputs=2, axis=axis,
                               largest=int(not attrs.is_ascend), sorted=1)
    if attrs.dtype != "int64":
        indices = ctx.node("Cast", [indices], to=ctx.elem(attrs.dtype))
    return {"both": (values, indices), "values": values, "indices": indices}[attrs.ret_type]


@emits("tile")
def emit_tile(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """Tile, after padding the shorter of the input's rank and `reps` with leading 1s (numpy's rule)."""
    data, ndim, reps = args[0], ctx.type_of(call.args[0]).ndim, list(call.attrs.reps)
    if len(reps) > ndim:
        data = ctx.node("Unsqueeze", [data, ctx.ints(range(len(reps) - ndim))])
    reps = [1] * (ndim - len(reps)) + reps
    return ctx.node("Tile", [data, ctx.ints(reps)])


@emits("trilu")
def emit_trilu(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """Trilu since opset 14; before, `Where` over a constant mask of the (static) last two axes."""
    attrs, ty = call.attrs, ctx.type_of(call)
    if ctx.opset >= TRILU_OPSET:
        return ctx.node("Trilu", [args[0], ctx.const(np.int64(attrs.k))], upper=int(attrs.upper))
    rows, cols = ctx.static_shape(call, f"trilu before opset {TRILU_OPSET} (a constant mask)")[-2:]
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = offset >= attrs.k if attrs.upper else offset <= attrs.k
    return ctx.node("Where", [ctx.const(keep), args[0], ctx.const(np.zeros((), ty.dtype))])


@emits("arange")
def emit_arange(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("Range", args)
