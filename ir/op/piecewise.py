"""Piecewise activations of ONNX: the ELU family, PReLU, Shrink, and instance normalization.

Relay spells ELU, SELU, CELU and Shrink out of `exp`/`where`; here each is one op, so a rewrite can
recognise the idiom once and the exporter writes the single ONNX node. `nn.prelu` keeps TVM's
form (one slope per channel along `axis`); the importer spells out other ONNX slope shapes.
`nn.instance_norm` keeps TVM's attributes.
"""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import TensorType, Type
from .registry import AttrField, OpPattern, register_op
from .shapes import dims_match, normalize_axis, same_dtype, tensor
from .tensor import float_unary_rel

#: ONNX Selu's defaults (float32 values of the constants of Klambauer et al., 2017)
SELU_ALPHA, SELU_GAMMA = 1.67326319217681884765625, 1.05070102214813232421875


def _nonzero(value: float) -> float:
    if value == 0:
        raise ValueError("must not be 0")
    return value


def _non_negative(value: float) -> float:
    if value < 0:
        raise ValueError(f"must not be negative, got {value}")
    return value


def numeric_unary_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if data.dtype == "bool":
        raise ShapeError("needs a numeric input, got bool")
    return data


def channel_vector(data: TensorType, vector: Type, axis: int, what: str) -> None:
    """Check that `vector` is 1-D along `axis` of `data`, in its dtype."""
    if data.ndim == 0:
        raise ShapeError(f"{what} runs along an axis of data, but data is a scalar")
    ax = normalize_axis(axis, data.ndim)
    vector = tensor(vector, what)
    if vector.ndim != 1 or not dims_match(vector.shape[0], data.shape[ax]):
        raise ShapeError(f"{what} {vector} must be 1-D of length {data.shape[ax]} (axis {axis} of {data})")
    same_dtype([data, vector], ["data", what])


def prelu_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = float_unary_rel(args[:1], attrs)
    channel_vector(data, args[1], attrs.axis, "alpha")
    return data


def instance_norm_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = float_unary_rel(args[:1], attrs)
    if data.ndim < 3:
        raise ShapeError(f"needs a batch, a channel and at least one spatial axis, got {data}")
    axis = normalize_axis(attrs.axis, data.ndim)
    if axis == 0:
        raise ShapeError("axis 0 is the batch axis; the channel axis must be another")
    for vector, what in zip(args[1:], ("gamma", "beta")):
        channel_vector(data, vector, axis, what)
    return data


E = OpPattern.ELEMWISE
register_op("nn.elu", ["data"], float_unary_rel, E, attrs=[AttrField("alpha", "float", 1.0)],
            doc="x for x > 0, else alpha * (exp(x) - 1) (ONNX Elu).")
register_op("nn.selu", ["data"], float_unary_rel, E,
            attrs=[AttrField("alpha", "float", SELU_ALPHA), AttrField("gamma", "float", SELU_GAMMA)],
            doc="gamma * (x for x > 0, else alpha * (exp(x) - 1)) (ONNX Selu).")
register_op("nn.celu", ["data"], float_unary_rel, E, attrs=[AttrField("alpha", "float", 1.0, convert=_nonzero)],
            doc="max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (ONNX Celu).")
register_op("nn.shrink", ["data"], numeric_unary_rel, E,
            attrs=[AttrField("lambd", "float", 0.5, convert=_non_negative), AttrField("bias", "float", 0.0)],
            doc="x + bias for x < -lambd, x - bias for x > lambd, else 0 (ONNX Shrink).")
register_op("nn.prelu", ["data", "alpha"], prelu_rel, OpPattern.BROADCAST, attrs=[AttrField("axis", "int", 1)],
            doc="x for x >= 0, else alpha[c] * x, alpha 1-D along `axis` (TVM's per-channel PReLU).")
register_op("nn.instance_norm", ["data", "gamma", "beta"], instance_norm_rel, OpPattern.OPAQUE,
            attrs=[AttrField("axis", "int", 1), AttrField("epsilon", "float", 1e-5),
                   AttrField("center", "bool", True), AttrField("scale", "bool", True)],
            doc="(x - mean) / sqrt(var + epsilon) * gamma + beta, the moments of each instance and channel "
                "taken over every axis but 0 and `axis` (ONNX InstanceNormalization).")
