"""Layout and indexing ops: reshape, transpose, concatenate, split, squeeze, slices, take, broadcast_to."""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import Any, Dim, FloorDiv, TensorType, TupleType, Type, dim_min
from .registry import AttrField, OpPattern, register_op
from .shapes import (broadcast_shapes, dims_match, known, normalize_axis, product, same_dtype, symbolic, tensor,
                     transpose_axes)

INJ = OpPattern.INJECTIVE


def reshape_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    """`newshape` entries: n >= 1 a size, 0 copies the input's dim, -1 is inferred (at most once);
    with symbolic input dims the inferred one is their quotient, e.g. `(N, 8, 4, 4)` to `[0, -1]`
    gives `(N, 128)`."""
    data = tensor(args[0], "data")
    out: list[Dim] = []
    infer_at = None
    for i, n in enumerate(attrs.newshape):
        if n == 0:
            if i >= data.ndim:
                raise ShapeError(f"newshape {list(attrs.newshape)}: 0 at position {i} copies no input dimension")
            out.append(data.shape[i])
        elif n == -1:
            if infer_at is not None:
                raise ShapeError(f"newshape {list(attrs.newshape)} has more than one -1")
            infer_at = i
            out.append(Any)
        elif n > 0:
            out.append(n)
        else:
            raise ShapeError(f"newshape {list(attrs.newshape)}: {n} is not a size, 0 or -1")
    total = product(data.shape)
    if infer_at is not None:
        rest = product(out[:infer_at] + out[infer_at + 1:])
        if known(total) and known(rest):
            if rest == 0 or total % rest:
                raise ShapeError(f"cannot reshape {data} to {list(attrs.newshape)}")
            out[infer_at] = total // rest
        elif symbolic(total) and symbolic(rest) and not (known(rest) and rest == 0):
            quotient = total // rest
            out[infer_at] = Any if isinstance(quotient, FloorDiv) else quotient
    elif known(total) and known(product(out)) and total != product(out):
        raise ShapeError(f"cannot reshape {data} ({total} elements) to {list(attrs.newshape)}")
    return TensorType(out, data.dtype)


def transpose_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    axes = transpose_axes(attrs.axes, data.ndim)
    if sorted(axes) != list(range(data.ndim)):
        raise ShapeError(f"axes {list(attrs.axes)} are not a permutation of the {data.ndim} axes of {data}")
    return TensorType([data.shape[a] for a in axes], data.dtype)


def concatenate_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    tup = args[0]
    if not isinstance(tup, TupleType) or not tup.fields:
        raise ShapeError(f"needs a non-empty tuple of tensors, got {tup}")
    fields = [tensor(t, f"field {i}") for i, t in enumerate(tup.fields)]
    dtype = same_dtype(fields, [f"field {i}" for i in range(len(fields))])
    ndim = fields[0].ndim
    if any(f.ndim != ndim for f in fields):
        raise ShapeError(f"fields have different ranks: {', '.join(str(f) for f in fields)}")
    axis = normalize_axis(attrs.axis, ndim)
    out = list(fields[0].shape)
    for f in fields[1:]:
        for i, d in enumerate(f.shape):
            if i != axis and not dims_match(out[i], d):
                raise ShapeError(f"dimension {i} differs: {', '.join(str(f) for f in fields)}")
            if i != axis and not known(out[i]):
                out[i] = d
    sizes = [f.shape[axis] for f in fields]
    out[axis] = sum(sizes) if all(symbolic(s) for s in sizes) else Any
    return TensorType(out, dtype)


def split_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    axis = normalize_axis(attrs.axis, data.ndim)
    size = data.shape[axis]
    ios = attrs.indices_or_sections
    if isinstance(ios, int):
        if ios < 1:
            raise ShapeError(f"sections must be >= 1, got {ios}")
        if known(size) and size % ios:
            raise ShapeError(f"dimension {axis} of {data} does not split into {ios} equal sections")
        part = size // ios if known(size) else Any
        sizes = [part] * ios
    else:
        bounds = [0, *ios]
        if any(b > a for a, b in zip(bounds[1:], bounds)) or (known(size) and bounds[-1] > size):
            raise ShapeError(f"split indices {list(ios)} must be increasing and within {size}")
        sizes = [b - a for a, b in zip(bounds, bounds[1:])] + [size - bounds[-1] if known(size) else Any]
    fields = []
    for s in sizes:
        shape = list(data.shape)
        shape[axis] = s
        fields.append(TensorType(shape, data.dtype))
    return TupleType(fields)


def squeeze_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if attrs.axis is None:
        return TensorType([d for d in data.shape if d != 1], data.dtype)
    axes = {normalize_axis(a, data.ndim) for a in attrs.axis}
    for a in axes:
        if known(data.shape[a]) and data.shape[a] != 1:
            raise ShapeError(f"cannot squeeze axis {a} of size {data.shape[a]} in {data}")
    return TensorType([d for i, d in enumerate(data.shape) if i not in axes], data.dtype)


def expand_dims_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if attrs.num_newaxis < 0:
        raise ShapeError(f"num_newaxis must be >= 0, got {attrs.num_newaxis}")
    axis = normalize_axis(attrs.axis, data.ndim + 1)
    shape = list(data.shape)
    return TensorType(shape[:axis] + [1] * attrs.num_newaxis + shape[axis:], data.dtype)


def slice_bounds(size: int, begin: int, end: int, stride: int) -> range:
    """The indices a numpy-style slice selects (negative bounds count from the end, clipped)."""
    return range(size)[slice(begin, end, stride)]


def strided_slice_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    axes = list(range(len(attrs.begin))) if attrs.axes is None else [normalize_axis(a, data.ndim) for a in attrs.axes]
    strides = attrs.strides or (1,) * len(axes)
    if not (len(attrs.begin) == len(attrs.end) == len(axes) == len(strides)) or len(axes) > data.ndim:
        raise ShapeError(f"begin {list(attrs.begin)}, end {list(attrs.end)}, strides {list(strides)} and axes "
                         f"must have one entry per sliced axis of {data}")
    out = list(data.shape)
    for ax, b, e, s in zip(axes, attrs.begin, attrs.end, strides):
        if s == 0:
            raise ShapeError("a stride of 0 is not allowed")
        if attrs.slice_mode == "size" and known(data.shape[ax]):  # a negative begin counts from the end
            e = data.shape[ax] if e < 0 else (max(b + data.shape[ax], 0) if b < 0 else b) + e
        size = data.shape[ax]
        out[ax] = len(slice_bounds(size, b, e, s)) if known(size) else _sliced(size, b, e, s)
    return TensorType(out, data.dtype)


#: an end at least this large selects to the end of any dimension (ONNX exporters write INT64_MAX or INT32_MAX)
TO_THE_END = 2**31 - 1


def _sliced(size: Dim, begin: int, end: int, stride: int) -> Dim:
    """How many elements a unit-stride slice selects from a symbolic dimension: from a non-negative
    `begin` to the end (the dimension assumed at least `begin` long), the last `-begin`, or the first
    `end` (a `MinDim` where the dimension may be shorter); `Any` for other slices."""
    if stride != 1 or not symbolic(size):
        return Any
    if begin >= 0 and end >= TO_THE_END:
        return size - begin
    if begin < 0 and end >= TO_THE_END:
        return dim_min(size, -begin)
    if begin == 0 and end > 0:
        return dim_min(size, end)
    return Any


def take_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data, indices = tensor(args[0], "data"), tensor(args[1], "indices")
    if indices.dtype not in ("int32", "int64"):
        raise ShapeError(f"indices must be int32 or int64, got {indices.dtype}")
    if attrs.axis is None:
        return TensorType(indices.shape, data.dtype)
    axis = normalize_axis(attrs.axis, data.ndim)
    return TensorType(data.shape[:axis] + indices.shape + data.shape[axis + 1:], data.dtype)


def broadcast_to_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    out = broadcast_shapes(data.shape, attrs.shape)
    if len(out) != len(attrs.shape) or not all(dims_match(a, b) for a, b in zip(out, attrs.shape)):
        raise ShapeError(f"cannot broadcast {data} to {list(attrs.shape)}")
    return TensorType(attrs.shape, data.dtype)


register_op("reshape", ["data"], reshape_rel, INJ, attrs=[AttrField("newshape", "ints")])
register_op("transpose", ["data"], transpose_rel, INJ, attrs=[AttrField("axes", "ints?", None)])
register_op("concatenate", ["data"], concatenate_rel, INJ, attrs=[AttrField("axis", "int", 0)], tuple_input=True)
register_op("split", ["data"], split_rel, INJ,
            attrs=[AttrField("indices_or_sections", "int_or_ints"), AttrField("axis", "int", 0)])
register_op("squeeze", ["data"], squeeze_rel, INJ, attrs=[AttrField("axis", "axes", None)])
register_op("expand_dims", ["data"], expand_dims_rel, INJ,
            attrs=[AttrField("axis", "int"), AttrField("num_newaxis", "int", 1)])
register_op("strided_slice", ["data"], strided_slice_rel, INJ,
            attrs=[AttrField("begin", "ints"), AttrField("end", "ints"), AttrField("strides", "ints?", None),
                   AttrField("axes", "ints?", None),
                   AttrField("slice_mode", "str", "end", choices=("end", "size"))])
register_op("take", ["data", "indices"], take_rel, INJ,
            attrs=[AttrField("axis", "int?", None), AttrField("mode", "str", "clip", choices=("clip", "wrap", "fast"))],
            doc="data's entries at `indices` along `axis` (all of data, flattened, for None). Out-of-range "
                "indices are clamped (`clip`) or taken modulo the length (`wrap`); `fast` takes indices in "
                "[-n, n), a negative one counted from the end, as ONNX's Gather does (others are an error).")
register_op("broadcast_to", ["data"], broadcast_to_rel, OpPattern.BROADCAST, attrs=[AttrField("shape", "ints")])
