"""Neural-network ops: convolution, dense/matmul, normalization, softmax, pooling, padding."""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import Any, TensorType, TupleType, Type
from .registry import AttrField, OpPattern, register_op
from .shapes import broadcast_shapes, dims_match, known, normalize_axis, same_dtype, tensor, window_out_dim


def pair(value) -> tuple[int, int]:
    """An int or a 1- or 2-list as an (h, w) pair."""
    value = (value,) if isinstance(value, int) else tuple(value)
    if len(value) == 1:
        return (value[0], value[0])
    if len(value) != 2:
        raise ValueError(f"expected 1 or 2 values, got {len(value)}")
    return value


def pad4(value) -> tuple[int, int, int, int]:
    """Padding as (top, left, bottom, right), from 1, 2 or 4 values (TVM's convention)."""
    value = (value,) if isinstance(value, int) else tuple(value)
    if len(value) == 1:
        return value * 4
    if len(value) == 2:
        return (value[0], value[1], value[0], value[1])
    if len(value) == 4:
        return value
    raise ValueError(f"expected 1, 2 or 4 values, got {len(value)}")


LAYOUTS = {"NCHW": (1, 2, 3), "NHWC": (3, 1, 2)}       # (channel axis, h axis, w axis)
KERNEL_LAYOUTS = {"OIHW": (0, 1, 2, 3), "HWIO": (3, 2, 0, 1)}  # positions of (O, I, KH, KW)


def _layout(attrs: Attrs, key: str = "data_layout") -> tuple[int, int, int]:
    layout = attrs[key]
    if layout not in LAYOUTS:
        raise ShapeError(f"layout {layout!r} is not supported (use one of {sorted(LAYOUTS)})")
    return LAYOUTS[layout]


def _nchw_like(layout: str, n, c, h, w):
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def conv2d_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data, weight = tensor(args[0], "data"), tensor(args[1], "weight")
    if data.ndim != 4 or weight.ndim != 4:
        raise ShapeError(f"needs 4-D data and weight, got data {data} and weight {weight}")
    dtype = same_dtype([data, weight], ["data", "weight"])
    ca, ha, wa = _layout(attrs)
    if attrs.kernel_layout not in KERNEL_LAYOUTS:
        raise ShapeError(f"kernel layout {attrs.kernel_layout!r} is not supported")
    o_ax, i_ax, kh_ax, kw_ax = KERNEL_LAYOUTS[attrs.kernel_layout]
    out_c, in_per_group = weight.shape[o_ax], weight.shape[i_ax]
    kh, kw = weight.shape[kh_ax], weight.shape[kw_ax]
    groups = attrs.groups
    if groups < 1:
        raise ShapeError(f"groups must be >= 1, got {groups}")
    in_c = data.shape[ca]
    if known(in_c) and known(in_per_group) and in_c != in_per_group * groups:
        raise ShapeError(f"data has {in_c} channels but weight expects {in_per_group} x groups {groups}")
    if known(out_c) and out_c % groups:
        raise ShapeError(f"output channels {out_c} are not divisible by groups {groups}")
    if attrs.channels is not None and not dims_match(attrs.channels, out_c):
        raise ShapeError(f"channels={attrs.channels} but the weight has {out_c} output channels")
    if attrs.kernel_size is not None and not (dims_match(attrs.kernel_size[0], kh) and dims_match(attrs.kernel_size[1], kw)):
        raise ShapeError(f"kernel_size={list(attrs.kernel_size)} but the weight's kernel is ({kh}, {kw})")
    if not (known(kh) and known(kw)):
        raise ShapeError(f"the kernel size must be static, got weight {weight}")
    top, left, bottom, right = attrs.padding
    oh = window_out_dim(data.shape[ha], kh, top, bottom, attrs.strides[0], attrs.dilation[0], what="height")
    ow = window_out_dim(data.shape[wa], kw, left, right, attrs.strides[1], attrs.dilation[1], what="width")
    out_dtype = attrs.out_dtype or dtype
    return TensorType(_nchw_like(attrs.data_layout, data.shape[0], out_c, oh, ow), out_dtype)


CONV_ATTRS = [
    AttrField("strides", "int_or_ints", (1, 1), convert=pair),
    AttrField("padding", "int_or_ints", (0, 0, 0, 0), convert=pad4),
    AttrField("dilation", "int_or_ints", (1, 1), convert=pair),
    AttrField("groups", "int", 1),
    AttrField("channels", "int?", None),
    AttrField("kernel_size", "ints?", None),
    AttrField("data_layout", "str", "NCHW"),
    AttrField("kernel_layout", "str", "OIHW"),
    AttrField("out_layout", "str", ""),
    AttrField("out_dtype", "str", ""),
]


def dense_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data, weight = tensor(args[0], "data"), tensor(args[1], "weight")
    if data.ndim < 1 or weight.ndim != 2:
        raise ShapeError(f"needs data of rank >= 1 and a 2-D weight [units, in], got data {data}, weight {weight}")
    dtype = same_dtype([data, weight], ["data", "weight"])
    if not dims_match(data.shape[-1], weight.shape[1]):
        raise ShapeError(f"data's last dimension {data.shape[-1]} does not match weight's in-dimension "
                         f"{weight.shape[1]}")
    if attrs.units is not None and not dims_match(attrs.units, weight.shape[0]):
        raise ShapeError(f"units={attrs.units} but the weight has {weight.shape[0]} rows")
    return TensorType(data.shape[:-1] + (weight.shape[0],), attrs.out_dtype or dtype)


def matmul_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    a, b = tensor(args[0], "tensor_a"), tensor(args[1], "tensor_b")
    if a.ndim < 2 or b.ndim < 2:
        raise ShapeError(f"needs inputs of rank >= 2, got {a} and {b}")
    dtype = same_dtype([a, b], ["tensor_a", "tensor_b"])
    m, k1 = (a.shape[-1], a.shape[-2]) if attrs.transpose_a else (a.shape[-2], a.shape[-1])
    k2, n = (b.shape[-1], b.shape[-2]) if attrs.transpose_b else (b.shape[-2], b.shape[-1])
    if not dims_match(k1, k2):
        raise ShapeError(f"reduction dimensions differ: {k1} vs {k2}")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return TensorType(batch + (m, n), attrs.out_dtype or dtype)


def batch_matmul_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    a, b = tensor(args[0], "tensor_a"), tensor(args[1], "tensor_b")
    if a.ndim != 3 or b.ndim != 3:
        raise ShapeError(f"needs 3-D inputs, got {a} and {b}")
    return matmul_rel(args, attrs)


def bias_add_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data, bias = tensor(args[0], "data"), tensor(args[1], "bias")
    same_dtype([data, bias], ["data", "bias"])
    axis = normalize_axis(attrs.axis, data.ndim)
    if bias.ndim != 1 or not dims_match(bias.shape[0], data.shape[axis]):
        raise ShapeError(f"bias {bias} must be 1-D of length data.shape[{attrs.axis}] = {data.shape[axis]}")
    return data


def _channel_params(args: Sequence[Type], axis: int, names: Sequence[str]) -> TensorType:
    data = tensor(args[0], "data")
    ax = normalize_axis(axis, data.ndim)
    for t, name in zip(args[1:], names):
        t = tensor(t, name)
        if t.ndim != 1 or not dims_match(t.shape[0], data.shape[ax]):
            raise ShapeError(f"{name} {t} must be 1-D of length {data.shape[ax]} (axis {axis})")
        same_dtype([data, t], ["data", name])
    return data


def batch_norm_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = _channel_params(args, attrs.axis, ["gamma", "beta", "moving_mean", "moving_var"])
    stat = TensorType((data.shape[normalize_axis(attrs.axis, data.ndim)],), data.dtype)
    return TupleType([data, stat, stat])


def layer_norm_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    return _channel_params(args, attrs.axis, ["gamma", "beta"])


def softmax_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    normalize_axis(attrs.axis, data.ndim)
    return data


def pool2d_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if data.ndim != 4:
        raise ShapeError(f"needs 4-D data, got {data}")
    ca, ha, wa = _layout(attrs, "layout")
    (kh, kw), (sh, sw), (dh, dw) = attrs.pool_size, attrs.strides, attrs.dilation
    top, left, bottom, right = attrs.padding
    oh = window_out_dim(data.shape[ha], kh, top, bottom, sh, dh, attrs.ceil_mode, what="height")
    ow = window_out_dim(data.shape[wa], kw, left, right, sw, dw, attrs.ceil_mode, what="width")
    return TensorType(_nchw_like(attrs.layout, data.shape[0], data.shape[ca], oh, ow), data.dtype)


def global_pool2d_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if data.ndim != 4:
        raise ShapeError(f"needs 4-D data, got {data}")
    ca, _, _ = _layout(attrs, "layout")
    return TensorType(_nchw_like(attrs.layout, data.shape[0], data.shape[ca], 1, 1), data.dtype)


def batch_flatten_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if data.ndim < 1:
        raise ShapeError(f"needs data of rank >= 1, got {data}")
    rest = data.shape[1:]
    size = 1
    for d in rest:
        size = size * d if known(d) and known(size) else Any
    return TensorType((data.shape[0], size), data.dtype)


def pad_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if len(attrs.pad_width) != data.ndim:
        raise ShapeError(f"pad_width has {len(attrs.pad_width)} pairs for a rank-{data.ndim} tensor {data}")
    out = []
    for d, (before, after) in zip(data.shape, attrs.pad_width):
        if before < 0 or after < 0:
            raise ShapeError(f"negative padding {before, after} is not supported")
        out.append(d + before + after if known(d) else Any)
    return TensorType(out, data.dtype)


def lrn_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    normalize_axis(attrs.axis, data.ndim)
    if attrs.size < 1:
        raise ShapeError(f"size must be >= 1, got {attrs.size}")
    return data


OUT_EW = OpPattern.OUT_ELEMWISE_FUSABLE
register_op("nn.conv2d", ["data", "weight"], conv2d_rel, OUT_EW, attrs=CONV_ATTRS,
            doc="2-D convolution with strides, padding (top, left, bottom, right), dilation and groups.")
register_op("nn.dense", ["data", "weight"], dense_rel, OUT_EW,
            attrs=[AttrField("units", "int?", None), AttrField("out_dtype", "str", "")],
            doc="data @ weight.T, weight laid out as [units, in].")
register_op("nn.matmul", ["tensor_a", "tensor_b"], matmul_rel, OUT_EW,
            attrs=[AttrField("out_dtype", "str", ""), AttrField("transpose_a", "bool", False),
                   AttrField("transpose_b", "bool", False)],
            doc="Matrix product over the last two axes; leading axes broadcast like numpy.matmul.")
register_op("nn.batch_matmul", ["tensor_a", "tensor_b"], batch_matmul_rel, OUT_EW,
            attrs=[AttrField("out_dtype", "str", ""), AttrField("transpose_a", "bool", False),
                   AttrField("transpose_b", "bool", True)],
            doc="Batched product of 3-D tensors; by default the second operand is [batch, N, K] (TVM's layout).")
register_op("nn.bias_add", ["data", "bias"], bias_add_rel, OpPattern.BROADCAST,
            attrs=[AttrField("axis", "int", 1)])
register_op("nn.batch_norm", ["data", "gamma", "beta", "moving_mean", "moving_var"], batch_norm_rel,
            OpPattern.OPAQUE,
            attrs=[AttrField("axis", "int", 1), AttrField("epsilon", "float", 1e-5),
                   AttrField("center", "bool", True), AttrField("scale", "bool", True)],
            doc="Inference batch norm; returns (normalized, moving_mean, moving_var).")
register_op("nn.layer_norm", ["data", "gamma", "beta"], layer_norm_rel, OpPattern.OPAQUE,
            attrs=[AttrField("axis", "int", -1), AttrField("epsilon", "float", 1e-5),
                   AttrField("center", "bool", True), AttrField("scale", "bool", True)])
for _name in ("nn.softmax", "nn.log_softmax"):
    register_op(_name, ["data"], softmax_rel, OpPattern.OPAQUE, attrs=[AttrField("axis", "int", -1)])
_POOL_ATTRS = [
    AttrField("pool_size", "int_or_ints", (1, 1), convert=pair),
    AttrField("strides", "int_or_ints", (1, 1), convert=pair),
    AttrField("dilation", "int_or_ints", (1, 1), convert=pair),
    AttrField("padding", "int_or_ints", (0, 0, 0, 0), convert=pad4),
    AttrField("layout", "str", "NCHW"),
    AttrField("out_layout", "str", ""),
    AttrField("ceil_mode", "bool", False),
]
register_op("nn.max_pool2d", ["data"], pool2d_rel, OUT_EW, attrs=_POOL_ATTRS)
register_op("nn.avg_pool2d", ["data"], pool2d_rel, OUT_EW,
            attrs=_POOL_ATTRS + [AttrField("count_include_pad", "bool", False)])
for _name in ("nn.global_avg_pool2d", "nn.global_max_pool2d"):
    register_op(_name, ["data"], global_pool2d_rel, OUT_EW,
                attrs=[AttrField("layout", "str", "NCHW"), AttrField("out_layout", "str", "")])
register_op("nn.batch_flatten", ["data"], batch_flatten_rel, OpPattern.INJECTIVE)
register_op("nn.pad", ["data"], pad_rel, OpPattern.INJECTIVE,
            attrs=[AttrField("pad_width", "int_pairs"), AttrField("pad_value", "float", 0.0),
                   AttrField("pad_mode", "str", "constant", choices=("constant", "edge", "reflect"))])
register_op("nn.lrn", ["data"], lrn_rel, OpPattern.OPAQUE,
            attrs=[AttrField("size", "int", 5), AttrField("axis", "int", 1), AttrField("bias", "float", 2.0),
                   AttrField("alpha", "float", 1e-4), AttrField("beta", "float", 0.75)],
            doc="Local response normalization across `axis`: x / (bias + alpha / size * sum(x^2)) ^ beta.")
