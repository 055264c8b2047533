"""torch kernels for the IR ops (the optional `torch` extra): CPU torch, or CUDA through torch.

Each kernel is `kernel(attrs, inputs, out_type) -> tensor | tuple` on torch tensors, with the
reference kernels' semantics (`strategies.kernels.reference`). torch is imported when a kernel
runs, never when this module loads, so strategies can list torch implementations (and the cost
model can price them) on a machine without torch. `applies(op, attrs)` says whether a kernel
covers a call's attributes (e.g. `nn.pad` only in constant mode).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from ir.attrs import Attrs
from ir.op.nn import LAYOUTS
from ir.op.shapes import normalize_axis
from ir.types import Type

from .layout import pool_padding, tap_slices
from .reference import along_axis, reduce_axes, scale_shift

__all__ = ["TORCH_KERNELS", "applies", "run_torch_kernel"]

TorchKernel = Callable[[Attrs, Sequence[Any], Type], Any]
TORCH_KERNELS: dict[str, TorchKernel] = {}
_APPLIES: dict[str, Callable[[Attrs], bool]] = {}


def _torch():
    import torch
    return torch


def _F():
    import torch.nn.functional as F
    return F


def _kernel(*names: str, applies: Callable[[Attrs], bool] | None = None):
    def register(fn: TorchKernel) -> TorchKernel:
        for name in names:
            TORCH_KERNELS[name] = fn
            if applies is not None:
                _APPLIES[name] = applies
        return fn
    return register


def applies(op_name: str, attrs: Attrs) -> bool:
    """True when a torch kernel exists for `op_name` and covers these attributes."""
    return op_name in TORCH_KERNELS and _APPLIES.get(op_name, lambda a: True)(attrs)


def run_torch_kernel(op_name: str, attrs: Attrs, inputs: Sequence[Any], out_type: Type) -> Any:
    return TORCH_KERNELS[op_name](attrs, inputs, out_type)


def _dtype(name: str):
    torch = _torch()
    return {"bool": torch.bool}.get(name) or getattr(torch, name)


# -- element-wise ------------------------------------------------------------------------------
_UNARY = {"negative": "neg", "abs": "abs", "copy": "clone", "sign": "sign", "nn.relu": "relu", "sigmoid": "sigmoid",
          "tanh": "tanh", "erf": "erf", "exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt",
          "floor": "floor", "ceil": "ceil", "round": "round", "sin": "sin", "cos": "cos",
          "logical_not": "logical_not"}
for _name, _method in _UNARY.items():
    _kernel(_name)(lambda attrs, xs, out_type, _method=_method: getattr(xs[0], _method)())

_BINARY = {"add": "add", "subtract": "sub", "multiply": "mul", "power": "pow", "maximum": "maximum",
           "minimum": "minimum", "mod": "fmod", "less": "lt", "greater": "gt", "less_equal": "le",
           "greater_equal": "ge", "equal": "eq", "not_equal": "ne", "logical_and": "logical_and",
           "logical_or": "logical_or"}
for _name, _method in _BINARY.items():
    _kernel(_name)(lambda attrs, xs, out_type, _method=_method: getattr(xs[0], _method)(xs[1]))


@_kernel("divide")
def _divide(attrs, xs, out_type):
    a, b = xs
    return _torch().div(a, b, rounding_mode="trunc" if not a.is_floating_point() else None)


@_kernel("floor_divide")
def _floor_divide(attrs, xs, out_type):
    return _torch().div(xs[0], xs[1], rounding_mode="floor")


@_kernel("nn.leaky_relu")
def _leaky_relu(attrs, xs, out_type):
    return _F().leaky_relu(xs[0], attrs.alpha)


@_kernel("nn.gelu")
def _gelu(attrs, xs, out_type):
    return _F().gelu(xs[0], approximate=attrs.approximate)


@_kernel("clip")
def _clip(attrs, xs, out_type):
    x = xs[0]
    if x.is_floating_point():
        return x.clamp(attrs.a_min, attrs.a_max)
    return x.double().clamp(attrs.a_min, attrs.a_max).to(x.dtype)


@_kernel("cast")
def _cast(attrs, xs, out_type):
    return xs[0].to(_dtype(attrs.dtype))


@_kernel("where")
def _where(attrs, xs, out_type):
    return _torch().where(*xs)


# -- reductions ---------------------------------------------------------------------------------
def _reduction(name: str) -> TorchKernel:
    def kernel(attrs, xs, out_type):
        x = xs[0]
        axes = reduce_axes(attrs, x.dim())
        if not axes:
            return x.clone()
        if name == "prod":
            for axis in sorted(axes, reverse=True):
                x = x.prod(dim=axis, keepdim=attrs.keepdims)
            return x
        return getattr(x, name)(dim=axes, keepdim=attrs.keepdims)
    return kernel


for _name, _method in (("sum", "sum"), ("mean", "mean"), ("max", "amax"), ("min", "amin"), ("prod", "prod")):
    _kernel(_name)(_reduction(_method))


def _arg_reduction(name: str) -> TorchKernel:
    def kernel(attrs, xs, out_type):
        x = xs[0]
        axes = reduce_axes(attrs, x.dim())
        kept = [i for i in range(x.dim()) if i not in axes]
        flat = x.permute(kept + list(axes)).reshape([x.shape[i] for i in kept] + [-1])
        if attrs.select_last_index:  # torch takes the first of equal values: search the flipped values
            found = flat.shape[-1] - 1 - getattr(flat.flip(-1), name)(dim=-1)
        else:
            found = getattr(flat, name)(dim=-1)
        return found.reshape(out_type.concrete_shape).to(_torch().int32)
    return kernel


_kernel("argmax")(_arg_reduction("argmax"))
_kernel("argmin")(_arg_reduction("argmin"))


# -- layout and indexing ------------------------------------------------------------------------
@_kernel("reshape", "squeeze", "expand_dims", "nn.batch_flatten")
def _reshape(attrs, xs, out_type):
    return xs[0].reshape(out_type.concrete_shape)


@_kernel("transpose")
def _transpose(attrs, xs, out_type):
    x = xs[0]
    axes = tuple(reversed(range(x.dim()))) if attrs.axes is None else attrs.axes
    return x.permute(axes).contiguous()


@_kernel("concatenate")
def _concatenate(attrs, xs, out_type):
    return _torch().cat(list(xs[0]), dim=attrs.axis)


@_kernel("split")
def _split(attrs, xs, out_type):
    axis = normalize_axis(attrs.axis, xs[0].dim())
    sizes = [field.shape[axis] for field in out_type.fields]
    return tuple(_torch().split(xs[0], sizes, dim=axis))


@_kernel("strided_slice")
def _strided_slice(attrs, xs, out_type):
    torch = _torch()
    x = xs[0]
    axes = range(len(attrs.begin)) if attrs.axes is None else [normalize_axis(a, x.dim()) for a in attrs.axes]
    strides = attrs.strides or (1,) * len(attrs.begin)
    for axis, begin, end, stride in zip(axes, attrs.begin, attrs.end, strides):
        size = x.shape[axis]
        if attrs.slice_mode == "size":
            end = None if end < 0 else (max(begin + size, 0) if begin < 0 else begin) + end
        picked = list(range(size)[slice(begin, end, stride)])
        x = x.index_select(axis, torch.tensor(picked, dtype=torch.long, device=x.device))
    return x


@_kernel("take")
def _take(attrs, xs, out_type):
    torch = _torch()
    data, indices = xs
    indices = indices.long()
    size = data.numel() if attrs.axis is None else data.shape[normalize_axis(attrs.axis, data.dim())]
    if attrs.mode == "clip":
        indices = indices.clamp(0, size - 1)
    else:  # wrap; "fast" assumes in-range indices, where wrapping changes nothing but negatives
        indices = torch.remainder(indices, size)
    if attrs.axis is None:
        return data.reshape(-1)[indices]
    axis = normalize_axis(attrs.axis, data.dim())
    return data.index_select(axis, indices.reshape(-1)).reshape(out_type.concrete_shape)


@_kernel("broadcast_to")
def _broadcast_to(attrs, xs, out_type):
    return xs[0].expand(attrs.shape).contiguous()


@_kernel("nn.pad", applies=lambda attrs: attrs.pad_mode == "constant")
def _pad(attrs, xs, out_type):
    flat = [p for before_after in reversed(attrs.pad_width) for p in before_after]
    return _F().pad(xs[0], flat, value=attrs.pad_value)


# -- neural-network ops -------------------------------------------------------------------------
def _to_nchw(x, layout: str):
    return x if layout == "NCHW" else x.permute(0, 3, 1, 2)


def _from_nchw(x, layout: str):
    return x if layout == "NCHW" else x.permute(0, 2, 3, 1).contiguous()


def _conv_nchw(attrs, data, weight):
    x = _to_nchw(data, attrs.data_layout)
    w = weight if attrs.kernel_layout == "OIHW" else weight.permute(3, 2, 0, 1)
    if attrs.out_dtype:
        x, w = x.to(_dtype(attrs.out_dtype)), w.to(_dtype(attrs.out_dtype))
    top, left, bottom, right = attrs.padding
    if top != bottom or left != right:
        x = _F().pad(x, (left, right, top, bottom))
        padding = (0, 0)
    else:
        padding = (top, left)
    return _F().conv2d(x, w, stride=attrs.strides, padding=padding, dilation=attrs.dilation, groups=attrs.groups)


def _activation(x, attrs):
    """The fused form's activation (`attrs.activation`, with its parameters)."""
    F, torch = _F(), _torch()
    return {"none": lambda v: v, "relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
            "leaky_relu": lambda v: F.leaky_relu(v, attrs.alpha),
            "clip": lambda v: torch.clamp(v, attrs.a_min, attrs.a_max),
            "hard_sigmoid": lambda v: torch.clamp(v * attrs.alpha + attrs.beta, 0, 1)}[attrs.activation](x)


@_kernel("nn.conv2d")
def _conv2d(attrs, xs, out_type):
    return _from_nchw(_conv_nchw(attrs, *xs), attrs.data_layout)


@_kernel("nn.conv2d_bias_act")
def _conv2d_bias_act(attrs, xs, out_type):
    out = _conv_nchw(attrs, xs[0], xs[1]) + xs[2].reshape(1, -1, 1, 1)
    return _from_nchw(_activation(out, attrs), attrs.data_layout)


@_kernel("nn.dense")
def _dense(attrs, xs, out_type):
    return _F().linear(xs[0], xs[1])


@_kernel("nn.dense_bias_act")
def _dense_bias_act(attrs, xs, out_type):
    return _activation(_F().linear(*xs), attrs)


@_kernel("nn.matmul", "nn.batch_matmul", "nn.fused_matmul")
def _matmul(attrs, xs, out_type):
    a, b = xs
    a = a.transpose(-1, -2) if attrs.transpose_a else a
    b = b.transpose(-1, -2) if attrs.transpose_b else b
    out = _torch().matmul(a, b)
    return out * attrs.alpha if "alpha" in attrs else out


@_kernel("nn.bias_add")
def _bias_add(attrs, xs, out_type):
    x, bias = xs
    return x + along_axis(bias, normalize_axis(attrs.axis, x.dim()), x.dim())


@_kernel("nn.batch_norm")
def _batch_norm(attrs, xs, out_type):
    x, gamma, beta, mean, var = xs
    axis = normalize_axis(attrs.axis, x.dim())
    out = (x - along_axis(mean, axis, x.dim())) / _torch().sqrt(along_axis(var, axis, x.dim()) + attrs.epsilon)
    return (scale_shift(attrs, out, gamma, beta, axis), mean, var)


def _layer_norm(attrs, x, gamma, beta):
    axis = normalize_axis(attrs.axis, x.dim())
    mean = x.mean(dim=axis, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=axis, keepdim=True)
    return scale_shift(attrs, (x - mean) / _torch().sqrt(var + attrs.epsilon), gamma, beta, axis)


@_kernel("nn.layer_norm")
def _layer_norm_kernel(attrs, xs, out_type):
    return _layer_norm(attrs, *xs)


@_kernel("nn.skip_layer_norm")
def _skip_layer_norm(attrs, xs, out_type):
    return _layer_norm(attrs, xs[0] + xs[1], *xs[2:])


@_kernel("nn.attention", "nn.masked_attention")
def _attention(attrs, xs, out_type):
    """torch's fused scaled dot-product attention (an additive float mask, as the op's)."""
    q, k, v, *mask = xs
    groups = q.shape[-3] // k.shape[-3]
    if groups > 1:  # grouped-query attention: each KV head serves `groups` query heads in turn
        k, v = k.repeat_interleave(groups, dim=-3), v.repeat_interleave(groups, dim=-3)
    zero_rows, softcap = getattr(attrs, "nan_rows", "keep") == "zero", getattr(attrs, "softcap", 0.0)
    if zero_rows or softcap > 0:  # the formula, as torch's SDPA export (and Gemma-2's eager attention) writes it
        torch = _torch()
        scores = torch.matmul(q, k.transpose(-1, -2)) * torch.tensor(attrs.scale, dtype=q.dtype)
        if softcap > 0:
            cap = torch.tensor(softcap, dtype=q.dtype)
            scores = torch.tanh(scores / cap) * cap
        probs = torch.softmax(scores + mask[0] if mask else scores, dim=-1)
        if zero_rows:
            probs = torch.where(torch.isnan(probs), torch.zeros((), dtype=probs.dtype), probs)
        return torch.matmul(probs, v)
    return _torch().nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask[0] if mask else None,
                                                               scale=attrs.scale)


@_kernel("nn.softmax")
def _softmax(attrs, xs, out_type):
    return _torch().softmax(xs[0], dim=attrs.axis)


@_kernel("nn.log_softmax")
def _log_softmax(attrs, xs, out_type):
    return _torch().log_softmax(xs[0], dim=attrs.axis)


def _pool_taps(attrs, x, out_type, fill: float, fold):
    """Fold every kernel tap of NCHW `x` padded with `fill` (ceil-mode room included)."""
    _, h_axis, w_axis = LAYOUTS[attrs.layout]
    out_hw = (out_type.shape[h_axis], out_type.shape[w_axis])
    top, left, bottom, right = pool_padding(attrs.padding, attrs.pool_size, attrs.strides, attrs.dilation,
                                            tuple(x.shape[2:]), out_hw)
    x = _F().pad(x, (left, right, top, bottom), value=fill)
    acc = None
    for p in range(attrs.pool_size[0]):
        for q in range(attrs.pool_size[1]):
            rows, cols = tap_slices(p, q, attrs.strides, attrs.dilation, out_hw)
            tap = x[:, :, rows, cols]
            acc = tap.clone() if acc is None else fold(acc, tap)
    return acc


@_kernel("nn.max_pool2d")
def _max_pool2d(attrs, xs, out_type):
    x = _to_nchw(xs[0], attrs.layout)
    low = -math.inf if x.is_floating_point() else _torch().iinfo(x.dtype).min
    return _from_nchw(_pool_taps(attrs, x, out_type, low, _torch().maximum), attrs.layout)


@_kernel("nn.avg_pool2d")
def _avg_pool2d(attrs, xs, out_type):
    torch = _torch()
    x = _to_nchw(xs[0], attrs.layout)
    total = _pool_taps(attrs, x, out_type, 0.0, torch.add)
    inside = torch.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype, device=x.device)
    if attrs.count_include_pad:
        top, left, bottom, right = attrs.padding
        inside = _F().pad(inside, (left, right, top, bottom), value=1.0)
        attrs = attrs.with_(padding=(0, 0, 0, 0))
    count = _pool_taps(attrs, inside, out_type, 0.0, torch.add)
    return _from_nchw(total / count.clamp(min=1), attrs.layout)


@_kernel("nn.global_avg_pool2d")
def _global_avg_pool2d(attrs, xs, out_type):
    return _from_nchw(_to_nchw(xs[0], attrs.layout).mean(dim=(2, 3), keepdim=True), attrs.layout)


@_kernel("nn.global_max_pool2d")
def _global_max_pool2d(attrs, xs, out_type):
    return _from_nchw(_to_nchw(xs[0], attrs.layout).amax(dim=(2, 3), keepdim=True), attrs.layout)


@_kernel("nn.lrn")
def _lrn(attrs, xs, out_type):
    x = xs[0]
    axis = normalize_axis(attrs.axis, x.dim())
    before = attrs.size // 2
    pad = [0, 0] * (x.dim() - 1 - axis) + [before, attrs.size - 1 - before]
    squares = _F().pad(x * x, pad).unfold(axis, attrs.size, 1).sum(dim=-1)
    return x / (attrs.bias + attrs.alpha / attrs.size * squares) ** attrs.beta


@_kernel("nn.bias_gelu")
def _bias_gelu(attrs, xs, out_type):
    return _F().gelu(xs[0] + xs[1], approximate=attrs.approximate)


@_kernel("nn.feed_forward")
def _feed_forward(attrs, xs, out_type):
    x, weight1, bias1, weight2, bias2 = xs
    return _F().linear(_F().gelu(_F().linear(x, weight1, bias1)), weight2, bias2)
