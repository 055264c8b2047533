"""Ops whose shapes are known only at run time (TVM's `shape_of`, `argwhere` and `dyn.*` ops).

They carry ONNX models whose `Reshape`, `Expand` or `Slice` arguments depend on values only a run
knows (a shape fed as a graph input, a bound computed from a symbolic dimension that no static
form can express). Their results have `Any` dimensions where the shape depends on those values,
and the executor selects kernels per actual shape when it runs. The arguments follow ONNX's
conventions (a 0 in a reshape target copies the input's dimension, an expansion broadcasts both
ways), since these ops exist to carry imported programs.
"""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import Any, Dim, TensorType, Type
from .registry import AttrField, OpPattern, register_op
from .shapes import known, normalize_axis, tensor

_INDEX_DTYPES = ("int32", "int64")


def _shape_vector(t: Type, what: str) -> int:
    """The length of a 1-D integer tensor of sizes or positions; it must be static (it is a rank)."""
    value = tensor(t, what)
    if value.ndim != 1 or value.dtype not in _INDEX_DTYPES:
        raise ShapeError(f"the {what} must be a 1-D int32 or int64 tensor, got {value}")
    if not known(value.shape[0]) or not isinstance(value.shape[0], int):
        raise ShapeError(f"the {what} must have a static length (it fixes the rank), got {value}")
    return value.shape[0]


def argwhere_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    if attrs.dtype not in _INDEX_DTYPES:
        raise ShapeError(f"argwhere gives int32 or int64 positions, not {attrs.dtype}")
    condition = tensor(args[0], "condition")
    if condition.ndim == 0:
        raise ShapeError("argwhere needs a condition of rank 1 or more, got a scalar")
    return TensorType([Any, condition.ndim], attrs.dtype)


def shape_of_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    if attrs.dtype not in _INDEX_DTYPES:
        raise ShapeError(f"shape_of gives int32 or int64, not {attrs.dtype}")
    return TensorType([tensor(args[0], "data").ndim], attrs.dtype)


def dyn_reshape_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    rank = _shape_vector(args[1], "target shape")
    return TensorType([Any] * rank, data.dtype)


def _expanded(have: Dim) -> Dim:
    """An expanded dimension: a size other than 1 stays (the target may only repeat it or say 1)."""
    return have if known(have) and have != 1 else Any


def dyn_expand_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    rank = max(data.ndim, _shape_vector(args[1], "target shape"))
    padded = (1,) * (rank - data.ndim) + tuple(data.shape)
    return TensorType([_expanded(d) for d in padded], data.dtype)


def dyn_strided_slice_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    lengths = {_shape_vector(t, what) for t, what in zip(args[1:], ("begin", "end", "strides"))}
    axes = [normalize_axis(a, data.ndim) for a in attrs.axes]
    if lengths != {len(axes)} or len(set(axes)) != len(axes):
        raise ShapeError(f"begin, end and strides must each have one entry per sliced axis {list(attrs.axes)} "
                         f"(distinct axes of {data})")
    return TensorType([Any if i in axes else d for i, d in enumerate(data.shape)], data.dtype)


register_op("shape_of", ["data"], shape_of_rel, OpPattern.OPAQUE,
            attrs=[AttrField("dtype", "dtype", "int64")],
            doc="The shape of data as a 1-D tensor, read at run time (TVM's shape_of; ONNX Shape).")
register_op("argwhere", ["condition"], argwhere_rel, OpPattern.OPAQUE,
            attrs=[AttrField("dtype", "dtype", "int64")],
            doc="The positions of condition's non-zero elements, one row each in row-major order: a "
                "(count, rank) tensor whose count only a run knows (TVM's argwhere; ONNX NonZero transposed).")
register_op("dyn.reshape", ["data", "newshape"], dyn_reshape_rel, OpPattern.INJECTIVE,
            attrs=[AttrField("allowzero", "bool", False)],
            doc="data reshaped to a target known at run time: a 0 copies the input's dimension at its "
                "position (a zero-size dimension with allowzero), one -1 is inferred (ONNX Reshape with a "
                "computed shape; TVM's dyn.reshape).")
register_op("dyn.expand", ["data", "shape"], dyn_expand_rel, OpPattern.BROADCAST,
            doc="data and a shape known at run time broadcast together, each dimension the larger of the "
                "two where the other is 1 (ONNX Expand with a computed shape).")
register_op("dyn.strided_slice", ["data", "begin", "end", "strides"], dyn_strided_slice_rel, OpPattern.INJECTIVE,
            attrs=[AttrField("axes", "ints")],
            doc="Slices of the given axes with bounds and steps known at run time, clamped and counted "
                "from the end when negative as ONNX Slice does (TVM's dyn.strided_slice, with axes).")
