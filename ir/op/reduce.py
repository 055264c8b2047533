"""Reductions over axes: sum, mean, max, min, prod, argmax, argmin."""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..types import TensorType, Type
from .registry import AttrField, OpPattern, register_op
from .shapes import normalize_axes, tensor


def reduced_shape(data: TensorType, attrs: Attrs) -> list:
    axes = set(normalize_axes(attrs.axis, data.ndim))
    if attrs.exclude:
        axes = set(range(data.ndim)) - axes
    if attrs.keepdims:
        return [1 if i in axes else d for i, d in enumerate(data.shape)]
    return [d for i, d in enumerate(data.shape) if i not in axes]


def reduce_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    return TensorType(reduced_shape(data, attrs), data.dtype)


def arg_reduce_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    return TensorType(reduced_shape(data, attrs), "int32")


REDUCE_ATTRS = [AttrField("axis", "axes", None), AttrField("keepdims", "bool", False),
                AttrField("exclude", "bool", False)]
for _name in ("sum", "mean", "max", "min", "prod"):
    register_op(_name, ["data"], reduce_rel, OpPattern.COMM_REDUCE, attrs=REDUCE_ATTRS)
for _name in ("argmax", "argmin"):
    register_op(_name, ["data"], arg_reduce_rel, OpPattern.COMM_REDUCE,
                attrs=[*REDUCE_ATTRS, AttrField("select_last_index", "bool", False)],
                doc="The index of the first (select_last_index: last) extreme value over the reduced axes, "
                    "counted in row-major order over them.")
