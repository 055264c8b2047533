"""Converters of ONNX neural-network ops: convolution, pooling, Gemm/MatMul, normalization, softmax."""

from __future__ import annotations

import math

import numpy as np

from ..expr import Expr
from ..op.shapes import known, normalize_axis
from .errors import FrontendError
from . import import_einsum, import_image  # noqa: F401  (register Einsum, a matmul lowering, and Resize/Upsample)
from .import_context import NodeContext, converter


def _spatial_rank(ctx: NodeContext, data: Expr) -> int:
    """The number of spatial axes of NC... data: 1, 2 or 3."""
    ty = ctx.type_of(data)
    if not 3 <= ty.ndim <= 5:
        raise FrontendError(f"{ctx.op_type} supports 1-D, 2-D and 3-D windows (3-D to 5-D input), got input shape "
                            f"{ty.shape_str()}")
    return ty.ndim - 2


def _per_axis(ctx: NodeContext, key: str, rank: int, default: int | list[int]) -> list[int]:
    """An attribute with one int per spatial axis (`default`: an int for every axis, or the list)."""
    value = list(ctx.attr(key, [default] * rank if isinstance(default, int) else default))
    if len(value) != rank:
        raise FrontendError(f"attribute {key}={value} must have {rank} entries (one per spatial axis)")
    return value


def _spatial_sizes(ctx: NodeContext, data: Expr, what: str) -> list[int]:
    """The spatial lengths of NC... `data`, which must be static for `what`."""
    shape = ctx.type_of(data).shape[2:]
    if not all(known(d) for d in shape):
        raise FrontendError(f"{what} needs static spatial dimensions, got input shape "
                            f"{ctx.type_of(data).shape_str()}")
    return list(shape)


def _split_padding(ctx: NodeContext, auto_pad: str, totals: list[int]) -> list[int]:
    """(befores..., afters...) that split each total padding in halves, the odd one at the end
    (SAME_UPPER) or at the start (SAME_LOWER)."""
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.unsupported("auto_pad", auto_pad, "use NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    small, big = [t // 2 for t in totals], [t - t // 2 for t in totals]
    return small + big if auto_pad == "SAME_UPPER" else big + small


def _explicit_pads(ctx: NodeContext, rank: int) -> list[int]:
    pads = list(ctx.attr("pads", [0] * 2 * rank))
    if len(pads) != 2 * rank:
        raise FrontendError(f"attribute pads={pads} must have {2 * rank} entries")
    return pads


def _window_padding(ctx: NodeContext, data: Expr, kernel: list[int], strides: list[int],
                    dilations: list[int]) -> list[int]:
    """Padding as (befores..., afters...) from `pads` (the same order) or `auto_pad`: SAME pads so that
    the output has ceil(size / stride) positions."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        return _explicit_pads(ctx, len(kernel))
    if auto_pad == "VALID":
        return [0] * 2 * len(kernel)
    totals = [max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
              for size, k, s, d in zip(_spatial_sizes(ctx, data, f"auto_pad={auto_pad}"), kernel, strides, dilations)]
    return _split_padding(ctx, auto_pad, totals)


def _conv_geometry(ctx: NodeContext, data: Expr, weight: Expr) -> tuple[int, list[int], list[int], list[int]]:
    """(spatial rank, kernel_shape, strides, dilations) of a Conv or ConvTranspose node."""
    rank = _spatial_rank(ctx, data)
    kernel = _per_axis(ctx, "kernel_shape", rank, list(ctx.type_of(weight).shape[2:]))
    return rank, kernel, _per_axis(ctx, "strides", rank, 1), _per_axis(ctx, "dilations", rank, 1)


@converter("Conv")
def convert_conv(ctx: NodeContext) -> Expr:
    data, weight = ctx.input(0), ctx.input(1)
    rank, kernel, strides, dilations = _conv_geometry(ctx, data, weight)
    out_channels = ctx.type_of(weight).shape[0]
    out = ctx.call(f"nn.conv{rank}d", data, weight, strides=strides, dilation=dilations,
                   groups=ctx.attr("group", 1), padding=_window_padding(ctx, data, kernel, strides, dilations),
                   kernel_size=kernel, channels=out_channels if known(out_channels) else None)
    if ctx.has_input(2):
        out = ctx.call("nn.bias_add", out, ctx.input(2), axis=1)
    return out


def _transpose_padding(ctx: NodeContext, data: Expr, kernel: list[int], strides: list[int], dilations: list[int],
                       output_padding: list[int]) -> tuple[list[int], list[int]]:
    """(padding, output_padding) of a ConvTranspose node. `output_shape` (or SAME auto_pad: size x stride)
    fixes the total padding of each axis, stride * (size - 1) + output_padding + dilation * (kernel - 1)
    + 1 - output size, split in halves with the odd one at the end for SAME_UPPER and at the start
    otherwise (the ONNX spec's rule); an output longer than that extent grows at the end, like
    output_padding."""
    rank = len(kernel)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if ctx.has_attr("output_shape"):
        sizes = _spatial_sizes(ctx, data, "output_shape")
        targets = list(ctx.attr("output_shape"))[-rank:]
        if len(targets) != rank:
            raise FrontendError(f"attribute output_shape={targets} must give {rank} spatial sizes")
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        sizes = _spatial_sizes(ctx, data, f"auto_pad={auto_pad}")
        targets = [size * s for size, s in zip(sizes, strides)]
    elif auto_pad == "VALID":
        return [0] * 2 * rank, output_padding
    elif auto_pad == "NOTSET":
        return _explicit_pads(ctx, rank), output_padding
    else:
        raise ctx.unsupported("auto_pad", auto_pad, "use NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    totals = [s * (size - 1) + extra + d * (k - 1) + 1 - target
              for size, k, s, d, extra, target in zip(sizes, kernel, strides, dilations, output_padding, targets)]
    output_padding = [extra - min(t, 0) for extra, t in zip(output_padding, totals)]
    totals = [max(t, 0) for t in totals]
    return _split_padding(ctx, "SAME_UPPER" if auto_pad == "SAME_UPPER" else "SAME_LOWER", totals), output_padding


@converter("ConvTranspose")
def convert_conv_transpose(ctx: NodeContext) -> Expr:
    data, weight = ctx.input(0), ctx.input(1)
    rank, kernel, strides, dilations = _conv_geometry(ctx, data, weight)
    padding, output_padding = _transpose_padding(ctx, data, kernel, strides, dilations,
                                                 _per_axis(ctx, "output_padding", rank, 0))
    out = ctx.call(f"nn.conv{rank}d_transpose", data, weight, strides=strides, dilation=dilations,
                   groups=ctx.attr("group", 1), padding=padding, output_padding=output_padding, kernel_size=kernel)
    if ctx.has_input(2):
        out = ctx.call("nn.bias_add", out, ctx.input(2), axis=1)
    return out


@converter("MaxPool", "AveragePool")
def convert_pool(ctx: NodeContext) -> Expr | list[Expr]:
    data = ctx.input(0)
    rank = _spatial_rank(ctx, data)
    kernel = _per_axis(ctx, "kernel_shape", rank, [])
    strides, dilations = _per_axis(ctx, "strides", rank, 1), _per_axis(ctx, "dilations", rank, 1)
    attrs = dict(pool_size=kernel, strides=strides, dilation=dilations, ceil_mode=bool(ctx.attr("ceil_mode", 0)),
                 padding=_window_padding(ctx, data, kernel, strides, dilations))
    if ctx.op_type == "MaxPool":
        return [ctx.call(f"nn.max_pool{rank}d", data, **attrs)]  # the Indices output is not supported
    return ctx.call(f"nn.avg_pool{rank}d", data, count_include_pad=bool(ctx.attr("count_include_pad", 0)), **attrs)


@converter("GlobalAveragePool", "GlobalMaxPool")
def convert_global_pool(ctx: NodeContext) -> Expr:
    data = ctx.input(0)
    ndim = ctx.type_of(data).ndim
    if ndim == 4:
        op = "nn.global_avg_pool2d" if ctx.op_type == "GlobalAveragePool" else "nn.global_max_pool2d"
        return ctx.call(op, data)
    op = "mean" if ctx.op_type == "GlobalAveragePool" else "max"
    return ctx.call(op, data, axis=list(range(2, ndim)), keepdims=True)


@converter("Gemm")
def convert_gemm(ctx: NodeContext) -> Expr:
    """alpha * A' @ B' + beta * C, as nn.dense (B' constant or transposed) or nn.matmul, plus a bias: C of
    any shape that broadcasts to (M, N) (a vector of N values becomes nn.bias_add)."""
    a, b = ctx.input(0), ctx.input(1)
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    trans_b = bool(ctx.attr("transB", 0))
    if ctx.attr("transA", 0):
        a = ctx.call("transpose", a, axes=[1, 0])
    if not trans_b and (b_value := ctx.constant_value(b)) is not None:
        out = ctx.call("nn.dense", a, ctx.const(b_value.T))
    elif trans_b:
        out = ctx.call("nn.dense", a, b)
    else:
        out = ctx.call("nn.matmul", a, b)
    dtype = ctx.type_of(out).dtype
    if alpha != 1.0:
        out = ctx.call("multiply", out, ctx.const(alpha, dtype))
    if not ctx.has_input(2):
        return out
    bias = ctx.input(2)
    if beta != 1.0:
        bias_value = ctx.constant_value(bias)
        bias = (ctx.const(bias_value * np.asarray(beta, dtype)) if bias_value is not None
                else ctx.call("multiply", bias, ctx.const(beta, dtype)))
    bias_shape = ctx.type_of(bias).shape
    if len(bias_shape) == 1 and bias_shape[0] != 1:  # a vector over N; other shapes broadcast as they are
        return ctx.call("nn.bias_add", out, bias, axis=-1)
    return ctx.call("add", out, bias)


@converter("MatMul")
def convert_matmul(ctx: NodeContext) -> Expr:
    """numpy.matmul: nn.dense when B is a 2-D constant, else nn.matmul (1-D operands get a unit axis)."""
    a, b = ctx.input(0), ctx.input(1)
    a_rank, b_rank = ctx.type_of(a).ndim, ctx.type_of(b).ndim
    b_value = ctx.constant_value(b)
    if b_rank == 2 and b_value is not None:
        return ctx.call("nn.dense", a, ctx.const(b_value.T))
    if a_rank == 1:
        a = ctx.call("expand_dims", a, axis=0)
    if b_rank == 1:
        b = ctx.call("expand_dims", b, axis=1)
    out = ctx.call("nn.matmul", a, b)
    unit_axes = ([-1] if b_rank == 1 else []) + ([-2] if a_rank == 1 else [])
    return ctx.call("squeeze", out, axis=unit_axes) if unit_axes else out


@converter("BatchNormalization")
def convert_batch_norm(ctx: NodeContext) -> list[Expr]:
    if ctx.attr("training_mode", 0):
        raise ctx.unsupported("training_mode", 1, "only inference graphs are imported")
    if not ctx.attr("spatial", 1):
        raise ctx.unsupported("spatial", 0, "statistics must be per channel")
    data, gamma, beta, mean, var = (ctx.input(i) for i in range(5))
    bn = ctx.call("nn.batch_norm", data, gamma, beta, mean, var, axis=1, epsilon=ctx.attr("epsilon", 1e-5))
    # in inference the optional outputs are the running statistics, which batch_norm returns as-is
    return [ctx.item(bn, i) for i in range(min(3, ctx.num_outputs))]


@converter("LRN")
def convert_lrn(ctx: NodeContext) -> Expr:
    return ctx.call("nn.lrn", ctx.input(0), size=ctx.attr("size"), axis=1, bias=ctx.attr("bias", 1.0),
                    alpha=ctx.attr("alpha", 1e-4), beta=ctx.attr("beta", 0.75))


@converter("Softmax", "LogSoftmax")
def convert_softmax(ctx: NodeContext) -> Expr:
    """Since opset 13 over one axis; before, over the input coerced to 2-D at `axis` (default 1)."""
    data = ctx.input(0)
    op = "nn.softmax" if ctx.op_type == "Softmax" else "nn.log_softmax"
    if ctx.opset >= 13:
        return ctx.call(op, data, axis=ctx.attr("axis", -1))
    ndim = ctx.type_of(data).ndim
    axis = normalize_axis(ctx.attr("axis", 1), ndim)
    if axis == ndim - 1:
        return ctx.call(op, data, axis=-1)
    shape = ctx.static_shape(data, f"{ctx.op_type} over axes {axis}.. (the input coerced to 2-D)")
    flat = ctx.call("reshape", data, newshape=[math.prod(shape[:axis]), math.prod(shape[axis:])])
    return ctx.call("reshape", ctx.call(op, flat, axis=1), newshape=list(shape))


@converter("LayerNormalization")
def convert_layer_norm(ctx: NodeContext) -> list[Expr]:
    """Normalizes over axes `axis`..last: nn.layer_norm for the last axis alone, else the formula.
    The Mean and InvStdDev outputs are not supported."""
    data, scale = ctx.input(0), ctx.input(1)
    bias = ctx.input(2) if ctx.has_input(2) else None
    ndim = ctx.type_of(data).ndim
    axis = normalize_axis(ctx.attr("axis", -1), ndim)
    epsilon = ctx.attr("epsilon", 1e-5)
    dtype = ctx.type_of(data).dtype
    if axis == ndim - 1 and ctx.type_of(scale).ndim == 1:
        if bias is None:
            bias = ctx.const(np.zeros(ctx.static_shape(scale, "a missing bias (made of zeros)"), dtype))
        return [ctx.call("nn.layer_norm", data, scale, bias, axis=-1, epsilon=epsilon)]
    axes = list(range(axis, ndim))
    centered = ctx.call("subtract", data, ctx.call("mean", data, axis=axes, keepdims=True))
    variance = ctx.call("mean", ctx.call("multiply", centered, centered), axis=axes, keepdims=True)
    std = ctx.call("sqrt", ctx.call("add", variance, ctx.const(epsilon, dtype)))
    out = ctx.call("multiply", ctx.call("divide", centered, std), scale)
    return [out if bias is None else ctx.call("add", out, bias)]


@converter("RMSNormalization")
def convert_rms_norm(ctx: NodeContext) -> Expr:
    """Normalizes by the root mean square over axes `axis`..last: nn.rms_norm for the last axis
    alone with a 1-D scale, else the formula (mean of squares, in the input's dtype)."""
    data, scale = ctx.input(0), ctx.input(1)
    ndim = ctx.type_of(data).ndim
    axis = normalize_axis(ctx.attr("axis", -1), ndim)
    epsilon = ctx.attr("epsilon", 1e-5)
    if axis == ndim - 1 and ctx.type_of(scale).ndim == 1:
        return ctx.call("nn.rms_norm", data, scale, axis=-1, epsilon=epsilon)
    square_mean = ctx.call("mean", ctx.call("multiply", data, data), axis=list(range(axis, ndim)), keepdims=True)
    root = ctx.call("sqrt", ctx.call("add", square_mean, ctx.const(epsilon, ctx.type_of(data).dtype)))
    return ctx.call("multiply", ctx.call("divide", data, root), scale)
