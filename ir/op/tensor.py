"""Element-wise and broadcasting ops: activations, arithmetic, comparisons, clip, cast, where."""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import TensorType, Type
from .registry import AttrField, OpPattern, register_op
from .shapes import broadcast_shapes, same_dtype, tensor

FLOAT_DTYPES = ("float16", "float32", "float64", "bfloat16")


def unary_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    return tensor(args[0], "data")


def float_unary_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    t = tensor(args[0], "data")
    if t.dtype not in FLOAT_DTYPES:
        raise ShapeError(f"needs a floating-point input, got {t.dtype}")
    return t


def broadcast_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    a, b = tensor(args[0], "lhs"), tensor(args[1], "rhs")
    dtype = same_dtype([a, b], ["lhs", "rhs"])
    return TensorType(broadcast_shapes(a.shape, b.shape), dtype)


def compare_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    out = broadcast_rel(args, attrs)
    return TensorType(out.shape, "bool")


def logical_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    out = broadcast_rel(args, attrs)
    if out.dtype != "bool":
        raise ShapeError(f"needs bool inputs, got {out.dtype}")
    return out


def cast_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    return TensorType(tensor(args[0], "data").shape, attrs.dtype)


def where_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    cond, x, y = (tensor(t, n) for t, n in zip(args, ("condition", "x", "y")))
    if cond.dtype != "bool":
        raise ShapeError(f"condition must be bool, got {cond.dtype}")
    dtype = same_dtype([x, y], ["x", "y"])
    return TensorType(broadcast_shapes(broadcast_shapes(cond.shape, x.shape), y.shape), dtype)


E = OpPattern.ELEMWISE
for _name in ("negative", "abs", "copy", "sign"):
    register_op(_name, ["data"], unary_rel, E)
for _name in ("nn.relu",):
    register_op(_name, ["data"], unary_rel, E)
for _name in ("sigmoid", "tanh", "erf", "exp", "log", "sqrt", "rsqrt", "floor", "ceil", "round", "sin", "cos"):
    register_op(_name, ["data"], float_unary_rel, E)
register_op("logical_not", ["data"], unary_rel, E)
register_op("nn.leaky_relu", ["data"], unary_rel, E, attrs=[AttrField("alpha", "float", 0.01)])
register_op("nn.gelu", ["data"], float_unary_rel, E,
            attrs=[AttrField("approximate", "str", "none", choices=("none", "tanh"))],
            doc="Gaussian error linear unit: x * Phi(x), exact (erf) or with the tanh approximation.")
register_op("clip", ["data"], unary_rel, E, attrs=[AttrField("a_min", "float"), AttrField("a_max", "float")])
register_op("cast", ["data"], cast_rel, E, attrs=[AttrField("dtype", "dtype")])

B = OpPattern.BROADCAST
for _name in ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "floor_divide", "mod",
              "floor_mod"):
    register_op(_name, ["lhs", "rhs"], broadcast_rel, B)
for _name in ("less", "greater", "less_equal", "greater_equal", "equal", "not_equal"):
    register_op(_name, ["lhs", "rhs"], compare_rel, B)
for _name in ("logical_and", "logical_or"):
    register_op(_name, ["lhs", "rhs"], logical_rel, B)
register_op("where", ["condition", "x", "y"], where_rel, B)
