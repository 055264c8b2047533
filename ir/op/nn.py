"""Neural-network ops: convolution, dense/matmul, normalization, softmax, pooling, padding."""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import Any, TensorType, TupleType, Type
from .registry import AttrField, OpPattern, register_op
from .shapes import (broadcast_shapes, dims_match, known, normalize_axis, product, same_dtype, symbolic, tensor,
                     window_out_dim)


#: spatial rank -> the letters of its spatial axes, in order
SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
#: spatial rank -> the (data, kernel, transposed-convolution kernel) layouts that are the defaults
DEFAULT_LAYOUTS = {1: ("NCW", "OIW", "IOW"), 2: ("NCHW", "OIHW", "IOHW"), 3: ("NCDHW", "OIDHW", "IODHW")}


def layout_axes(layout: str, letters: str) -> tuple[int, ...]:
    """The positions of `letters` in `layout`, e.g. ("NHWC", "CHW") -> (3, 1, 2)."""
    return tuple(layout.index(ch) for ch in letters)


#: data layout -> (channel axis, spatial axes...)
LAYOUTS = {layout: layout_axes(layout, "C" + SPATIAL[len(layout) - 2])
           for layout in ("NCW", "NWC", "NCHW", "NHWC", "NCDHW", "NDHWC")}
#: kernel layout -> positions of (O, I, spatial...); the IO* layouts are the transposed convolutions'
KERNEL_LAYOUTS = {layout: layout_axes(layout, "OI" + SPATIAL[len(layout) - 2])
                  for layout in ("OIW", "WIO", "OIHW", "HWIO", "OIDHW", "DHWIO", "IOW", "IOHW", "IODHW")}


def per_axis(rank: int):
    """Converter of an int or a 1- or `rank`-list to one value per spatial axis."""
    def convert(value) -> tuple[int, ...]:
        value = (value,) if isinstance(value, int) else tuple(value)
        if len(value) == 1:
            return value * rank
        if len(value) != rank:
            raise ValueError(f"expected 1 or {rank} values, got {len(value)}")
        return value
    return convert


def padding_of(rank: int):
    """Converter of padding to (befores..., afters...) from 1, `rank` or 2 x `rank` values (TVM's convention)."""
    def convert(value) -> tuple[int, ...]:
        value = (value,) if isinstance(value, int) else tuple(value)
        if len(value) == 1:
            return value * 2 * rank
        if len(value) == rank:
            return value * 2
        if len(value) != 2 * rank:
            raise ValueError(f"expected 1, {rank} or {2 * rank} values, got {len(value)}")
        return value
    return convert


pair = per_axis(2)


def _axes_of(table: dict, layout: str, rank: int, what: str, transposed: bool | None = None) -> tuple[int, ...]:
    """The axes of a `what` layout of spatial rank `rank` (of a transposed convolution's kernel or not)."""
    ok = [k for k in table if len(k) == rank + 2 and transposed in (None, k.startswith("IO"))]
    if layout not in ok:
        raise ShapeError(f"{what} layout {layout!r} is not supported (use one of {ok})")
    return table[layout]


def _window_shape(data: TensorType, c_axis: int, spatial: Sequence[int], channels, sizes) -> tuple:
    """`data`'s shape with the channel and spatial dimensions replaced."""
    shape = list(data.shape)
    shape[c_axis] = channels
    for axis, size in zip(spatial, sizes):
        shape[axis] = size
    return tuple(shape)


def _conv_operands(args: Sequence[Type], attrs: Attrs, rank: int, transposed: bool):
    """Checks shared by convolution and transposed convolution; returns (data, dtype, channel axis,
    spatial axes, kernel sizes, output channels)."""
    data, weight = tensor(args[0], "data"), tensor(args[1], "weight")
    if data.ndim != rank + 2 or weight.ndim != rank + 2:
        raise ShapeError(f"needs {rank + 2}-D data and weight, got data {data} and weight {weight}")
    dtype = same_dtype([data, weight], ["data", "weight"])
    c_axis, *spatial = _axes_of(LAYOUTS, attrs.data_layout, rank, "data")
    o_ax, i_ax, *k_axes = _axes_of(KERNEL_LAYOUTS, attrs.kernel_layout, rank, "kernel", transposed)
    groups = attrs.groups
    if groups < 1:
        raise ShapeError(f"groups must be >= 1, got {groups}")
    kernel = [weight.shape[a] for a in k_axes]
    if not all(known(k) for k in kernel):
        raise ShapeError(f"the kernel size must be static, got weight {weight}")
    if attrs.kernel_size is not None and (len(attrs.kernel_size) != rank or not all(
            dims_match(a, k) for a, k in zip(attrs.kernel_size, kernel))):
        raise ShapeError(f"kernel_size={list(attrs.kernel_size)} but the weight's kernel is {tuple(kernel)}")
    in_c = data.shape[c_axis]
    if transposed:  # weight [in, out / groups, k...]
        if not dims_match(in_c, weight.shape[i_ax]):
            raise ShapeError(f"data has {in_c} channels but the weight expects {weight.shape[i_ax]}")
        if known(in_c) and in_c % groups:
            raise ShapeError(f"input channels {in_c} are not divisible by groups {groups}")
        out_c = weight.shape[o_ax] * groups if known(weight.shape[o_ax]) else Any
    else:  # weight [out, in / groups, k...]
        out_c, in_per_group = weight.shape[o_ax], weight.shape[i_ax]
        if known(in_c) and known(in_per_group) and in_c != in_per_group * groups:
            raise ShapeError(f"data has {in_c} channels but weight expects {in_per_group} x groups {groups}")
        if known(out_c) and out_c % groups:
            raise ShapeError(f"output channels {out_c} are not divisible by groups {groups}")
    if attrs.channels is not None and not dims_match(attrs.channels, out_c):
        raise ShapeError(f"channels={attrs.channels} but the weight gives {out_c} output channels")
    return data, dtype, c_axis, spatial, kernel, out_c


def conv_rel(rank: int):
    """The type relation of `nn.conv{rank}d`."""
    def rel(args: Sequence[Type], attrs: Attrs) -> Type:
        data, dtype, c_axis, spatial, kernel, out_c = _conv_operands(args, attrs, rank, transposed=False)
        pad = attrs.padding
        sizes = [window_out_dim(data.shape[a], k, pad[i], pad[rank + i], attrs.strides[i], attrs.dilation[i],
                                what=f"spatial axis {a}") for i, (a, k) in enumerate(zip(spatial, kernel))]
        return TensorType(_window_shape(data, c_axis, spatial, out_c, sizes), attrs.out_dtype or dtype)
    return rel


def conv_transpose_out_dim(size, kernel: int, pad_before: int, pad_after: int, stride: int, dilation: int,
                           output_padding: int, what: str = "window"):
    """Output length of a transposed convolution along one spatial axis."""
    if stride < 1 or dilation < 1 or kernel < 1:
        raise ShapeError(f"{what}: kernel, stride and dilation must be >= 1, got {kernel}, {stride}, {dilation}")
    if pad_before < 0 or pad_after < 0 or output_padding < 0:
        raise ShapeError(f"{what}: padding must not be negative, got {pad_before}, {pad_after}, {output_padding}")
    if output_padding >= max(stride, dilation):
        raise ShapeError(f"{what}: output_padding {output_padding} must be smaller than the stride {stride} "
                         f"or the dilation {dilation}")
    if not (known(size) or symbolic(size)):
        return Any
    out = (size - 1) * stride + dilation * (kernel - 1) + 1 + output_padding - pad_before - pad_after
    if known(size) and out < 1:
        raise ShapeError(f"{what}: padding {pad_before} + {pad_after} leaves no output (length {out})")
    return out


def conv_transpose_rel(rank: int):
    """The type relation of `nn.conv{rank}d_transpose` (weight [in, out / groups, k...])."""
    def rel(args: Sequence[Type], attrs: Attrs) -> Type:
        data, dtype, c_axis, spatial, kernel, out_c = _conv_operands(args, attrs, rank, transposed=True)
        pad = attrs.padding
        sizes = [conv_transpose_out_dim(data.shape[a], k, pad[i], pad[rank + i], attrs.strides[i],
                                        attrs.dilation[i], attrs.output_padding[i], what=f"spatial axis {a}")
                 for i, (a, k) in enumerate(zip(spatial, kernel))]
        return TensorType(_window_shape(data, c_axis, spatial, out_c, sizes), attrs.out_dtype or dtype)
    return rel


conv2d_rel = conv_rel(2)


def conv_attrs(rank: int, transposed: bool = False) -> list[AttrField]:
    """The attributes of `nn.conv{rank}d` (TVM's), or of its transposed form."""
    data_layout, kernel_layout, transposed_layout = DEFAULT_LAYOUTS[rank]
    fields = [
        AttrField("strides", "int_or_ints", (1,) * rank, convert=per_axis(rank)),
        AttrField("padding", "int_or_ints", (0,) * 2 * rank, convert=padding_of(rank)),
        AttrField("dilation", "int_or_ints", (1,) * rank, convert=per_axis(rank)),
        AttrField("groups", "int", 1),
        AttrField("channels", "int?", None),
        AttrField("kernel_size", "ints?", None),
        AttrField("data_layout", "str", data_layout),
        AttrField("kernel_layout", "str", transposed_layout if transposed else kernel_layout),
        AttrField("out_layout", "str", ""),
        AttrField("out_dtype", "str", ""),
    ]
    if transposed:
        fields.insert(3, AttrField("output_padding", "int_or_ints", (0,) * rank, convert=per_axis(rank)))
    return fields


CONV_ATTRS = conv_attrs(2)


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


def pool_rel(rank: int):
    """The type relation of `nn.max_pool{rank}d` / `nn.avg_pool{rank}d`."""
    def rel(args: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor(args[0], "data")
        if data.ndim != rank + 2:
            raise ShapeError(f"needs {rank + 2}-D data, got {data}")
        c_axis, *spatial = _axes_of(LAYOUTS, attrs.layout, rank, "data")
        pad = attrs.padding
        sizes = [window_out_dim(data.shape[a], attrs.pool_size[i], pad[i], pad[rank + i], attrs.strides[i],
                                attrs.dilation[i], attrs.ceil_mode, what=f"spatial axis {a}")
                 for i, a in enumerate(spatial)]
        return TensorType(_window_shape(data, c_axis, spatial, data.shape[c_axis], sizes), data.dtype)
    return rel


def global_pool2d_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if data.ndim != 4:
        raise ShapeError(f"needs 4-D data, got {data}")
    c_axis, *spatial = _axes_of(LAYOUTS, attrs.layout, 2, "data")
    return TensorType(_window_shape(data, c_axis, spatial, data.shape[c_axis], (1, 1)), data.dtype)


def batch_flatten_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if data.ndim < 1:
        raise ShapeError(f"needs data of rank >= 1, got {data}")
    return TensorType((data.shape[0], product(data.shape[1:])), data.dtype)


def pad_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if len(attrs.pad_width) != data.ndim:
        raise ShapeError(f"pad_width has {len(attrs.pad_width)} pairs for a rank-{data.ndim} tensor {data}")
    out = []
    for d, (before, after) in zip(data.shape, attrs.pad_width):
        if before < 0 or after < 0:
            raise ShapeError(f"negative padding {before, after} is not supported")
        out.append(d + before + after if symbolic(d) else Any)
    return TensorType(out, data.dtype)


def lrn_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    normalize_axis(attrs.axis, data.ndim)
    if attrs.size < 1:
        raise ShapeError(f"size must be >= 1, got {attrs.size}")
    return data


OUT_EW = OpPattern.OUT_ELEMWISE_FUSABLE
for _rank in (1, 2, 3):
    register_op(f"nn.conv{_rank}d", ["data", "weight"], conv_rel(_rank), OUT_EW, attrs=conv_attrs(_rank),
                doc=f"{_rank}-D convolution with strides, padding (befores..., afters...), dilation and groups.")
    register_op(f"nn.conv{_rank}d_transpose", ["data", "weight"], conv_transpose_rel(_rank), OUT_EW,
                attrs=conv_attrs(_rank, transposed=True),
                doc=f"{_rank}-D transposed convolution (the gradient of nn.conv{_rank}d with respect to its "
                    "data), weight [in, out / groups, k...]; output_padding extends the end of each axis.")
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


def pool_attrs(rank: int) -> list[AttrField]:
    """The attributes of `nn.max_pool{rank}d` (TVM's); average pooling adds count_include_pad."""
    return [
        AttrField("pool_size", "int_or_ints", (1,) * rank, convert=per_axis(rank)),
        AttrField("strides", "int_or_ints", (1,) * rank, convert=per_axis(rank)),
        AttrField("dilation", "int_or_ints", (1,) * rank, convert=per_axis(rank)),
        AttrField("padding", "int_or_ints", (0,) * 2 * rank, convert=padding_of(rank)),
        AttrField("layout", "str", DEFAULT_LAYOUTS[rank][0]),
        AttrField("out_layout", "str", ""),
        AttrField("ceil_mode", "bool", False),
    ]


for _rank in (1, 2, 3):
    register_op(f"nn.max_pool{_rank}d", ["data"], pool_rel(_rank), OUT_EW, attrs=pool_attrs(_rank))
    register_op(f"nn.avg_pool{_rank}d", ["data"], pool_rel(_rank), OUT_EW,
                attrs=pool_attrs(_rank) + [AttrField("count_include_pad", "bool", False)])
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
