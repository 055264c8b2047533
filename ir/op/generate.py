"""Tensors built by repeating, masking or counting: tile, trilu, arange."""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import Any, TensorType, Type
from .registry import AttrField, OpPattern, register_op
from .shapes import known, tensor


def _non_negative(values: tuple[int, ...]) -> tuple[int, ...]:
    if any(v < 0 for v in values):
        raise ValueError(f"repeats must not be negative, got {list(values)}")
    return values


def tile_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    """numpy's tile: the shorter of shape and reps is padded with leading 1s."""
    data = tensor(args[0], "data")
    rank = max(data.ndim, len(attrs.reps))
    shape = (1,) * (rank - data.ndim) + data.shape
    reps = (1,) * (rank - len(attrs.reps)) + attrs.reps
    dims = [d * r if known(d) or r == 0 else (d if r == 1 else Any) for d, r in zip(shape, reps)]
    return TensorType(dims, data.dtype)


def trilu_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if data.ndim < 2:
        raise ShapeError(f"needs a matrix or a batch of matrices, got {data}")
    return data


def arange_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    for t, what in zip(args, ("start", "stop", "step")):
        value = tensor(t, what)
        if value.ndim != 0 or value.dtype != attrs.dtype:
            raise ShapeError(f"{what} {value} must be a scalar of dtype {attrs.dtype}")
    if attrs.dtype == "bool":
        raise ShapeError("cannot count in bool")
    return TensorType([Any], attrs.dtype)


register_op("tile", ["data"], tile_rel, OpPattern.BROADCAST,
            attrs=[AttrField("reps", "ints", convert=_non_negative)],
            doc="data repeated reps[i] times along each axis (numpy's tile; ONNX Tile).")
register_op("trilu", ["data"], trilu_rel, OpPattern.INJECTIVE,
            attrs=[AttrField("k", "int", 0), AttrField("upper", "bool", True)],
            doc="The upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes, zeros elsewhere "
                "(ONNX Trilu; TVM's `k` input is an attribute here).")
register_op("arange", ["start", "stop", "step"], arange_rel, OpPattern.OPAQUE,
            attrs=[AttrField("dtype", "dtype", "float32")],
            doc="start, start + step, ... while before stop, from scalar tensors known at run time (its "
                "length is too); ONNX Range. Constant bounds fold to a constant at import.")
