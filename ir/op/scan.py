"""Ops that walk one axis: cumsum, reverse and topk (TVM's names and attributes)."""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import Any, TensorType, TupleType, Type
from .indexing import INDEX_DTYPES
from .registry import AttrField, OpPattern, register_op
from .shapes import known, normalize_axis, tensor


def _axis_of(data: TensorType, axis: int) -> int:
    if data.ndim == 0:
        raise ShapeError(f"axis {axis} of a scalar: needs at least one axis")
    return normalize_axis(axis, data.ndim)


def _numeric(t: Type) -> TensorType:
    data = tensor(t, "data")
    if data.dtype == "bool":
        raise ShapeError("needs a numeric input, got bool")
    return data


def cumsum_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = _numeric(args[0])
    if attrs.axis is None:
        size = data.num_elements()
        return TensorType([Any if size is None else size], data.dtype)
    _axis_of(data, attrs.axis)
    return data


def reverse_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    _axis_of(data, attrs.axis)
    return data


def topk_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = _numeric(args[0])
    axis = _axis_of(data, attrs.axis)
    if attrs.dtype not in INDEX_DTYPES:
        raise ShapeError(f"the indices' dtype must be int32 or int64, got {attrs.dtype}")
    size = data.shape[axis]
    if attrs.k >= 1 and known(size) and attrs.k > size:
        raise ShapeError(f"k = {attrs.k} is more than the {size} elements along axis {attrs.axis} of {data}")
    shape = list(data.shape)
    if attrs.k >= 1:
        shape[axis] = attrs.k
    values, indices = TensorType(shape, data.dtype), TensorType(shape, attrs.dtype)
    return {"both": TupleType([values, indices]), "values": values, "indices": indices}[attrs.ret_type]


register_op("cumsum", ["data"], cumsum_rel, OpPattern.OPAQUE,
            attrs=[AttrField("axis", "int?", None), AttrField("exclusive", "bool", False)],
            doc="Running sums along `axis` (over the flattened input when None); `exclusive` leaves each "
                "element out of its own sum.")
register_op("reverse", ["data"], reverse_rel, OpPattern.INJECTIVE, attrs=[AttrField("axis", "int")],
            doc="data with the order along `axis` reversed.")
register_op("topk", ["data"], topk_rel, OpPattern.OPAQUE,
            attrs=[AttrField("k", "int", 1), AttrField("axis", "int", -1),
                   AttrField("ret_type", "str", "both", choices=("both", "values", "indices")),
                   AttrField("is_ascend", "bool", False), AttrField("dtype", "dtype", "int32")],
            doc="The k largest (is_ascend: smallest) elements along `axis` in order, and their indices; equal "
                "values keep their index order; k < 1 selects every element.")
