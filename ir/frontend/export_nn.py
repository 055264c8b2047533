"""Emitters of neural-network IR ops, the fused forms decomposed into standard ONNX ops.

ONNX convolution and pooling are channels-first only (NCHW/OIHW and their 1-D and 3-D forms), so
other layouts are transposed around them.
`nn.batch_norm` / `nn.layer_norm` become `BatchNormalization` / `LayerNormalization` where ONNX
normalizes the same axes with both scale and bias, and their formula otherwise.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..attrs import Attrs
from ..expr import Call, Expr
from ..op.nn import SPATIAL
from ..op.shapes import known, normalize_axis
from .errors import FrontendError
from .export_context import ONE_NODE_OPSETS, EmitContext, Value, emits
from .export_elemwise import gelu, hard_sigmoid
from .export_tensor import reduce, unsqueeze


def _permuted(ctx: EmitContext, name: str, layout: str, target: str) -> str:
    """`name`, laid out as `layout`, transposed to `target` (no node when they are the same)."""
    perm = [layout.index(ch) for ch in target]
    return name if perm == sorted(perm) else ctx.node("Transpose", [name], perm=perm)


def to_nchw(ctx: EmitContext, data: str, layout: str) -> str:
    """Data in `layout` transposed to channels first (NCW, NCHW or NCDHW), as ONNX windows want it."""
    return _permuted(ctx, data, layout, "NC" + SPATIAL[len(layout) - 2])


def from_nchw(ctx: EmitContext, out: str, layout: str) -> str:
    """A channels-first result transposed back to `layout`."""
    return _permuted(ctx, out, "NC" + SPATIAL[len(layout) - 2], layout)


def _channel_vector(ctx: EmitContext, vector: str, axis: int, ndim: int) -> str:
    """A 1-D per-channel vector shaped to broadcast along `axis` of a rank-`ndim` tensor."""
    return unsqueeze(ctx, vector, range(1, ndim - axis))


#: the fused forms' `activation` attribute -> the ONNX op type ("none" has none)
ONNX_ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "leaky_relu": "LeakyRelu", "clip": "Clip",
                    "hard_sigmoid": "HardSigmoid"}
#: the attributes of a fused form that parameterize its activation, in the order ONNX Runtime's fused kernels
#: take them (`activation_params` of FusedConv and NCHWc Conv; `activation_alpha`, `activation_beta` of FusedGemm)
ACTIVATION_PARAMS = {"leaky_relu": ("alpha",), "clip": ("a_min", "a_max"), "hard_sigmoid": ("alpha", "beta")}


def activation_node(ctx: EmitContext, data: str, attrs: Attrs, dtype: str) -> str:
    """`data` (of `dtype`) through a fused form's `activation` (`ONNX_ACTIVATIONS`; "none" is `data` itself)."""
    act = attrs.activation
    if act == "none":
        return data
    if act == "clip":
        return ctx.node("Clip", [data, ctx.const(attrs.a_min, dtype), ctx.const(attrs.a_max, dtype)])
    if act == "hard_sigmoid":
        return hard_sigmoid(ctx, data, attrs.alpha, attrs.beta, dtype)
    alpha = attrs.alpha if act == "leaky_relu" else None
    return ctx.node(ONNX_ACTIVATIONS[act], [data], alpha=alpha)


def cast_to(ctx: EmitContext, names: Sequence[str], call: Call) -> list[str]:
    """The inputs cast to the call's `out_dtype` when it differs from theirs (ONNX ops keep one type)."""
    out_dtype = ctx.type_of(call).dtype
    return [n if ctx.type_of(a).dtype == out_dtype else ctx.node("Cast", [n], to=ctx.elem(out_dtype))
            for n, a in zip(names, call.args)]


def conv_nchw(ctx: EmitContext, call: Call, args: Sequence[Value], op_type: str = "Conv", **extra: object) -> str:
    """An ONNX `op_type` node (Conv, ConvTranspose, or a contrib conv with Conv's attributes plus `extra`) of a
    convolution call of any spatial rank: channels-last data and kernels are transposed to channels first
    (the kernel to OI... or, transposed, IO...); the result is channels first."""
    attrs = call.attrs
    data, weight, *bias = cast_to(ctx, args, call)
    data = to_nchw(ctx, data, attrs.data_layout)
    kernel_layout = attrs.kernel_layout
    canonical = ("IO" if kernel_layout.startswith("IO") else "OI") + SPATIAL[len(kernel_layout) - 2]
    weight = _permuted(ctx, weight, kernel_layout, canonical)
    shape = ctx.static_shape(call.args[1], "the kernel size")
    kernel = [shape[kernel_layout.index(ch)] for ch in SPATIAL[len(kernel_layout) - 2]]
    return ctx.node(op_type, [data, weight, *bias], kernel_shape=kernel, strides=list(attrs.strides),
                    pads=list(attrs.padding), dilations=list(attrs.dilation), group=attrs.groups, **extra)


@emits("nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.conv2d_bias_act")
def emit_conv(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    attrs = call.attrs
    out = conv_nchw(ctx, call, args)
    if call.op.name == "nn.conv2d_bias_act":
        out = activation_node(ctx, out, attrs, ctx.type_of(call).dtype)
    return from_nchw(ctx, out, attrs.data_layout)


@emits("nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose")
def emit_conv_transpose(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    out = conv_nchw(ctx, call, args, "ConvTranspose", output_padding=list(call.attrs.output_padding))
    return from_nchw(ctx, out, call.attrs.data_layout)


@emits(*(f"nn.{kind}_pool{rank}d" for rank in (1, 2, 3) for kind in ("max", "avg")))
def emit_pool(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    attrs = call.attrs
    window = dict(kernel_shape=list(attrs.pool_size), strides=list(attrs.strides), pads=list(attrs.padding),
                  ceil_mode=int(attrs.ceil_mode))
    data = to_nchw(ctx, args[0], attrs.layout)
    if call.op.name.startswith("nn.max_pool"):
        out = ctx.node("MaxPool", [data], dilations=list(attrs.dilation), **window)
    else:
        dilated = any(d != 1 for d in attrs.dilation)
        if dilated and ctx.opset < 19:
            raise FrontendError(f"{call.op.name} with dilation {list(attrs.dilation)} needs opset 19 or newer, "
                                f"exporting to opset {ctx.opset}")
        out = ctx.node("AveragePool", [data], count_include_pad=int(attrs.count_include_pad),
                       dilations=list(attrs.dilation) if dilated else None, **window)
    return from_nchw(ctx, out, attrs.layout)


@emits("nn.global_avg_pool2d", "nn.global_max_pool2d")
def emit_global_pool2d(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    op_type = "GlobalAveragePool" if call.op.name == "nn.global_avg_pool2d" else "GlobalMaxPool"
    out = ctx.node(op_type, [to_nchw(ctx, args[0], call.attrs.layout)])
    return from_nchw(ctx, out, call.attrs.layout)


def _swap_last_two(ctx: EmitContext, name: str, ndim: int) -> str:
    return ctx.node("Transpose", [name], perm=list(range(ndim - 2)) + [ndim - 1, ndim - 2])


def gemm_over_rows(ctx: EmitContext, call: Call, data: Value, gemm: Callable[[Value], Value]) -> Value:
    """`gemm(rows)` for a dense layer: the rows of `data` (all axes but the last, flattened into one
    when there are more than one, as ONNX's `Gemm` takes 2-D data) and the result shaped back."""
    shape = ctx.type_of(call.args[0]).shape
    if len(shape) == 2:
        return gemm(data)
    depth = shape[-1] if known(shape[-1]) else ctx.type_of(call.args[1]).shape[-1]  # the weight's columns
    if not known(depth):
        raise FrontendError(f"a dense layer over {len(shape)}-D data is a 2-D Gemm, which needs a static row "
                            f"length; got data shape {ctx.type_of(call.args[0]).shape_str()}")
    out = gemm(ctx.node("Reshape", [data, ctx.ints([-1, depth])]))
    units = ctx.type_of(call).shape[-1]
    if all(known(d) for d in shape[:-1]):
        target = ctx.ints([*shape[:-1], units])
    else:  # leading sizes known when the model runs
        leading = ctx.node("Slice", [ctx.node("Shape", [data]), ctx.ints([0]), ctx.ints([-1])])
        target = ctx.node("Concat", [leading, ctx.ints([units])], axis=0)
    return ctx.node("Reshape", [out, target])


def rows_known_at_run_time(ctx: EmitContext, call: Call) -> bool:
    """Whether a dense layer's data has more than two axes and leading sizes known only when the model
    runs: flattening its rows for a 2-D Gemm and shaping them back then takes Shape, Slice, Concat and
    two Reshapes around each layer."""
    shape = ctx.type_of(call.args[0]).shape
    return len(shape) > 2 and not all(known(d) for d in shape[:-1])


def matmul_by_transposed(ctx: EmitContext, data: Value, weight: np.ndarray) -> str:
    """`MatMul` of `data` by the (units, depth) initializer `weight` transposed here, which takes data
    of any rank as it is (a dense layer over rows known only when the model runs)."""
    return ctx.node("MatMul", [data, ctx.const(np.ascontiguousarray(weight.T))])


@emits("nn.dense", "nn.dense_bias_act")
def emit_dense(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """Gemm (weight transposed by `transB`, `EmitContext.gemm_weight`; bias as its `C`) over the rows of the data: ONNX
    Runtime's Gemm kernel is faster than MatMul on a transposed weight, and needs no transpose.
    Over rows known only at run time (`rows_known_at_run_time`), a constant weight is transposed
    here and the layer is MatMul (+ Add), which takes the data as it is."""
    data, weight, *bias = cast_to(ctx, args, call)
    value = ctx.value_of(weight) if rows_known_at_run_time(ctx, call) else None
    if value is not None:
        out = matmul_by_transposed(ctx, data, value)
        out = ctx.node("Add", [out, *bias]) if bias else out
    else:
        b, trans_b = ctx.gemm_weight(weight)
        out = gemm_over_rows(ctx, call, data, lambda rows: ctx.node("Gemm", [rows, b, *bias], transB=trans_b))
    if call.op.name != "nn.dense_bias_act":
        return out
    return activation_node(ctx, out, call.attrs, ctx.type_of(call).dtype)


@emits("nn.matmul", "nn.batch_matmul", "nn.fused_matmul")
def emit_matmul(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    operands = cast_to(ctx, args, call)
    for i, key in enumerate(("transpose_a", "transpose_b")):
        if call.attrs[key]:
            operands[i] = _swap_last_two(ctx, operands[i], ctx.type_of(call.args[i]).ndim)
    out = ctx.node("MatMul", operands)
    if call.op.name == "nn.fused_matmul" and call.attrs.alpha != 1.0:
        out = ctx.node("Mul", [out, ctx.const(call.attrs.alpha, ctx.type_of(call).dtype)])
    return out


@emits("nn.bias_add")
def emit_bias_add(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    ndim = ctx.type_of(call).ndim
    axis = normalize_axis(call.attrs.axis, ndim)
    if axis == 1 and _bias_into_conv(ctx, call.args[0], args[0], args[1]):
        return args[0]
    return ctx.node("Add", [args[0], _channel_vector(ctx, args[1], axis, ndim)])


def _bias_into_conv(ctx: EmitContext, conv: Expr, out: Value, bias: Value) -> bool:
    """Give a constant per-channel `bias` to the Conv / ConvTranspose node that computed `out` as its
    `B` input (which it adds itself), when that node has none, writes channels first and `conv`, the
    call it came from, has no other reader; True if done. Convolutions of any rank with a bias are
    imported as a convolution and `nn.bias_add`, and only the 2-D one has a fused form in the IR."""
    if ctx.readers.get(conv, 0) != 1 or ctx.value_of(bias) is None:
        return False
    producer = ctx.producer(out)
    if producer is None or producer.op_type not in ("Conv", "ConvTranspose") or len(producer.input) != 2:
        return False
    producer.input.append(bias)
    return True


@emits("nn.bias_gelu")
def emit_bias_gelu(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return gelu(ctx, ctx.node("Add", args), call.attrs.approximate, ctx.type_of(call).dtype)


def _normalize_formula(ctx: EmitContext, data: str, mean: str, var: str, gamma: str | None, beta: str | None,
                       epsilon: float, dtype: str) -> str:
    """(data - mean) / sqrt(var + epsilon) * gamma + beta, every operand already broadcastable."""
    std = ctx.node("Sqrt", [ctx.node("Add", [var, ctx.const(epsilon, dtype)])])
    out = ctx.node("Div", [ctx.node("Sub", [data, mean]), std])
    if gamma is not None:
        out = ctx.node("Mul", [out, gamma])
    return out if beta is None else ctx.node("Add", [out, beta])


@emits("nn.batch_norm")
def emit_batch_norm(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """Returns (normalized, moving_mean, moving_var), like the op: inference leaves the statistics as given."""
    attrs = call.attrs
    data, gamma, beta, mean, var = args
    ty = ctx.type_of(call.args[0])
    axis = normalize_axis(attrs.axis, ty.ndim)
    if axis == 1 and attrs.center and attrs.scale:
        out = ctx.node("BatchNormalization", args, epsilon=attrs.epsilon)
    else:
        params = [_channel_vector(ctx, v, axis, ty.ndim) for v in (mean, var, gamma, beta)]
        out = _normalize_formula(ctx, data, params[0], params[1], params[2] if attrs.scale else None,
                                 params[3] if attrs.center else None, attrs.epsilon, ty.dtype)
    return (out, mean, var)


def _layer_norm(ctx: EmitContext, call: Call, data: str, gamma: str, beta: str) -> str:
    attrs = call.attrs
    ty = ctx.type_of(call)
    axis = normalize_axis(attrs.axis, ty.ndim)
    if axis == ty.ndim - 1 and attrs.center and attrs.scale and ctx.opset >= 17:
        return ctx.node("LayerNormalization", [data, gamma, beta], axis=-1, epsilon=attrs.epsilon)
    mean = reduce(ctx, "ReduceMean", data, [axis], keepdims=True)
    centered = ctx.node("Sub", [data, mean])
    var = reduce(ctx, "ReduceMean", ctx.node("Mul", [centered, centered]), [axis], keepdims=True)
    gamma = _channel_vector(ctx, gamma, axis, ty.ndim) if attrs.scale else None
    beta = _channel_vector(ctx, beta, axis, ty.ndim) if attrs.center else None
    return _normalize_formula(ctx, data, mean, var, gamma, beta, attrs.epsilon, ty.dtype)


@emits("nn.layer_norm")
def emit_layer_norm(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return _layer_norm(ctx, call, *args)


@emits("nn.skip_layer_norm")
def emit_skip_layer_norm(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    data, skip, gamma, beta = args
    return _layer_norm(ctx, call, ctx.node("Add", [data, skip]), gamma, beta)


#: the first opset with `RMSNormalization`
RMS_NORM_OPSET = 23
ONE_NODE_OPSETS["nn.rms_norm"] = RMS_NORM_OPSET


@emits("nn.rms_norm")
def emit_rms_norm(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """`RMSNormalization` over the last axis since opset 23; else x / sqrt(mean(pow(x, 2)) + epsilon) * gamma,
    the spelling ONNX Runtime's optimizer fuses into its own kernel."""
    data, gamma = args
    ty = ctx.type_of(call)
    axis = normalize_axis(call.attrs.axis, ty.ndim)
    if axis == ty.ndim - 1 and ctx.opset >= RMS_NORM_OPSET:
        # stash_type is the precision of the mean of squares: float32 (the default) unless the data is wider
        stash = ctx.elem(ty.dtype) if ty.dtype == "float64" else None
        return ctx.node("RMSNormalization", args, axis=-1, epsilon=call.attrs.epsilon, stash_type=stash)
    square = ctx.node("Pow", [data, ctx.const(2.0, ty.dtype)])
    mean_square = reduce(ctx, "ReduceMean", square, [axis], keepdims=True)
    rms = ctx.node("Sqrt", [ctx.node("Add", [mean_square, ctx.const(call.attrs.epsilon, ty.dtype)])])
    return ctx.node("Mul", [ctx.node("Div", [data, rms]), _channel_vector(ctx, gamma, axis, ty.ndim)])


@emits("nn.softmax", "nn.log_softmax")
def emit_softmax(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    op_type = "Softmax" if call.op.name == "nn.softmax" else "LogSoftmax"
    return ctx.node(op_type, args, axis=call.attrs.axis)


@emits("nn.lrn")
def emit_lrn(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """ONNX LRN runs across axis 1; another axis is swapped there and back."""
    attrs = call.attrs
    ndim = ctx.type_of(call).ndim
    axis = normalize_axis(attrs.axis, ndim)
    perm = list(range(ndim))
    perm[1], perm[axis] = perm[axis], perm[1]
    data = args[0] if axis == 1 else ctx.node("Transpose", args, perm=perm)
    out = ctx.node("LRN", [data], size=attrs.size, alpha=attrs.alpha, beta=attrs.beta, bias=attrs.bias)
    return out if axis == 1 else ctx.node("Transpose", [out], perm=perm)
