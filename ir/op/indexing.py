"""Ops that read or write a tensor at computed positions: gather, gather_nd, scatter_nd, one_hot (TVM's
fusion kinds).

They keep TVM's forms: `gather` is ONNX GatherElements (TVM's argument order aside: data, indices,
then `axis`); `gather_nd` and `scatter_nd` take their indices index-tuple first, [M, Y...] (ONNX
puts the tuple last, [Y..., M]); `one_hot` takes scalar on/off values and an output dtype.
"""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import TensorType, Type
from .registry import AttrField, OpPattern, register_op
from .shapes import dims_match, known, normalize_axis, same_dtype, tensor

INDEX_DTYPES = ("int32", "int64")


def index_tensor(t: Type, what: str = "indices") -> TensorType:
    """`t` as a tensor of int32 or int64 indices."""
    t = tensor(t, what)
    if t.dtype not in INDEX_DTYPES:
        raise ShapeError(f"{what} must be int32 or int64, got {t.dtype}")
    return t


def _positive(value: int) -> int:
    if value < 1:
        raise ValueError(f"must be at least 1, got {value}")
    return value


def gather_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data, indices = tensor(args[0], "data"), index_tensor(args[1])
    if data.ndim == 0 or indices.ndim != data.ndim:
        raise ShapeError(f"indices {indices} must have the rank of data {data}, at least 1")
    axis = normalize_axis(attrs.axis, data.ndim)
    for i, (size, count) in enumerate(zip(data.shape, indices.shape)):
        if i != axis and known(size) and known(count) and count > size:
            raise ShapeError(f"dimension {i} of indices {indices} is longer than that of data {data}")
    return TensorType(indices.shape, data.dtype)


def gather_nd_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data, indices = tensor(args[0], "data"), index_tensor(args[1])
    batch = attrs.batch_dims
    if indices.ndim == 0 or not known(indices.shape[0]):
        raise ShapeError(f"indices {indices} must lead with a static index length M")
    depth = indices.shape[0]
    if batch < 0 or indices.ndim - 1 < batch:
        raise ShapeError(f"batch_dims={batch} needs indices {indices} with at least {batch} axes after M")
    if not 1 <= depth <= data.ndim - batch:
        raise ShapeError(f"indices {indices} index {depth} axes after {batch} batch axes, but data {data} "
                         f"has {data.ndim}")
    if not all(dims_match(a, b) for a, b in zip(indices.shape[1:1 + batch], data.shape[:batch])):
        raise ShapeError(f"the {batch} batch axes of indices {indices} (after M) must be those of data {data}")
    return TensorType(indices.shape[1:] + data.shape[batch + depth:], data.dtype)


def scatter_nd_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data, indices, updates = tensor(args[0], "data"), index_tensor(args[1]), tensor(args[2], "updates")
    same_dtype([data, updates], ["data", "updates"])
    if indices.ndim == 0 or not known(indices.shape[0]):
        raise ShapeError(f"indices {indices} must lead with a static index length M")
    depth = indices.shape[0]
    if not 1 <= depth <= data.ndim:
        raise ShapeError(f"indices {indices} index {depth} axes, but data {data} has {data.ndim}")
    expected = indices.shape[1:] + data.shape[depth:]
    if updates.ndim != len(expected) or not all(dims_match(a, b) for a, b in zip(updates.shape, expected)):
        shape = ", ".join(map(str, expected))
        raise ShapeError(f"updates {updates} must have shape ({shape}): indices[1:] then data[{depth}:]")
    return data


def one_hot_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    indices = index_tensor(args[0])
    for t, what in zip(args[1:], ("on_value", "off_value")):
        value = tensor(t, what)
        if value.ndim != 0 or value.dtype != attrs.dtype:
            raise ShapeError(f"{what} {value} must be a scalar of the output dtype {attrs.dtype}")
    axis = normalize_axis(attrs.axis, indices.ndim + 1)
    return TensorType(indices.shape[:axis] + (attrs.depth,) + indices.shape[axis:], attrs.dtype)


register_op("gather", ["data", "indices"], gather_rel, OpPattern.INJECTIVE, attrs=[AttrField("axis", "int", 0)],
            doc="out[i..] = data[i.. with i[axis] replaced by indices[i..]]; a negative index counts from "
                "the end (ONNX GatherElements).")
register_op("gather_nd", ["data", "indices"], gather_nd_rel, OpPattern.INJECTIVE,
            attrs=[AttrField("batch_dims", "int", 0)],
            doc="out[y..] = data[b.., indices[:, y..]]: indices [M, Y...] address M axes of data after its "
                "first `batch_dims` axes, which are also the first axes of Y (ONNX GatherND with indices moved "
                "last to first); a negative index counts from the end.")
register_op("scatter_nd", ["data", "indices", "updates"], scatter_nd_rel, OpPattern.OPAQUE,
            attrs=[AttrField("mode", "str", "update", choices=("update", "add", "mul", "min", "max"))],
            doc="data with data[indices[:, y..]] set to updates[y..] (or combined with it by `mode`: add, mul, "
                "min, max; repeated positions combine every update); "
                "indices [M, Y...] address the first M axes (ONNX ScatterND with indices moved last to first).")
register_op("one_hot", ["indices", "on_value", "off_value"], one_hot_rel, OpPattern.OUT_ELEMWISE_FUSABLE,
            attrs=[AttrField("depth", "int", convert=_positive), AttrField("axis", "int", -1),
                   AttrField("dtype", "dtype", "float32")],
            doc="on_value where the new `axis` position equals the index, off_value elsewhere (also for an "
                "index outside [0, depth)).")
