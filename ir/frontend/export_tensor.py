"""Emitters of layout, indexing and reduction IR ops.

Since opset 13 `Split`, `Squeeze`, `Unsqueeze` and `ReduceSum` take their axes/sizes as inputs;
the other reductions do so since opset 18 and take an attribute before.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..expr import Call, Constant, Expr
from ..op.shapes import known, normalize_axes, normalize_axis, transpose_axes
from ..types import is_static
from .errors import FrontendError
from .export_context import EmitContext, HeadSplit, Relayout, Value, emits

_INT64_MAX = np.iinfo(np.int64).max


#: the most steps a tracked relayout chains (each check replays them all)
_MAX_RELAYOUT_STEPS = 8


def relayout_of(ctx: EmitContext, expr: Expr, value: Value) -> Relayout | None:
    """How the computed value `value` of `expr` was rearranged from an earlier value (`ctx.relayouts`), or
    itself with no steps; None for a constant, a tuple, a symbolic shape or a value too large to track."""
    if not isinstance(value, str) or ctx.value_of(value) is not None:
        return None
    ty = ctx.type_of(expr)
    if not is_static(ty.shape) or int(np.prod(ty.concrete_shape)) > Relayout.MAX_ELEMENTS:
        return None
    known_steps = ctx.relayouts.get(value)
    if known_steps is not None and len(known_steps.steps) < _MAX_RELAYOUT_STEPS:
        return known_steps
    return Relayout(value, tuple(ty.concrete_shape))


def _relaid(ctx: EmitContext, call: Call, value: Value, kind: str, arg: Sequence[int] | None,
            emit: Callable[[], str]) -> Value:
    """A reshape or transpose (`kind`, `arg`) of `value`: where it undoes the earlier steps that made
    `value` from another one, a Reshape of that one (the steps' nodes are left out unless something
    else reads them); otherwise `emit()`, tracked as one more step."""
    before = relayout_of(ctx, call.args[0], value)
    if before is None or arg is None or not is_static(ctx.type_of(call).shape):
        return emit()
    after = before.then(kind, arg)
    shape = tuple(ctx.type_of(call).concrete_shape)
    if before.steps and after.is_plain_reshape():
        out = before.base if shape == before.shape else ctx.node("Reshape", [before.base, ctx.ints(shape)])
        after = Relayout(before.base, before.shape, (("reshape", shape),))
    else:
        out = emit()
    if out != before.base:
        ctx.relayouts[out] = after
    return out


def head_split_of(ctx: EmitContext, expr: Expr, value: Value) -> HeadSplit | None:
    """How `value` (of `expr`, a (batch, heads, sequence, size) value) was split off (batch, sequence,
    heads x size) tokens: as an emitter recorded it (`split_heads`), or where `expr` is
    `transpose(reshape(x, [0, 0, heads, size]), [0, 2, 1, 3])` (either may be -1) of a 3-D x whose last
    axis is heads x size, written as a Transpose of a Reshape of x (then recorded: an emitter that
    reads x instead leaves them out of the model unless something else reads them); else None."""
    if not isinstance(value, str):
        return None
    known_split = ctx.head_splits.get(value)
    if known_split is not None:
        return known_split if value != known_split.split else None
    if not (_is_call(expr, "transpose") and list(expr.attrs.axes or ()) == [0, 2, 1, 3]
            and _is_call(expr.args[0], "reshape")):
        return None
    newshape, data = list(expr.args[0].attrs.newshape), ctx.type_of(expr.args[0].args[0])
    heads, size = ctx.type_of(expr.args[0]).shape[2:] if len(newshape) == 4 else (None, None)
    if (len(newshape) != 4 or newshape[:2] != [0, 0] or not (known(heads) and known(size)) or data.ndim != 3
            or data.shape[-1] != heads * size or any(n not in (d, -1) for n, d in zip(newshape[2:], (heads, size)))):
        return None
    transposed = ctx.transposed(value)
    if transposed is None or transposed[1] != [0, 2, 1, 3]:
        return None
    made = ctx.producer(transposed[0])
    # the reshape as written from x itself (a relayout written as a reshape of an earlier value has its
    # static shape as its target, never [0, 0, ...])
    if made is None or made.op_type != "Reshape" or list(ctx.value_of(made.input[1]) if len(made.input) > 1
                                                         else ()) != newshape:
        return None
    split = HeadSplit(made.input[0], made.output[0], heads, size)
    ctx.head_splits[value] = ctx.head_splits[split.split] = split
    return split


def split_heads(ctx: EmitContext, tokens: str, heads: int, size: int) -> str:
    """(batch, sequence, heads x size) `tokens` as (batch, heads, sequence, size): a Reshape and a
    Transpose, recorded as a `HeadSplit` (a consumer that merges the heads back reads `tokens`)."""
    split = ctx.node("Reshape", [tokens, ctx.ints([0, 0, heads, size])])
    value = ctx.node("Transpose", [split], perm=[0, 2, 1, 3])
    ctx.head_splits[value] = ctx.head_splits[split] = HeadSplit(tokens, split, heads, size)
    return value


def _is_call(expr: Expr, name: str) -> bool:
    return isinstance(expr, Call) and getattr(expr.op, "name", None) == name


def _merged_heads(ctx: EmitContext, call: Call, value: Value) -> Value | None:
    """The (batch, sequence, heads x size) value a reshape `call` of `value` merges the heads of, where
    `value` is a `HeadSplit`'s `split` and the reshape is to `[0, 0, heads x size]` (or `-1` last)."""
    split = ctx.head_splits.get(value) if isinstance(value, str) else None
    if split is None or value != split.split:
        return None
    return split.tokens if list(call.attrs.newshape) in ([0, 0, split.heads * split.size], [0, 0, -1]) else None


@emits("reshape")
def emit_reshape(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """Reshape; one that puts a rearranged value back in its source's order reshapes the source instead."""
    merged = _merged_heads(ctx, call, args[0])
    if merged is not None:
        return merged
    shape = ctx.type_of(call).shape
    return _relaid(ctx, call, args[0], "reshape", tuple(shape) if is_static(shape) else None,
                   lambda: ctx.node("Reshape", [args[0], ctx.ints(call.attrs.newshape)]))


@emits("transpose")
def emit_transpose(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """Transpose; ONNX takes only non-negative `perm` entries, so negative axes are made positive. One
    that puts a rearranged value back in its source's order reshapes the source instead."""
    axes = call.attrs.axes
    ndim = ctx.type_of(call.args[0]).ndim
    perm = list(transpose_axes(axes, ndim))
    split = ctx.head_splits.get(args[0]) if isinstance(args[0], str) else None
    if split is not None and args[0] != split.split and perm == [0, 2, 1, 3]:
        return split.split  # the heads' transpose undone: the split itself
    return _relaid(ctx, call, args[0], "transpose", perm,
                   lambda: ctx.node("Transpose", args, perm=None if axes is None else perm))


@emits("concatenate")
def emit_concatenate(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """Concat, or one initializer where every part is one (weights merged by a rule are joined at export
    time, not by every run)."""
    values = [ctx.value_of(part) for part in args[0]]
    if all(v is not None for v in values):
        return ctx.const(np.concatenate(values, axis=call.attrs.axis))
    return ctx.node("Concat", list(args[0]), axis=call.attrs.axis)


@emits("split")
def emit_split(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    data = call.args[0]
    axis = normalize_axis(call.attrs.axis, ctx.type_of(data).ndim)
    sections = call.attrs.indices_or_sections
    if isinstance(sections, int):
        outputs = ctx.node("Split", args, outputs=sections, axis=axis,
                           num_outputs=sections if ctx.opset >= 18 else None)
    else:
        size = ctx.type_of(data).shape[axis]
        if not known(size):
            raise FrontendError(f"splitting at indices {list(sections)} needs a static dimension {axis}, "
                                f"got shape {ctx.type_of(data).shape_str()}")
        bounds = [0, *sections, size]
        sizes = [b - a for a, b in zip(bounds, bounds[1:])]
        outputs = ctx.node("Split", [args[0], ctx.ints(sizes)], outputs=len(sizes), axis=axis)
    return tuple(outputs) if isinstance(outputs, list) else (outputs,)


@emits("squeeze")
def emit_squeeze(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    axes = call.attrs.axis
    if axes == ():  # ONNX reads empty axes as "every unit axis"
        return ctx.node("Identity", args)
    return ctx.node("Squeeze", [args[0]] + ([] if axes is None else [ctx.ints(axes)]))


def unsqueeze(ctx: EmitContext, data: str, axes: Sequence[int]) -> str:
    """`data` with unit axes inserted at output positions `axes` (the input form of opset 13)."""
    return ctx.node("Unsqueeze", [data, ctx.ints(axes)]) if axes else data


@emits("expand_dims")
def emit_expand_dims(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    axis = normalize_axis(call.attrs.axis, ctx.type_of(call.args[0]).ndim + 1)
    if call.attrs.num_newaxis == 0:
        return ctx.node("Identity", args)
    return unsqueeze(ctx, args[0], range(axis, axis + call.attrs.num_newaxis))


@emits("strided_slice")
def emit_strided_slice(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    attrs = call.attrs
    begin, end = list(attrs.begin), list(attrs.end)
    axes = list(range(len(begin))) if attrs.axes is None else list(attrs.axes)
    strides = [1] * len(begin) if attrs.strides is None else list(attrs.strides)
    if attrs.slice_mode == "size":  # end holds sizes; a negative size runs to the end
        end = [_INT64_MAX if e < 0 else b + e for b, e in zip(begin, end)]
    return ctx.node("Slice", [args[0], ctx.ints(begin), ctx.ints(end), ctx.ints(axes), ctx.ints(strides)])


@emits("take")
def emit_take(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """Gather; `clip` clamps the indices into range and `wrap` takes them modulo the axis length."""
    data, indices = args
    data_expr, index_expr = call.args
    axis = call.attrs.axis
    if axis is None:
        data = ctx.node("Reshape", [data, ctx.ints([-1])])
        size = ctx.type_of(data_expr).num_elements()
        axis = 0
    else:
        axis = normalize_axis(axis, ctx.type_of(data_expr).ndim)
        size = ctx.type_of(data_expr).shape[axis]
    mode = call.attrs.mode
    if mode != "fast":
        dtype = ctx.type_of(index_expr).dtype
        if size is not None and known(size) and isinstance(index_expr, Constant):
            values = np.asarray(index_expr.data)
            fixed = np.clip(values, 0, size - 1) if mode == "clip" else np.mod(values, size)
            indices = ctx.const(fixed.astype(dtype))
        else:
            static = size is not None and known(size)
            if mode == "clip":
                last = (ctx.const(size - 1, dtype) if static
                        else ctx.node("Sub", [_run_time_length(ctx, data, axis, dtype), ctx.const(1, dtype)]))
                indices = ctx.node("Clip", [indices, ctx.const(0, dtype), last])
            else:
                length = ctx.const(size, dtype) if static else _run_time_length(ctx, data, axis, dtype)
                indices = ctx.node("Mod", [indices, length], fmod=0)
    return ctx.node("Gather", [data, indices], axis=axis)


def _run_time_length(ctx: EmitContext, data: Value, axis: int, dtype: str) -> Value:
    """The length of `data`'s `axis` as a scalar of `dtype`, read with Shape when the model runs."""
    length = ctx.node("Gather", [ctx.node("Shape", [data]), ctx.const(np.int64(axis))], axis=0)
    return length if dtype == "int64" else ctx.node("Cast", [length], to=ctx.elem(dtype))


@emits("broadcast_to")
def emit_broadcast_to(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("Expand", [args[0], ctx.ints(call.attrs.shape)])


@emits("nn.batch_flatten")
def emit_batch_flatten(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return ctx.node("Flatten", args, axis=1)


@emits("nn.pad")
def emit_pad(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    width = call.attrs.pad_width
    pads = [p[0] for p in width] + [p[1] for p in width]
    value = ctx.const(call.attrs.pad_value, ctx.type_of(call).dtype)
    return ctx.node("Pad", [args[0], ctx.ints(pads), value], mode=call.attrs.pad_mode)


# -- reductions ---------------------------------------------------------------------------------------

_REDUCE = {"sum": ("ReduceSum", 13), "mean": ("ReduceMean", 18), "max": ("ReduceMax", 18),
           "min": ("ReduceMin", 18), "prod": ("ReduceProd", 18)}


def reduced_axes(call: Call) -> tuple[int, ...]:
    """The axes a reduction (or arg-reduction) call reduces, non-negative and sorted."""
    ndim = call.args[0].checked_type.ndim
    axes = normalize_axes(call.attrs.axis, ndim)
    return tuple(a for a in range(ndim) if a not in axes) if call.attrs.exclude else axes


def reduce(ctx: EmitContext, op_type: str, data: str, axes: Sequence[int], keepdims: bool) -> str:
    """`op_type` over `axes` in the form the opset takes (an attribute, or an input since 13/18)."""
    input_since = 13 if op_type == "ReduceSum" else 18
    if ctx.opset >= input_since:
        return ctx.node(op_type, [data, ctx.ints(axes)], keepdims=int(keepdims))
    return ctx.node(op_type, [data], axes=list(axes), keepdims=int(keepdims))


@emits(*_REDUCE)
def emit_reduce(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    axes = reduced_axes(call)
    if not axes:  # ONNX reads empty axes as "every axis"
        return ctx.node("Identity", args)
    return reduce(ctx, _REDUCE[call.op.name][0], args[0], axes, call.attrs.keepdims)


@emits("argmax", "argmin")
def emit_arg_reduce(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """ArgMax/ArgMin over one axis; several axes are moved last and merged into one first, so the
    index counts in row-major order over the reduced block."""
    op_type = "ArgMax" if call.op.name == "argmax" else "ArgMin"
    ndim = ctx.type_of(call.args[0]).ndim
    axes, keepdims = reduced_axes(call), call.attrs.keepdims
    last = 1 if call.attrs.select_last_index else None
    if len(axes) == 1:
        index = ctx.node(op_type, args, axis=axes[0], keepdims=int(keepdims), select_last_index=last)
    else:
        kept = [a for a in range(ndim) if a not in axes]
        moved = ctx.node("Transpose", args, perm=kept + list(axes))
        merged = ctx.node("Reshape", [moved, ctx.ints([0] * len(kept) + [-1])])
        index = ctx.node(op_type, [merged], axis=len(kept), keepdims=0, select_last_index=last)
        if keepdims:
            index = unsqueeze(ctx, index, axes)
    return ctx.node("Cast", [index], to=ctx.elem("int32"))
