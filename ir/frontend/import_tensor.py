"""Converters of ONNX shape, layout, indexing and reduction ops, and of constants.

The ops that shape computations are made of (`Shape`, `ConstantOfShape`, `Reshape`, `Concat`,
`Gather`, `Slice`, `Squeeze`/`Unsqueeze`, `Expand`, ...) fold to constants when their data inputs
are constant; `Shape` and `Size` fold whenever the input's shape has no `Any` dimension, to a
symbolic shape value where it has symbolic ones (see `import_fold`). `Reshape`, `Expand` and `Slice`
take symbolic shape arguments into static attributes where the IR can express them:
`Shape -> Gather(0) -> Concat([N, -1]) -> Reshape` becomes `reshape(newshape=[0, -1])`. Where it
cannot, or the argument is known only at run time, they become `dyn.reshape`, `dyn.expand` and
`dyn.strided_slice` (and `Shape` of a tensor with an `Any` dimension `shape_of`); a symbolic value
they read is computed from the graph inputs' shapes (`import_dims`). A fold that would allocate
more than the import's cap is refused before it allocates (`NodeContext.check_fold`), except a
broadcast of a constant (`ConstantOfShape`, `Expand`), which stays a lazy `broadcast_to` instead.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import ShapeError
from ..expr import Call, Expr
from ..op.registry import Op
from ..op.shapes import broadcast_shapes, known, normalize_axes, normalize_axis, product, symbolic
from ..types import Dim, SizeVar, SymbolicDim
from .errors import FrontendError
from .import_context import NodeContext, converter
from .import_fold import is_symbolic, symbolic_names


def _ints(values, what: str = "the value") -> list[int]:
    """Integers known at import; symbolic dimensions are refused with an error naming `what`."""
    array = np.asarray(values)
    if is_symbolic(array):
        raise FrontendError(f"{what} [{', '.join(map(str, array.reshape(-1)))}] depends on symbolic dimensions "
                            f"({symbolic_names(array)}); it must be static (give static shapes with "
                            f"from_onnx(shape=...))")
    if array.size and array.dtype.kind not in "biuO":
        raise FrontendError(f"expected integers, got {array.dtype.name} values {array.reshape(-1)[:8].tolist()}")
    return [int(v) for v in array.reshape(-1)]


def _dims(values) -> list[Dim]:
    """Integers or symbolic dimensions known at import (a shape argument)."""
    array = np.asarray(values)
    if not is_symbolic(array):
        return _ints(array)
    return [v if isinstance(v, SymbolicDim) else int(v) for v in array.reshape(-1)]


def _axes_operand(ctx: NodeContext, input_since: int, index: int = 1) -> list[int] | None:
    """`axes` from the attribute (before opset `input_since`) or from input `index` (since it)."""
    if ctx.opset < input_since:
        axes = ctx.attr("axes", None)
    else:
        axes = ctx.optional_static(index, "axes")
    return None if axes is None else _ints(axes)


def _axis(axis: int, ndim: int) -> int:
    """`axis` made non-negative; one out of range raises a `ShapeError` naming it (a scalar has no axes)."""
    if ndim == 0:
        raise FrontendError(f"axis {axis} of a scalar: the input needs rank 1 or more")
    return normalize_axis(axis, ndim)


def _normalized(axes: Sequence[int], ndim: int) -> list[int]:
    """Axes made non-negative; an out-of-range axis raises an error that names it."""
    return [_axis(a, ndim) for a in axes]


# -- pass-through and constants ---------------------------------------------------------------------

@converter("Identity")
def convert_identity(ctx: NodeContext) -> Expr:
    return ctx.input(0)


@converter("Dropout")
def convert_dropout(ctx: NodeContext) -> list[Expr]:
    """Inference dropout passes its input through; the mask output is not supported."""
    training = ctx.optional_static(2, "training_mode") if ctx.opset >= 12 else None
    if training is not None and bool(training):
        raise ctx.unsupported("training_mode", bool(training), "only inference graphs are imported")
    return [ctx.input(0)]


@converter("Constant")
def convert_constant(ctx: NodeContext) -> Expr:
    for key, dtype in (("value", None), ("value_float", "float32"), ("value_floats", "float32"),
                       ("value_int", "int64"), ("value_ints", "int64")):
        if ctx.has_attr(key):
            return ctx.const(ctx.attr(key), dtype)
    given = [a.name for a in ctx.node.attribute]
    raise FrontendError(f"a Constant needs a numeric tensor value; attribute(s) {given} are not supported")


@converter("ConstantOfShape")
def convert_constant_of_shape(ctx: NodeContext) -> Expr:
    """A constant; over a symbolic shape, the fill value broadcast to it (see `Expand`); over a shape
    known only at run time, `dyn.expand` of the fill value."""
    fill = ctx.attr("value", np.zeros(1, "float32"))
    if fill.size != 1:
        raise FrontendError(f"the fill value must hold one element, got shape {list(fill.shape)}")
    value = ctx.graph.static_value(ctx.input(0))
    if value is None:
        return ctx.call("dyn.expand", ctx.const(fill.reshape(())), ctx.input(0))
    shape = _dims(value)
    if not all(known(d) for d in shape):
        return _expand_symbolic(ctx, ctx.const(fill.reshape(())), shape)
    return _broadcast_constant(ctx, fill.reshape(()), shape)


def _broadcast_constant(ctx: NodeContext, value: np.ndarray, shape: Sequence[int]) -> Expr:
    """Constant `value` broadcast to static `shape`: a folded constant within the fold cap, else a lazy
    `broadcast_to` of `value` (a splat, e.g. a `ConstantOfShape` weight, holds one element until a
    kernel reads it)."""
    if ctx.fits_fold(shape, value.dtype):
        return ctx.const(np.broadcast_to(value, shape))  # the constant copies it once
    return ctx.call("broadcast_to", ctx.const(value), shape=list(shape))


def _folded_shape(ctx: NodeContext) -> list[Dim] | None:
    """The input's shape, static or symbolic; None where it has an `Any` dimension (read at run time)."""
    shape = ctx.type_of(ctx.input(0)).shape
    return list(shape) if all(symbolic(d) for d in shape) else None


@converter("Shape")
def convert_shape(ctx: NodeContext) -> Expr:
    """A constant (a symbolic shape value over size variables); `shape_of`, read at run time, when the
    input has an `Any` dimension."""
    shape = _folded_shape(ctx)
    start, end = ctx.attr("start", 0), ctx.attr("end", None)  # opset 15 slices the shape
    if shape is not None:
        return ctx.const(np.array(shape[slice(start, end)], dtype=object), "int64")
    read = ctx.call("shape_of", ctx.input(0), dtype="int64")
    if (start, end) == (0, None):
        return read
    return ctx.call("strided_slice", read, begin=[start], end=[_TO_THE_END if end is None else end], axes=[0])


@converter("Size")
def convert_size(ctx: NodeContext) -> Expr:
    shape = _folded_shape(ctx)
    if shape is not None:
        return ctx.const(np.array(product(shape), dtype=object), "int64")
    return ctx.call("prod", ctx.call("shape_of", ctx.input(0), dtype="int64"), axis=None)


@converter("Range")
def convert_range(ctx: NodeContext) -> Expr:
    """A constant when the bounds are known at import; else `arange`, whose length is known at run time
    (a bound that is a symbolic dimension is computed from the graph inputs' shapes)."""
    bounds = [ctx.input(i) for i in range(3)]
    values = [ctx.graph.static_value(b) for b in bounds]
    if any(v is None or is_symbolic(v) for v in values):
        return ctx.call("arange", *bounds, dtype=ctx.type_of(bounds[0]).dtype)
    start, limit, delta = values
    if any(v.size != 1 for v in (start, limit, delta)):
        raise FrontendError(f"start, limit and delta must be scalars, got shapes "
                            f"{[list(v.shape) for v in (start, limit, delta)]}")
    span = (limit.item() - start.item()) / delta.item() if delta.item() else math.inf
    if not math.isfinite(span):
        raise FrontendError(f"start, limit and delta must be finite and delta must not be 0, got "
                            f"{start.item()}, {limit.item()}, {delta.item()}")
    ctx.check_fold([max(math.ceil(span), 0)], start.dtype)
    return ctx.const(np.arange(start.item(), limit.item(), delta.item()).astype(start.dtype))


# -- layout -------------------------------------------------------------------------------------------

def _reshape_target(target: list[Dim], shape: Sequence[Dim]) -> list[int] | None:
    """A Reshape target with symbolic entries as `reshape` attributes: an entry equal to the input's
    dimension at its position copies it (0), and one other symbolic entry is inferred (-1); None
    when the symbolic entries have no such form."""
    out: list[int | None] = []
    for i, d in enumerate(target):
        if isinstance(d, SymbolicDim):
            out.append(0 if i < len(shape) and shape[i] == d else None)
        else:
            out.append(d)
    left = [i for i, d in enumerate(out) if d is None]
    if len(left) > 1 or (left and -1 in out):
        return None
    if left:
        out[left[0]] = -1
    return out  # type: ignore[return-value]


@converter("Reshape")
def convert_reshape(ctx: NodeContext) -> Expr:
    """A static `reshape`, or `dyn.reshape` when the target is known only at run time or has symbolic
    entries that no static target expresses."""
    data, target = ctx.input(0), ctx.input(1)
    allowzero = ctx.attr("allowzero", 0)
    value = ctx.graph.static_value(target)
    dims = None if value is None else _dims(value)
    newshape = None if dims is None else _reshape_target(dims, ctx.type_of(data).shape)
    if newshape is None:
        return ctx.call("dyn.reshape", data, target, allowzero=bool(allowzero))
    if allowzero and any(isinstance(d, int) and d == 0 for d in dims):  # a symbolic entry's copy (0) is fine
        raise ctx.unsupported("allowzero", 1, "a 0 in the target shape must copy the input dimension")
    call = ctx.call("reshape", data, newshape=newshape)  # typing it checks the target against the input
    if (value := ctx.constant_value(data)) is not None:
        return ctx.const(value.reshape(ctx.type_of(call).concrete_shape))
    return call


@converter("Flatten")
def convert_flatten(ctx: NodeContext) -> Expr:
    """A `reshape` to the product of the dimensions before `axis` by that of the rest: a static target
    when either part is static (the other inferred) or the leading part is one dimension (copied);
    otherwise `dyn.reshape` to the leading product read at run time."""
    data = ctx.input(0)
    shape = ctx.type_of(data).shape
    axis = ctx.attr("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    leading, trailing = shape[:axis], shape[axis:]
    if all(known(d) for d in leading):
        newshape = [math.prod(leading), -1]
    elif all(known(d) for d in trailing) and math.prod(trailing) > 0:
        newshape = [-1, math.prod(trailing)]
    elif axis == 1:
        newshape = [0, -1]
    else:
        sizes = ctx.call("strided_slice", ctx.call("shape_of", data, dtype="int64"), begin=[0], end=[axis], axes=[0])
        target = ctx.call("concatenate", [ctx.call("prod", sizes, axis=[0], keepdims=True),
                                          ctx.const(np.array([-1], np.int64))], axis=0)
        return ctx.call("dyn.reshape", data, target)
    if (value := ctx.constant_value(data)) is not None:
        return ctx.const(value.reshape(newshape))
    return ctx.call("reshape", data, newshape=newshape)


@converter("Transpose")
def convert_transpose(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    perm = ctx.attr("perm", None)
    call = ctx.call("transpose", data, axes=perm)  # typing it checks that perm is a permutation
    if (value := ctx.constant_value(data)) is not None:
        return ctx.const(np.transpose(value, perm))
    return call


@converter("Concat")
def convert_concat(ctx: NodeContext) -> Expr:
    parts = ctx.inputs()
    axis = ctx.attr("axis")
    call = ctx.call("concatenate", parts, axis=axis)  # typing it checks the parts' shapes
    values = [ctx.constant_value(p) for p in parts]
    if all(v is not None for v in values):
        return ctx.const(np.concatenate(values, axis=axis))
    return call


@converter("Split")
def convert_split(ctx: NodeContext) -> list[Expr]:
    data = ctx.input(0)
    ty = ctx.type_of(data)
    axis = _axis(ctx.attr("axis", 0), ty.ndim)
    size = ty.shape[axis]
    sizes = ctx.attr("split", None) if ctx.opset < 13 else ctx.optional_static(1, "split sizes")
    count = ctx.num_outputs
    if sizes is not None:
        sizes = _ints(sizes)
        if len(sizes) != count or (known(size) and sum(sizes) != size):
            raise FrontendError(f"split sizes {sizes} do not cut dimension {axis} (size {size}) into {count} outputs")
    elif known(size) and size % count:  # opset 18: the last part is the smaller one
        part = -(-size // count)
        sizes = [part] * (count - 1) + [size - part * (count - 1)]
    if sizes is None or len(set(sizes)) == 1:
        sections = count
    else:
        sections = np.cumsum(sizes)[:-1].tolist()
    parts = ctx.call("split", data, indices_or_sections=sections, axis=axis)
    return [ctx.item(parts, i) for i in range(count)]


def _onnx_slice_start(start: int, step: int, dim) -> int:
    """ONNX clamps a negative-step start below the first element to the first element; Python
    slicing would select nothing, so make the start 0 when the dimension is known."""
    if step < 0 and known(dim) and start < -dim:
        return 0
    return start


#: an end that selects to the end of any dimension
_TO_THE_END = 2**63 - 1


def _static_bound(bound: Dim, size: Dim) -> bool:
    """Whether a slice bound has a static form: an int, or the dimension's size plus a constant."""
    return isinstance(bound, int) or (known(size) and known(bound - size))


def _slice_bound(bound: Dim, size: Dim) -> int:
    """A slice bound with a static form as an int; the size plus a constant counts from the end (a
    negative offset) or is past it."""
    if isinstance(bound, int):
        return bound
    offset = bound - size
    return offset if offset < 0 else _TO_THE_END


def _computed_slice(ctx: NodeContext, data: Expr) -> Expr:
    """Slice whose starts, ends or steps are known only at run time (or are symbolic with no static
    form): `dyn.strided_slice` over the given axes, which must be known at import."""
    count = ctx.static_shape(ctx.input(1), "a slice with computed bounds")[0]
    axes = ctx.optional_static(3, "axes")
    axes = _normalized(range(count) if axes is None else _ints(axes, "axes"), ctx.type_of(data).ndim)
    steps = ctx.input(4) if ctx.has_input(4) else ctx.const(np.ones(count, np.int64))
    return ctx.call("dyn.strided_slice", data, ctx.input(1), ctx.input(2), steps, axes=axes)


@converter("Slice")
def convert_slice(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    shape = ctx.type_of(data).shape
    if ctx.opset < 10:
        starts, ends, axes, steps = ctx.attr("starts"), ctx.attr("ends"), ctx.attr("axes", None), None
    elif any(ctx.has_input(i) and ctx.graph.static_value(ctx.input(i)) is None for i in (1, 2, 4)):
        return _computed_slice(ctx, data)
    else:
        starts, ends = ctx.static_input(1, "starts"), ctx.static_input(2, "ends")
        axes, steps = ctx.optional_static(3, "axes"), ctx.optional_static(4, "steps")
    starts, ends = _dims(starts), _dims(ends)
    axes = _normalized(range(len(starts)) if axes is None else _ints(axes, "axes"), len(shape))
    steps = [1] * len(starts) if steps is None else _ints(steps, "steps")
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise FrontendError(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    if not all(_static_bound(b, shape[a]) for a, b in zip(axes * 2, starts + ends)):
        return _computed_slice(ctx, data)
    starts = [_slice_bound(b, shape[a]) for a, b in zip(axes, starts)]
    ends = [_slice_bound(e, shape[a]) for a, e in zip(axes, ends)]
    starts = [_onnx_slice_start(b, s, shape[a]) for a, b, s in zip(axes, starts, steps)]
    call = ctx.call("strided_slice", data, begin=starts, end=ends, strides=steps, axes=axes)  # checks the steps
    if (value := ctx.constant_value(data)) is not None:
        index = [slice(None)] * value.ndim
        for a, b, e, s in zip(axes, starts, ends, steps):
            index[a] = slice(b, e, s)
        return ctx.const(value[tuple(index)])
    return call


@converter("Squeeze")
def convert_squeeze(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    axes = _axes_operand(ctx, 13) or None  # no axes, or empty ones: every unit axis
    if axes is not None:
        axes = _normalized(axes, ctx.type_of(data).ndim)
    call = ctx.call("squeeze", data, axis=axes)  # typing it checks that the axes have length 1
    if (value := ctx.constant_value(data)) is not None:
        return ctx.const(value.reshape(ctx.type_of(call).concrete_shape))
    return call


@converter("Unsqueeze")
def convert_unsqueeze(ctx: NodeContext) -> Expr:
    """Unsqueeze axes index the output; inserting them in ascending order keeps every index valid."""
    data = ctx.input(0)
    axes = _axes_operand(ctx, 13)
    if axes is None:
        raise FrontendError("Unsqueeze needs axes")
    axes = normalize_axes(axes, ctx.type_of(data).ndim + len(axes))
    if (value := ctx.constant_value(data)) is not None:
        return ctx.const(np.expand_dims(value, tuple(axes)))
    runs: list[list[int]] = []  # consecutive axes become one expand_dims
    for a in axes:
        if runs and runs[-1][0] + runs[-1][1] == a:
            runs[-1][1] += 1
        else:
            runs.append([a, 1])
    for start, count in runs:
        data = ctx.call("expand_dims", data, axis=start, num_newaxis=count)
    return data


@converter("Expand")
def convert_expand(ctx: NodeContext) -> Expr:
    """A static `broadcast_to` (or a broadcast against tensors that carry the symbolic dimensions), or
    `dyn.expand` when the target is known only at run time or the result's shape has no static form."""
    data, target_input = ctx.input(0), ctx.input(1)
    value = ctx.graph.static_value(target_input)
    if value is None:
        return ctx.call("dyn.expand", data, target_input)
    target = _dims(value)
    shape = ctx.type_of(data).shape
    try:
        out = broadcast_shapes(shape, target)
    except ShapeError as err:
        raise FrontendError(f"cannot expand shape {ctx.type_of(data).shape_str()} to {target}: {err}") from None
    if not all(symbolic(d) for d in out):
        return ctx.call("dyn.expand", data, target_input)
    if tuple(out) == tuple(shape):
        return data
    if not all(known(d) for d in out):
        return _expand_symbolic(ctx, data, out)
    if (value := ctx.constant_value(data)) is not None:
        return _broadcast_constant(ctx, value, out)
    return ctx.call("broadcast_to", data, shape=list(out))


def _expand_symbolic(ctx: NodeContext, data: Expr, out: Sequence[Dim]) -> Expr:
    """`data` broadcast to `out`, which has symbolic dimensions (`broadcast_to` takes only static
    shapes): `where(True, data, carrier)` against a carrier of each dimension `data` lacks, zeros for a
    static one and a one-element-wide slice of the graph input that has it for a size variable."""
    ty = ctx.type_of(data)
    padded = (1,) * (len(out) - ty.ndim) + tuple(ty.shape)
    static = [d if known(d) and d != have else 1 for d, have in zip(out, padded)]
    carriers = [ctx.const(np.zeros(static, ty.dtype))] if any(d != 1 for d in static) else []
    for axis, (d, have) in enumerate(zip(out, padded)):
        if not known(d) and d != have:
            carriers.append(_dimension_carrier(ctx, d, axis, len(out), ty.dtype))
    for carrier in carriers:
        data = ctx.call("where", ctx.const(np.array(True)), data, carrier)
    return data


def _dimension_carrier(ctx: NodeContext, dim: Dim, axis: int, ndim: int, dtype: str) -> Expr:
    """A rank-`ndim` tensor of `dtype` whose only dimension other than 1 is `dim`, at `axis`: the first
    element of every other axis of the graph input that declares `dim`."""
    source = ctx.graph.dimension_source(dim) if isinstance(dim, SizeVar) else None
    if source is None:
        raise FrontendError(f"cannot broadcast to dimension {dim}: no graph input declares it, and the IR "
                            f"broadcasts only to static shapes or to tensors that have the dimension")
    var, source_axis = source
    others = [a for a in range(ctx.type_of(var).ndim) if a != source_axis]
    carrier = var
    if others:
        carrier = ctx.call("strided_slice", var, begin=[0] * len(others), end=[1] * len(others), axes=others)
    carrier = ctx.call("reshape", carrier, newshape=[-1 if a == axis else 1 for a in range(ndim)])
    return carrier if ctx.type_of(carrier).dtype == dtype else ctx.call("cast", carrier, dtype=dtype)


@converter("Pad")
def convert_pad(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    ndim = ctx.type_of(data).ndim
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        raise ctx.unsupported("mode", mode, "use constant, reflect or edge")
    if ctx.opset < 11:
        pads, value, axes = _ints(ctx.attr("pads")), float(ctx.attr("value", 0.0)), None
    else:
        pads = _ints(ctx.static_input(1, "pads"), "pads")
        fill = ctx.optional_static(2, "constant_value")
        value = 0.0 if fill is None or fill.size == 0 else float(fill.reshape(-1)[0])
        axes = ctx.optional_static(3, "axes") if ctx.opset >= 18 else None
    axes = list(range(ndim)) if axes is None else _normalized(_ints(axes), ndim)
    if len(pads) != 2 * len(axes):
        raise FrontendError(f"pads {pads} must have 2 x {len(axes)} entries")
    if any(p < 0 for p in pads):
        raise FrontendError(f"negative pads {pads} (cropping) are not supported")
    width = [[0, 0] for _ in range(ndim)]
    for i, a in enumerate(axes):
        width[a] = [pads[i], pads[i + len(axes)]]
    return ctx.call("nn.pad", data, pad_width=width, pad_value=value, pad_mode=mode)


# -- indexing -----------------------------------------------------------------------------------------

@converter("NonZero")
def convert_nonzero(ctx: NodeContext) -> Expr:
    """ONNX NonZero: one row per axis of the positions of the non-zero elements (argwhere transposed)."""
    data = ctx.input(0)
    if (value := ctx.constant_value(data)) is not None and value.dtype != object and value.ndim > 0:
        return ctx.const(np.array(np.nonzero(value), dtype=np.int64).reshape(value.ndim, -1))
    return ctx.call("transpose", ctx.call("argwhere", data, dtype="int64"), axes=[1, 0])


def _static_dims_read(ctx: NodeContext, data: Expr, indices: np.ndarray) -> Expr | None:
    """Entries of a run-time `shape_of(t)` whose dimensions of `t` are static, as a constant (a
    TorchScript export reads `cos.shape[-1]` of a tensor whose other axes are not known)."""
    if not (isinstance(data, Call) and isinstance(data.op, Op) and data.op.name == "shape_of"):
        return None
    dims = np.asarray(np.take(np.array(ctx.type_of(data.args[0]).shape, dtype=object), indices), dtype=object)
    if not all(known(d) for d in dims.reshape(-1)):
        return None
    return ctx.const(dims.astype(np.int64), ctx.type_of(data).dtype)


@converter("Gather")
def convert_gather(ctx: NodeContext) -> Expr:
    data, indices = ctx.input(0), ctx.input(1)
    shape = ctx.type_of(data).shape
    if ctx.type_of(indices).dtype not in ("int32", "int64"):
        raise FrontendError(f"indices must be int32 or int64, got {ctx.type_of(indices).dtype}")
    axis = _axis(ctx.attr("axis", 0), len(shape))
    index_values = ctx.constant_value(indices)
    if index_values is not None and is_symbolic(index_values):
        _ints(index_values, "the indices")
    if index_values is None:  # ONNX's indices: in [-n, n), negatives counted from the end, as `fast` takes them
        return ctx.call("take", data, indices, axis=axis, mode="fast")
    size = shape[axis]
    if known(size):
        if np.any((index_values < -size) | (index_values >= size)):
            raise FrontendError(f"indices {index_values.tolist()} are out of range for dimension {axis} of size {size}")
        index_values = np.where(index_values < 0, index_values + size, index_values).astype(index_values.dtype)
    if (value := ctx.constant_value(data)) is not None:
        return ctx.const(np.take(value, index_values, axis=axis))
    if (dims := _static_dims_read(ctx, data, index_values)) is not None:
        return dims
    return ctx.call("take", data, ctx.const(index_values), axis=axis, mode="fast")


# -- reductions ---------------------------------------------------------------------------------------

_REDUCE = {  # ONNX op -> (IR reduction, opset since which axes is an input)
    "ReduceSum": ("sum", 13), "ReduceMean": ("mean", 18), "ReduceMax": ("max", 18), "ReduceMin": ("min", 18),
    "ReduceProd": ("prod", 18), "ReduceSumSquare": ("sum", 18), "ReduceL1": ("sum", 18), "ReduceL2": ("sum", 18),
}


@converter(*_REDUCE)
def convert_reduce(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    op, input_since = _REDUCE[ctx.op_type]
    axes = _axes_operand(ctx, input_since)
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0):
            return data
        axes = None
    if ctx.op_type in ("ReduceSumSquare", "ReduceL2"):
        data = ctx.call("multiply", data, data)
    elif ctx.op_type == "ReduceL1":
        data = ctx.call("abs", data)
    out = ctx.call(op, data, axis=axes, keepdims=bool(ctx.attr("keepdims", 1)))
    return ctx.call("sqrt", out) if ctx.op_type == "ReduceL2" else out


@converter("ArgMax", "ArgMin")
def convert_arg_reduce(ctx: NodeContext) -> Expr:
    op = "argmax" if ctx.op_type == "ArgMax" else "argmin"
    index = ctx.call(op, ctx.input(0), axis=ctx.attr("axis", 0), keepdims=bool(ctx.attr("keepdims", 1)),
                     select_last_index=bool(ctx.attr("select_last_index", 0)))
    return ctx.call("cast", index, dtype="int64")  # ONNX indices are int64, the IR's int32
