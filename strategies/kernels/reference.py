"""Reference numpy kernels: one plain, obviously-correct implementation of every IR op.

These define what each op computes (TVM Relay semantics, see `ir/op/*.py` for the attributes) and
are the ground truth that every faster implementation and the interpreter are checked against.
Each kernel is `kernel(attrs, *inputs) -> array | tuple of arrays`; an op whose input is a tuple
(`concatenate`) receives the tuple as one argument. `run_reference` adds the output checks: the
result gets the shape and dtype the op's type relation gives for the actual inputs, so float32
stays float32 whatever numpy promoted to on the way.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import special

from ir.attrs import Attrs
from ir.errors import ShapeError
from ir.op.activation import HARD_SWISH_ALPHA, HARD_SWISH_BETA
from ir.op.layout import OP_ACTIVATIONS
from ir.op.nn import LAYOUTS
from ir.op.registry import get_op
from ir.op.shapes import normalize_axes, normalize_axis
from ir.type_infer import types_compatible
from ir.types import TensorType, TupleType, Type

from ..errors import KernelError
from .layout import from_nchw, pad_spatial, pool_padding, to_nchw, weight_to_oihw

__all__ = [
    "Kernel", "reference_kernel", "ops_with_reference", "run_reference", "value_type", "cast_to_type",
    "apply_activation", "fused_activation", "gelu", "reduce_axes", "along_axis", "scale_shift", "UNARY_FUNCTIONS", "BINARY_FUNCTIONS",
]

Kernel = Callable[..., Any]
_KERNELS: dict[str, Kernel] = {}


def _ref(*names: str) -> Callable[[Kernel], Kernel]:
    def register(fn: Kernel) -> Kernel:
        for name in names:
            if name in _KERNELS:
                raise ValueError(f"reference kernel for {name!r} is defined twice")
            _KERNELS[name] = fn
        return fn
    return register


def reference_kernel(op_name: str) -> Kernel:
    """The reference kernel of `op_name`; raises `KernelError` for an op without one."""
    try:
        return _KERNELS[op_name]
    except KeyError:
        get_op(op_name)  # an unknown name raises OpNotFoundError with suggestions
        raise KernelError(f"op {op_name} has no reference kernel") from None


def value_type(value: Any) -> Type:
    """The IR type of a runtime value (an array or a tuple of values)."""
    if isinstance(value, tuple):
        return TupleType([value_type(v) for v in value])
    return TensorType(value.shape, value.dtype)


def cast_to_type(value: Any, ty: Type) -> Any:
    """`value` with the dtype `ty` prescribes (recursively for tuples); shapes must already agree."""
    if isinstance(ty, TupleType):
        return tuple(cast_to_type(v, t) for v, t in zip(value, ty.fields))
    arr = np.asarray(value)
    want = np.dtype(ty.dtype)
    return arr if arr.dtype == want else arr.astype(want)


def _describe(inputs: Sequence[Any]) -> str:
    return ", ".join(str(value_type(v)) for v in inputs)


def run_reference(op_name: str, attrs: Attrs, inputs: Sequence[Any]) -> Any:
    """Run the reference kernel of `op_name`, with the output shape and dtype the op's relation gives."""
    op = get_op(op_name)
    try:
        out_type = op.relation([value_type(v) for v in inputs], attrs)
    except ShapeError as err:
        raise KernelError(f"{op_name}: {err} (inputs {_describe(inputs)})") from None
    with np.errstate(all="ignore"):
        result = reference_kernel(op_name)(attrs, *inputs)
    result = cast_to_type(result, out_type)
    if not types_compatible(value_type(result), out_type):  # a dimension only known at run time fits any
        raise KernelError(f"{op_name}: the kernel produced {value_type(result)}, the relation says {out_type}")
    return result


# -- element-wise ------------------------------------------------------------------------------

def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """x * Phi(x): exact with erf, or the tanh approximation."""
    if approximate == "tanh":
        inner = x.dtype.type(math.sqrt(2.0 / math.pi)) * (x + x.dtype.type(0.044715) * x ** 3)
        return 0.5 * x * (1.0 + np.tanh(inner))
    return 0.5 * x * (1.0 + special.erf(x / x.dtype.type(math.sqrt(2.0))))


def fused_activation(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    """The activation of a fused form (`ir.op.fused.ACTIVATIONS`, `ir.op.layout.BLOCKED_ACTIVATIONS`): an
    element-wise op's (clip, hard sigmoid, hard swish) by that op's reference kernel, so a fused form gives
    the bits of the op after it."""
    if attrs.activation in OP_ACTIVATIONS:
        op, kept = OP_ACTIVATIONS[attrs.activation]
        return run_reference(op, Attrs({k: getattr(attrs, k) for k in kept}), [x])
    return apply_activation(x, attrs.activation, attrs.alpha)


def apply_activation(x: np.ndarray, activation: str, alpha: float) -> np.ndarray:
    """The activations of the fused forms (`ir.op.fused.ACTIVATIONS`)."""
    if activation == "none":
        return x
    if activation == "relu":
        return np.maximum(x, 0)
    if activation == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if activation == "tanh":
        return np.tanh(x)
    if activation == "leaky_relu":
        return np.where(x > 0, x, x * alpha)
    raise KernelError(f"unknown activation {activation!r}")


#: the element-wise function of each unary op (a numpy ufunc where one computes it)
UNARY_FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "negative": np.negative, "abs": np.abs, "copy": np.copy, "sign": np.sign, "exp": np.exp, "log": np.log,
    "sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil, "tanh": np.tanh, "erf": special.erf,
    "round": np.round,  # half to even, as numpy and ONNX Round
    "sin": np.sin, "cos": np.cos,
    "logical_not": np.logical_not, "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "nn.relu": lambda x: np.maximum(x, 0),
}
for _name, _fn in UNARY_FUNCTIONS.items():
    _ref(_name)(lambda attrs, x, _fn=_fn: _fn(x))


@_ref("nn.leaky_relu")
def _leaky_relu(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, x * attrs.alpha)


@_ref("nn.gelu")
def _gelu(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return gelu(x, attrs.approximate)


def hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """clip(alpha * x + beta, 0, 1), with alpha and beta in the input's dtype (as ONNX HardSigmoid)."""
    gate = x * x.dtype.type(alpha) + x.dtype.type(beta)
    return np.minimum(np.maximum(gate, 0), 1)


def sigmoid_gate(x: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """x * sigmoid(alpha * x) (SiLU for alpha 1, QuickGelu otherwise); NaN at x = -inf, as the product gives."""
    scaled = x if alpha == 1.0 else x * x.dtype.type(alpha)
    return x * UNARY_FUNCTIONS["sigmoid"](scaled)


@_ref("nn.hard_sigmoid")
def _hard_sigmoid(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return hard_sigmoid(x, attrs.alpha, attrs.beta)


@_ref("nn.hard_swish")
def _hard_swish(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return x * hard_sigmoid(x, HARD_SWISH_ALPHA, HARD_SWISH_BETA)


@_ref("nn.silu")
def _silu(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return sigmoid_gate(x)


@_ref("nn.quick_gelu")
def _quick_gelu(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return sigmoid_gate(x, attrs.alpha)


@_ref("clip")
def _clip(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x, attrs.a_min), attrs.a_max)


@_ref("cast")
def _cast(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return x.astype(attrs.dtype)


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":  # integer division truncates toward zero (C, TVM and ONNX Runtime)
        quotient = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -quotient, quotient)
    return a / b


#: the element-wise function of each binary op (a numpy ufunc where one computes it)
BINARY_FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": _divide, "power": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "floor_divide": np.floor_divide,
    "mod": np.fmod,  # truncated remainder: the sign follows the dividend (TVM's `mod`)
    "floor_mod": np.mod,  # floored remainder: the sign follows the divisor
    "less": np.less, "greater": np.greater, "less_equal": np.less_equal, "greater_equal": np.greater_equal,
    "equal": np.equal, "not_equal": np.not_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
}
for _name, _fn in BINARY_FUNCTIONS.items():
    _ref(_name)(lambda attrs, a, b, _fn=_fn: _fn(a, b))


@_ref("where")
def _where(attrs: Attrs, cond: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(cond, x, y)


# -- reductions ---------------------------------------------------------------------------------

def reduce_axes(attrs: Attrs, ndim: int) -> tuple[int, ...]:
    """The axes a reduction's `axis` / `exclude` attributes select, ascending."""
    axes = normalize_axes(attrs.axis, ndim)
    if attrs.exclude:
        axes = tuple(i for i in range(ndim) if i not in axes)
    return axes


def _reduction(fn: Callable) -> Kernel:
    def kernel(attrs: Attrs, x: np.ndarray) -> np.ndarray:
        return fn(x, axis=reduce_axes(attrs, x.ndim), keepdims=attrs.keepdims)
    return kernel


for _name, _fn in (("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min), ("prod", np.prod)):
    _ref(_name)(_reduction(_fn))


def _arg_reduction(fn: Callable) -> Kernel:
    def kernel(attrs: Attrs, x: np.ndarray) -> np.ndarray:
        axes = reduce_axes(attrs, x.ndim)
        kept = [i for i in range(x.ndim) if i not in axes]
        # move the reduced axes last and flatten them: the index is into that flattened block
        flat = x.transpose(kept + list(axes)).reshape([x.shape[i] for i in kept] + [-1])
        if attrs.select_last_index:  # the first extreme of the reversed block is the last one
            index = flat.shape[-1] - 1 - fn(np.flip(flat, axis=-1), axis=-1)
        else:
            index = fn(flat, axis=-1)
        if attrs.keepdims:
            index = index.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
        return index.astype("int32")
    return kernel


_ref("argmax")(_arg_reduction(np.argmax))
_ref("argmin")(_arg_reduction(np.argmin))


# -- layout and indexing ------------------------------------------------------------------------

def _relation_shape(op_name: str, attrs: Attrs, x: np.ndarray) -> tuple[int, ...]:
    return get_op(op_name).relation([value_type(x)], attrs).concrete_shape


@_ref("reshape")
def _reshape(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return x.reshape(_relation_shape("reshape", attrs, x))  # the relation resolves the 0 and -1 codes


@_ref("transpose")
def _transpose(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.transpose(x, attrs.axes)


@_ref("concatenate")
def _concatenate(attrs: Attrs, fields: tuple) -> np.ndarray:
    return np.concatenate(fields, axis=attrs.axis)


@_ref("split")
def _split(attrs: Attrs, x: np.ndarray) -> tuple:
    return tuple(np.split(x, attrs.indices_or_sections, axis=attrs.axis))


@_ref("squeeze")
def _squeeze(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.squeeze(x, axis=attrs.axis)


@_ref("expand_dims")
def _expand_dims(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    axis = normalize_axis(attrs.axis, x.ndim + 1)
    return x.reshape(x.shape[:axis] + (1,) * attrs.num_newaxis + x.shape[axis:])


@_ref("strided_slice")
def _strided_slice(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    axes = range(len(attrs.begin)) if attrs.axes is None else [normalize_axis(a, x.ndim) for a in attrs.axes]
    strides = attrs.strides or (1,) * len(attrs.begin)
    index = [slice(None)] * x.ndim
    for axis, begin, end, stride in zip(axes, attrs.begin, attrs.end, strides):
        if attrs.slice_mode == "size":  # `end` is a size; a negative begin counts from the end
            end = None if end < 0 else (max(begin + x.shape[axis], 0) if begin < 0 else begin) + end
        index[axis] = slice(begin, end, stride)
    return x[tuple(index)]


@_ref("take")
def _take(attrs: Attrs, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    size = data.size if attrs.axis is None else data.shape[normalize_axis(attrs.axis, data.ndim)]
    if attrs.mode == "clip":
        indices = np.clip(indices, 0, size - 1)
    elif attrs.mode == "wrap":
        indices = np.mod(indices, size)
    elif np.any((indices < -size) | (indices >= size)):
        raise KernelError(f"take: an index is out of range for an axis of size {size} (mode 'fast')")
    return np.take(data, indices, axis=attrs.axis)


@_ref("broadcast_to")
def _broadcast_to(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.broadcast_to(x, attrs.shape).copy()


# -- neural-network ops -------------------------------------------------------------------------

def _strided_windows(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
                     dilation: Sequence[int]) -> np.ndarray:
    """Every window of channels-first `x` as [N, C, out..., k...] (the taps of each output position)."""
    rank = len(kernel)
    spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    windows = sliding_window_view(x, spans, axis=tuple(range(2, 2 + rank)))
    steps = tuple(slice(None, None, s) for s in strides) + tuple(slice(None, None, d) for d in dilation)
    return windows[(slice(None), slice(None)) + steps]


_OUT, _TAP = "xyz", "ijk"  # einsum letters of output positions and kernel taps, per spatial axis


def _conv_channels_first(attrs: Attrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Convolution as an explicit sum over every (channel, tap) of every sliding window."""
    x = to_nchw(data, attrs.data_layout)
    w = weight_to_oihw(weight, attrs.kernel_layout)
    if attrs.out_dtype:
        x, w = x.astype(attrs.out_dtype), w.astype(attrs.out_dtype)
    out_c, in_per_group, *kernel = w.shape
    rank, groups = len(kernel), attrs.groups
    windows = _strided_windows(pad_spatial(x, attrs.padding), kernel, attrs.strides, attrs.dilation)
    n, out_sizes = windows.shape[0], windows.shape[2:2 + rank]
    windows = windows.reshape(n, groups, in_per_group, *out_sizes, *kernel)
    w = w.reshape(groups, out_c // groups, in_per_group, *kernel)
    o, k = _OUT[:rank], _TAP[:rank]
    out = np.einsum(f"ngc{o}{k},gfc{k}->ngf{o}", windows, w)
    return out.reshape(n, out_c, *out_sizes)


@_ref("nn.conv1d", "nn.conv2d", "nn.conv3d")
def _conv(attrs: Attrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return from_nchw(_conv_channels_first(attrs, data, weight), attrs.data_layout)


@_ref("nn.conv2d_bias_act")
def _conv2d_bias_act(attrs: Attrs, data: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    out = _conv_channels_first(attrs, data, weight) + bias.reshape(1, -1, 1, 1)
    return from_nchw(fused_activation(attrs, out), attrs.data_layout)


@_ref("nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose")
def _conv_transpose(attrs: Attrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Each input position scatters its channels, times each kernel tap, to
    `position * stride + tap * dilation - pad_before` (per spatial axis) of the output."""
    x = to_nchw(data, attrs.data_layout)
    w = weight_to_oihw(weight, attrs.kernel_layout)  # [out / groups, in, k...]
    if attrs.out_dtype:
        x, w = x.astype(attrs.out_dtype), w.astype(attrs.out_dtype)
    n, in_c, *in_sizes = x.shape
    out_per_group, _, *kernel = w.shape
    rank, groups = len(kernel), attrs.groups
    pad, strides, dilation = attrs.padding, attrs.strides, attrs.dilation
    full = [(size - 1) * s + d * (k - 1) + 1 + extra
            for size, s, d, k, extra in zip(in_sizes, strides, dilation, kernel, attrs.output_padding)]
    out = np.zeros((n, groups, out_per_group, *full), dtype=np.result_type(x, w))
    xg = x.reshape(n, groups, in_c // groups, *in_sizes)
    wg = w.reshape(out_per_group, groups, in_c // groups, *kernel)
    for tap in np.ndindex(*kernel):
        where = tuple(slice(t * d, t * d + s * (size - 1) + 1, s)
                      for t, d, s, size in zip(tap, dilation, strides, in_sizes))
        out[(slice(None),) * 3 + where] += np.einsum(f"ngc{_OUT[:rank]},fgc->ngf{_OUT[:rank]}", xg,
                                                     wg[(Ellipsis,) + tap])
    crop = tuple(slice(pad[i], full[i] - pad[rank + i]) for i in range(rank))
    out = out.reshape(n, groups * out_per_group, *full)[(slice(None), slice(None)) + crop]
    return from_nchw(np.ascontiguousarray(out), attrs.data_layout)


def _dense(attrs: Attrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    if attrs.out_dtype:
        data, weight = data.astype(attrs.out_dtype), weight.astype(attrs.out_dtype)
    return np.einsum("...k,uk->...u", data, weight)


_ref("nn.dense")(_dense)


@_ref("nn.dense_bias_act")
def _dense_bias_act(attrs: Attrs, data: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return fused_activation(attrs, _dense(attrs, data, weight) + bias)


def _matmul(attrs: Attrs, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if attrs.out_dtype:
        a, b = a.astype(attrs.out_dtype), b.astype(attrs.out_dtype)
    a = np.swapaxes(a, -1, -2) if attrs.transpose_a else a
    b = np.swapaxes(b, -1, -2) if attrs.transpose_b else b
    return np.matmul(a, b)


_ref("nn.matmul", "nn.batch_matmul")(_matmul)


@_ref("nn.fused_matmul")
def _fused_matmul(attrs: Attrs, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _matmul(attrs, a, b) * attrs.alpha


def along_axis(vector, axis: int, ndim: int):
    """A 1-D array (or tensor) shaped to broadcast along `axis` of a rank-`ndim` tensor."""
    shape = [1] * ndim
    shape[axis] = -1
    return vector.reshape(shape)


@_ref("nn.bias_add")
def _bias_add(attrs: Attrs, x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return x + along_axis(bias, normalize_axis(attrs.axis, x.ndim), x.ndim)


def scale_shift(attrs: Attrs, normalized, gamma, beta, axis: int):
    """`normalized * gamma + beta` along `axis`, as the `scale` and `center` attributes ask (arrays or tensors)."""
    if attrs.scale:
        normalized = normalized * along_axis(gamma, axis, normalized.ndim)
    if attrs.center:
        normalized = normalized + along_axis(beta, axis, normalized.ndim)
    return normalized


@_ref("nn.batch_norm")
def _batch_norm(attrs: Attrs, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray,
                var: np.ndarray) -> tuple:
    axis = normalize_axis(attrs.axis, x.ndim)
    normalized = (x - along_axis(mean, axis, x.ndim)) / np.sqrt(along_axis(var, axis, x.ndim) + attrs.epsilon)
    return (scale_shift(attrs, normalized, gamma, beta, axis), mean, var)


def _layer_norm_of(attrs: Attrs, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    axis = normalize_axis(attrs.axis, x.ndim)
    mean = x.mean(axis=axis, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axis, keepdims=True)
    return scale_shift(attrs, (x - mean) / np.sqrt(var + attrs.epsilon), gamma, beta, axis)


_ref("nn.layer_norm")(_layer_norm_of)


@_ref("nn.rms_norm")
def _rms_norm(attrs: Attrs, x: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    axis = normalize_axis(attrs.axis, x.ndim)
    mean_square = (x * x).mean(axis=axis, keepdims=True)
    return x / np.sqrt(mean_square + x.dtype.type(attrs.epsilon)) * along_axis(gamma, axis, x.ndim)


@_ref("nn.skip_layer_norm")
def _skip_layer_norm(attrs: Attrs, x: np.ndarray, skip: np.ndarray, gamma: np.ndarray,
                     beta: np.ndarray) -> np.ndarray:
    return _layer_norm_of(attrs, x + skip, gamma, beta)


def _stable_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@_ref("nn.softmax")
def _softmax(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return _stable_softmax(x, attrs.axis)


@_ref("nn.log_softmax")
def _log_softmax(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=attrs.axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=attrs.axis, keepdims=True))


def pool_windows(attrs: Attrs, x: np.ndarray, fill: float, out_sizes: Sequence[int]) -> np.ndarray:
    """Every pooling window of channels-first `x` as [N, C, out..., k...], padded with `fill`.

    The padding is the explicit one plus, in ceil mode, whatever the last window needs past it.
    """
    padding = pool_padding(attrs.padding, attrs.pool_size, attrs.strides, attrs.dilation, x.shape[2:], out_sizes)
    windows = _strided_windows(pad_spatial(x, padding, fill), attrs.pool_size, attrs.strides, attrs.dilation)
    return windows[(slice(None), slice(None)) + tuple(slice(o) for o in out_sizes)]


def _pool_out_sizes(op_name: str, attrs: Attrs, x: np.ndarray) -> tuple[int, ...]:
    shape = _relation_shape(op_name, attrs, x)
    return tuple(shape[a] for a in LAYOUTS[attrs.layout][1:])


def _max_pool(op_name: str) -> Kernel:
    def kernel(attrs: Attrs, data: np.ndarray) -> np.ndarray:
        x = to_nchw(data, attrs.layout)
        low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        windows = pool_windows(attrs, x, low, _pool_out_sizes(op_name, attrs, data))
        return from_nchw(windows.max(axis=tuple(range(-x.ndim + 2, 0))), attrs.layout)
    return kernel


def _avg_pool(op_name: str) -> Kernel:
    def kernel(attrs: Attrs, data: np.ndarray) -> np.ndarray:
        x = to_nchw(data, attrs.layout)
        out_sizes = _pool_out_sizes(op_name, attrs, data)
        taps = tuple(range(-x.ndim + 2, 0))
        total = pool_windows(attrs, x, 0, out_sizes).sum(axis=taps)
        # the divisor counts the window positions inside the input, plus the explicit padding when
        # count_include_pad (never the extra room that ceil mode adds)
        inside = np.ones((1, 1) + x.shape[2:], dtype=x.dtype)
        count_attrs = attrs
        if attrs.count_include_pad:
            inside = pad_spatial(inside, attrs.padding, fill=1)
            count_attrs = attrs.with_(padding=(0,) * len(attrs.padding))
        count = pool_windows(count_attrs, inside, 0, out_sizes).sum(axis=taps)
        return from_nchw(total / np.maximum(count, 1), attrs.layout)
    return kernel


for _rank in (1, 2, 3):
    _ref(f"nn.max_pool{_rank}d")(_max_pool(f"nn.max_pool{_rank}d"))
    _ref(f"nn.avg_pool{_rank}d")(_avg_pool(f"nn.avg_pool{_rank}d"))


@_ref("nn.global_avg_pool2d")
def _global_avg_pool2d(attrs: Attrs, data: np.ndarray) -> np.ndarray:
    return from_nchw(to_nchw(data, attrs.layout).mean(axis=(2, 3), keepdims=True), attrs.layout)


@_ref("nn.global_max_pool2d")
def _global_max_pool2d(attrs: Attrs, data: np.ndarray) -> np.ndarray:
    return from_nchw(to_nchw(data, attrs.layout).max(axis=(2, 3), keepdims=True), attrs.layout)


@_ref("nn.batch_flatten")
def _batch_flatten(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return x.reshape(x.shape[0], -1)


@_ref("nn.pad")
def _pad(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    if attrs.pad_mode == "constant":
        return np.pad(x, attrs.pad_width, constant_values=attrs.pad_value)
    return np.pad(x, attrs.pad_width, mode=attrs.pad_mode)


@_ref("nn.lrn")
def _lrn(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    axis = normalize_axis(attrs.axis, x.ndim)
    before = attrs.size // 2  # TVM's window: [c - size // 2, c - size // 2 + size - 1]
    pad = [(0, 0)] * x.ndim
    pad[axis] = (before, attrs.size - 1 - before)
    squares = sliding_window_view(np.pad(x * x, pad), attrs.size, axis=axis).sum(axis=-1)
    return x / (attrs.bias + attrs.alpha / attrs.size * squares) ** attrs.beta


@_ref("nn.bias_gelu")
def _bias_gelu(attrs: Attrs, x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return gelu(x + bias, attrs.approximate)


_PLAIN_DENSE = Attrs({"out_dtype": ""})


@_ref("nn.feed_forward")
def _feed_forward(attrs: Attrs, x: np.ndarray, weight1: np.ndarray, bias1: np.ndarray, weight2: np.ndarray,
                  bias2: np.ndarray) -> np.ndarray:
    hidden = gelu(_dense(_PLAIN_DENSE, x, weight1) + bias1)
    return _dense(_PLAIN_DENSE, hidden, weight2) + bias2


def ops_with_reference() -> list[str]:
    """The ops that have a reference kernel, sorted."""
    return sorted(_KERNELS)


from . import indexing, piecewise  # noqa: E402,F401  (their kernels register here, with `_ref`)
from . import resize  # noqa: E402,F401  (the image.resize kernels register here, with `_ref`)
from . import nchwc  # noqa: E402,F401  (layout_transform and the blocked convolutions register here, with `_ref`)
from . import dynamic  # noqa: E402,F401  (shape_of and the dyn.* ops register here, with `_ref`)
