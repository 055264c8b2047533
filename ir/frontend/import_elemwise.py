"""Converters of element-wise ONNX ops: arithmetic, comparisons, logic, activations, Cast, Clip, Where.

Arithmetic, comparisons and `Cast` of constants are folded with numpy (they appear in shape
computations); everything else becomes IR calls.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from ..expr import Call, Expr
from ..op.shapes import dims_match, known
from ..op.tensor import FLOAT_DTYPES
from .errors import FrontendError
from .export_elemwise import FLOAT_FLOOR_MOD_OPSET
from .import_context import NodeContext, converter
from .onnx_types import dtype_of_elem

_UNARY = {
    "Relu": "nn.relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
    "Abs": "abs", "Neg": "negative", "Erf": "erf", "Floor": "floor", "Ceil": "ceil", "Round": "round",
    "Sign": "sign", "Not": "logical_not", "IsNaN": "isnan", "Sin": "sin", "Cos": "cos",
}


def _truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ONNX `Div`: true division for floats, rounding toward zero for integers."""
    if np.issubdtype(np.result_type(a, b), np.integer):
        return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(np.result_type(a, b))
    return np.divide(a, b)


_BINARY: dict[str, tuple[str, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = {
    "Add": ("add", np.add), "Sub": ("subtract", np.subtract), "Mul": ("multiply", np.multiply),
    "Div": ("divide", _truncating_divide),
    "Equal": ("equal", np.equal), "Less": ("less", np.less), "Greater": ("greater", np.greater),
    "LessOrEqual": ("less_equal", np.less_equal), "GreaterOrEqual": ("greater_equal", np.greater_equal),
    "And": ("logical_and", np.logical_and), "Or": ("logical_or", np.logical_or),
    "Xor": ("not_equal", np.not_equal),
}


@converter(*_UNARY)
def convert_unary(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    if ctx.op_type in ("Neg", "Not", "Abs") and (value := ctx.constant_value(data)) is not None:
        fold = {"Neg": np.negative, "Not": np.logical_not, "Abs": np.abs}[ctx.op_type]
        return ctx.const(fold(value))
    return ctx.call(_UNARY[ctx.op_type], data)


@converter("IsInf")
def convert_isinf(ctx: NodeContext) -> Expr:
    """`isinf`, narrowed to one sign by `detect_positive=0` or `detect_negative=0`."""
    data = ctx.input(0)
    positive, negative = ctx.attr("detect_positive", 1), ctx.attr("detect_negative", 1)
    infinite = ctx.call("isinf", data)
    if positive and negative:
        return infinite
    if not (positive or negative):
        return ctx.call("logical_and", infinite, ctx.const(np.zeros((), bool)))
    side = ctx.call("greater" if positive else "less", data, ctx.const(0, ctx.type_of(data).dtype))
    return ctx.call("logical_and", infinite, side)


@converter(*_BINARY)
def convert_binary(ctx: NodeContext) -> Expr:
    lhs, rhs = ctx.input(0), ctx.input(1)
    op, fold = _BINARY[ctx.op_type]
    call = ctx.call(op, lhs, rhs)  # typing it checks that the shapes broadcast; a small one folds
    a, b = ctx.constant_value(lhs), ctx.constant_value(rhs)
    if isinstance(call, Call) and a is not None and b is not None:
        ctx.check_fold(ctx.type_of(call).concrete_shape, ctx.type_of(call).dtype)
        return ctx.const(fold(a, b))
    return call


def _as_dtype(ctx: NodeContext, value: Expr, dtype: str) -> Expr:
    """`value` in `dtype`: a constant converted at import, anything else through a cast."""
    if ctx.type_of(value).dtype == dtype:
        return value
    if (known := ctx.constant_value(value)) is not None:
        return ctx.const(known, dtype)
    return ctx.call("cast", value, dtype=dtype)


@converter("Pow")
def convert_pow(ctx: NodeContext) -> Expr:
    """`power(base, exponent)`, the exponent (which ONNX lets have its own type) in the base's dtype.

    An integer base with a floating-point exponent is raised in float64 and truncated back, as
    ONNX Runtime computes it.
    """
    base, exponent = ctx.input(0), ctx.input(1)
    dtype = ctx.type_of(base).dtype
    if np.issubdtype(np.dtype(dtype), np.integer) and np.issubdtype(np.dtype(ctx.type_of(exponent).dtype),
                                                                    np.floating):
        wide = ctx.call("power", ctx.call("cast", base, dtype="float64"), _as_dtype(ctx, exponent, "float64"))
        return ctx.call("cast", wide, dtype=dtype)
    return ctx.call("power", base, _as_dtype(ctx, exponent, dtype))


@converter("Mod")
def convert_mod(ctx: NodeContext) -> Expr:
    """fmod=1: `mod`, the remainder with the dividend's sign (C fmod); fmod=0: `floor_mod`, with the
    divisor's sign, for integers (and, since opset 28, floats)."""
    lhs, rhs = ctx.input(0), ctx.input(1)
    fmod = ctx.attr("fmod", 0)
    if fmod not in (0, 1):
        raise ctx.unsupported("fmod", fmod, "use 0 or 1")
    dtype = ctx.type_of(lhs).dtype
    if not fmod and ctx.opset < FLOAT_FLOOR_MOD_OPSET and not np.issubdtype(np.dtype(dtype), np.integer):
        raise ctx.unsupported("fmod", fmod, f"{dtype} inputs need fmod=1 before opset {FLOAT_FLOOR_MOD_OPSET}")
    call = ctx.call("mod" if fmod else "floor_mod", lhs, rhs)
    a, b = ctx.constant_value(lhs), ctx.constant_value(rhs)
    if a is not None and b is not None and np.all(b != 0):
        ctx.check_fold(ctx.type_of(call).concrete_shape, dtype)
        return ctx.const((np.fmod if fmod else np.mod)(a, b))
    return call


_VARIADIC = {"Sum": "add", "Max": "maximum", "Min": "minimum", "Mean": "add"}


@converter(*_VARIADIC)
def convert_variadic(ctx: NodeContext) -> Expr:
    """`Sum`/`Max`/`Min`/`Mean` of any number of inputs, as a left-to-right chain of binary ops."""
    operands = ctx.inputs()
    if not operands:
        raise FrontendError("needs at least one input")
    result = functools.reduce(lambda acc, x: ctx.call(_VARIADIC[ctx.op_type], acc, x), operands)
    if ctx.op_type == "Mean" and len(operands) > 1:
        result = ctx.call("divide", result, ctx.const(len(operands), ctx.type_of(result).dtype))
    return result


@converter("Cast", "CastLike")
def convert_cast(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    if ctx.op_type == "Cast":
        dtype = dtype_of_elem(ctx.attr("to"), "attribute 'to'")
    else:
        dtype = ctx.type_of(ctx.input(1)).dtype
    if (value := ctx.constant_value(data)) is not None:
        return ctx.const(value, dtype)
    if ctx.type_of(data).dtype == dtype:
        return data
    return ctx.call("cast", data, dtype=dtype)


def _limit(dtype: str, upper: bool) -> float:
    if np.issubdtype(np.dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        return float(info.max if upper else info.min)
    return float("inf") if upper else float("-inf")


@converter("Clip")
def convert_clip(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    dtype = ctx.type_of(data).dtype
    if ctx.opset < 11:
        bounds = [ctx.attr("min", _limit(dtype, False)), ctx.attr("max", _limit(dtype, True))]
    else:
        bounds = [ctx.input(i) if ctx.has_input(i) else None for i in (1, 2)]
        values = [None if b is None else ctx.graph.static_value(b) for b in bounds]
        if any(b is not None and v is None for b, v in zip(bounds, values)):
            # bounds computed at run time: min(max(x, lo), hi), in ONNX's order
            if bounds[0] is not None:
                data = ctx.call("maximum", data, bounds[0])
            return data if bounds[1] is None else ctx.call("minimum", data, bounds[1])
        bounds = [_limit(dtype, i == 1) if v is None else float(v.reshape(-1)[0]) for i, v in enumerate(values)]
    return ctx.call("clip", data, a_min=bounds[0], a_max=bounds[1])


@converter("Where")
def convert_where(ctx: NodeContext) -> Expr:
    cond, x, y = ctx.input(0), ctx.input(1), ctx.input(2)
    values = [ctx.constant_value(v) for v in (cond, x, y)]
    if all(v is not None for v in values):
        return ctx.const(np.where(*values))
    return ctx.call("where", cond, x, y)


# -- activations ------------------------------------------------------------------------------------

@converter("LeakyRelu")
def convert_leaky_relu(ctx: NodeContext) -> Expr:
    return ctx.call("nn.leaky_relu", ctx.input(0), alpha=ctx.attr("alpha", 0.01))


@converter("PRelu")
def convert_prelu(ctx: NodeContext) -> Expr:
    """`nn.prelu` when the slope varies along one axis of a float input; x < 0 ? slope * x : x otherwise.

    The slope broadcasts to the input unidirectionally: aligned from the right, each of its
    dimensions is 1 or the input's, and it has no more axes than the input.
    """
    data, slope = ctx.input(0), ctx.input(1)
    x, s = ctx.type_of(data), ctx.type_of(slope)
    aligned = (1,) * (x.ndim - s.ndim) + s.shape
    if s.ndim > x.ndim or not all(d == 1 or dims_match(d, n) for d, n in zip(aligned, x.shape)):
        raise FrontendError(f"slope of shape {s.shape_str()} does not broadcast to the input's {x.shape_str()} "
                            f"(PRelu broadcasts the slope to the input, never the input to the slope)")
    varying = [axis for axis, d in enumerate(aligned) if d != 1]
    if len(varying) == 1 and known(aligned[varying[0]]) and x.dtype in FLOAT_DTYPES:
        value = ctx.constant_value(slope)
        alpha = ctx.call("reshape", slope, newshape=[-1]) if value is None else ctx.const(value.reshape(-1))
        return ctx.call("nn.prelu", data, alpha, axis=varying[0])
    zero = ctx.const(0, x.dtype)
    return ctx.call("where", ctx.call("less", data, zero), ctx.call("multiply", data, slope), data)


@converter("HardSigmoid")
def convert_hard_sigmoid(ctx: NodeContext) -> Expr:
    return ctx.call("nn.hard_sigmoid", ctx.input(0), alpha=ctx.attr("alpha", 0.2), beta=ctx.attr("beta", 0.5))


@converter("HardSwish")
def convert_hard_swish(ctx: NodeContext) -> Expr:
    return ctx.call("nn.hard_swish", ctx.input(0))


@converter("Softplus")
def convert_softplus(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    one = ctx.const(1, ctx.type_of(data).dtype)
    return ctx.call("log", ctx.call("add", ctx.call("exp", data), one))


@converter("Reciprocal")
def convert_reciprocal(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    return ctx.call("divide", ctx.const(1, ctx.type_of(data).dtype), data)


@converter("Gelu")
def convert_gelu(ctx: NodeContext) -> Expr:
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.unsupported("approximate", approximate, "use 'none' or 'tanh'")
    return ctx.call("nn.gelu", ctx.input(0), approximate=approximate)
