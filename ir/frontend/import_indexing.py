"""Converters of ONNX indexing, scan and repeat ops: GatherElements, GatherND, ScatterND, OneHot, TopK,
CumSum, Tile and Trilu.

Where ONNX and TVM's forms differ the converter bridges them: GatherND's and ScatterND's index tuple
moves from the last axis of the indices to the first, OneHot's negative indices are counted from the end before
`one_hot` sees them, and a reversed CumSum becomes `reverse`, `cumsum`, `reverse`. Counts, axes and
repeats must be known at import (constants or computable from constants).
"""

from __future__ import annotations

import numpy as np

from ..expr import Expr
from ..op.indexing import INDEX_DTYPES
from ..op.shapes import known, normalize_axis
from .errors import FrontendError
from .import_context import NodeContext, converter


def _scalar_int(value: np.ndarray, what: str) -> int:
    """The one integer in `value` (a scalar or a 1-element tensor)."""
    if value.size != 1 or value.dtype.kind not in "iu":
        raise FrontendError(f"{what} must be one integer, got {value.dtype.name} values "
                            f"{value.reshape(-1)[:8].tolist()}")
    return int(value.reshape(-1)[0])


def _wrap_negative(ctx: NodeContext, indices: Expr, size: int) -> Expr:
    """`indices` with negative entries counted from the end of an axis of length `size`."""
    dtype = ctx.type_of(indices).dtype
    if (values := ctx.constant_value(indices)) is not None:
        return ctx.const(np.where(values < 0, values + size, values).astype(dtype))
    negative = ctx.call("less", indices, ctx.const(0, dtype))
    return ctx.call("where", negative, ctx.call("add", indices, ctx.const(size, dtype)), indices)


@converter("GatherElements")
def convert_gather_elements(ctx: NodeContext) -> Expr:
    data, indices = ctx.input(0), ctx.input(1)
    call = ctx.call("gather", data, indices, axis=ctx.attr("axis", 0))
    shape = ctx.type_of(data).shape
    axis = normalize_axis(call.attrs.axis, len(shape))
    if (values := ctx.constant_value(indices)) is not None and known(shape[axis]):
        if np.any((values < -shape[axis]) | (values >= shape[axis])):
            raise FrontendError(f"indices {values.reshape(-1)[:8].tolist()} leave axis {axis} of size {shape[axis]}")
    return call


def _tuple_first(ctx: NodeContext, indices: Expr) -> Expr:
    """ONNX's [Y..., M] indices as the IR's [M, Y...]."""
    rank = ctx.type_of(indices).ndim
    if rank == 0:
        raise FrontendError("indices must have at least one axis (the index tuple), got a scalar")
    if (values := ctx.constant_value(indices)) is not None:
        return ctx.const(np.moveaxis(values, -1, 0))
    return ctx.call("transpose", indices, axes=[rank - 1, *range(rank - 1)])


@converter("GatherND")
def convert_gather_nd(ctx: NodeContext) -> Expr:
    """GatherND; the index tuple moves from the last axis of the indices to the first."""
    data, indices = ctx.input(0), ctx.input(1)
    return ctx.call("gather_nd", data, _tuple_first(ctx, indices), batch_dims=ctx.attr("batch_dims", 0))


@converter("ScatterND")
def convert_scatter_nd(ctx: NodeContext) -> Expr:
    """ScatterND (reduction none, add, mul, min or max); the index tuple moves from the last axis of the
    indices to the first."""
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    reduction = ctx.attr("reduction", "none")
    if reduction not in ("none", "add", "mul", "min", "max"):
        raise ctx.unsupported("reduction", reduction, "use none, add, mul, min or max")
    return ctx.call("scatter_nd", data, _tuple_first(ctx, indices), updates,
                    mode="update" if reduction == "none" else reduction)


@converter("OneHot")
def convert_one_hot(ctx: NodeContext) -> Expr:
    indices, values = ctx.input(0), ctx.input(2)
    depth_value = ctx.static_input(1, "depth")
    if depth_value.size != 1 or not np.isfinite(depth_value).all():
        raise FrontendError(f"depth must be one finite number, got {depth_value.reshape(-1)[:8].tolist()}")
    depth = int(depth_value.reshape(-1)[0])
    value_type = ctx.type_of(values)
    if value_type.shape != (2,):
        raise FrontendError(f"values must be [off_value, on_value], shape (2,), got {value_type.shape_str()}")
    if (known_values := ctx.constant_value(values)) is not None:
        off_value, on_value = (ctx.const(v) for v in known_values)
    else:
        off_value, on_value = (ctx.call("take", values, ctx.const(np.int64(i)), axis=0, mode="fast") for i in (0, 1))
    if ctx.type_of(indices).dtype not in INDEX_DTYPES:  # ONNX converts any numeric indices to int64
        indices = ctx.call("cast", indices, dtype="int64")
    return ctx.call("one_hot", _wrap_negative(ctx, indices, depth), on_value, off_value, depth=depth,
                    axis=ctx.attr("axis", -1), dtype=value_type.dtype)


@converter("TopK")
def convert_topk(ctx: NodeContext) -> list[Expr]:
    """Values and int64 indices of the k largest (largest=0: smallest); sorted=0 gets them sorted too."""
    k = ctx.attr("k") if ctx.opset < 10 else _scalar_int(ctx.static_input(1, "K"), "K")
    if k < 1:
        raise FrontendError(f"K must be positive, got {k}")
    result = ctx.call("topk", ctx.input(0), k=k, axis=ctx.attr("axis", -1), is_ascend=not ctx.attr("largest", 1),
                      dtype="int64")
    return [ctx.item(result, 0), ctx.item(result, 1)]


@converter("CumSum")
def convert_cumsum(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    axis = normalize_axis(_scalar_int(ctx.static_input(1, "axis"), "axis"), ctx.type_of(data).ndim)
    reverse = bool(ctx.attr("reverse", 0))
    if reverse:
        data = ctx.call("reverse", data, axis=axis)
    out = ctx.call("cumsum", data, axis=axis, exclusive=bool(ctx.attr("exclusive", 0)))
    return ctx.call("reverse", out, axis=axis) if reverse else out


@converter("Tile")
def convert_tile(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    repeats = ctx.static_input(1, "repeats")
    ndim = ctx.type_of(data).ndim
    if repeats.shape != (ndim,) or repeats.dtype.kind not in "iu":
        raise FrontendError(f"repeats must be {ndim} integers, one per input axis, got {repeats.dtype.name} "
                            f"values of shape {list(repeats.shape)}")
    call = ctx.call("tile", data, reps=repeats.tolist())
    if (value := ctx.constant_value(data)) is not None:
        ctx.check_fold(ctx.type_of(call).concrete_shape, value.dtype)
        return ctx.const(np.tile(value, repeats))
    return call


@converter("Trilu")
def convert_trilu(ctx: NodeContext) -> Expr:
    k = _scalar_int(ctx.static_input(1, "k"), "k") if ctx.has_input(1) else 0
    return ctx.call("trilu", ctx.input(0), k=k, upper=bool(ctx.attr("upper", 1)))
