"""How much work an op does: FLOPs and bytes moved, from its attributes and input/output types.

This is the op's own count, independent of the algorithm; implementations adjust it (e.g.
Winograd's fewer multiplications, im2col's column matrix) through their `estimate`. Symbolic
dimensions count as `assumed_dim`.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ir.attrs import Attrs
from ir.op.layout import BLOCKED_CONVS, plain_conv_types
from ir.op.shapes import normalize_axis
from ir.types import TensorType, TupleType, Type, dim_value

from .roofline import Work

__all__ = ["op_work", "numel", "nbytes", "ASSUMED_DIM", "conv_macs", "dim_size"]

#: the size a symbolic dimension counts as in estimates
ASSUMED_DIM = 32

#: ops that numpy and torch run as views: no data moves and no kernel starts
_VIEWS = {"reshape", "dyn.reshape", "squeeze", "expand_dims", "nn.batch_flatten", "split"}
#: element-wise ops that cost a transcendental evaluation per element (counted as this many FLOPs); the
#: piecewise-linear activations (nn.hard_sigmoid, nn.hard_swish) count one FLOP per element like arithmetic
_TRANSCENDENTAL = {"exp": 8, "log": 8, "tanh": 8, "sigmoid": 8, "erf": 8, "nn.gelu": 12, "nn.bias_gelu": 12,
                   "power": 8, "sin": 8, "cos": 8, "sqrt": 4, "rsqrt": 4, "nn.silu": 9, "nn.quick_gelu": 10, "nn.elu": 9, "nn.selu": 10,
                   "nn.celu": 10}
_CONVOLUTIONS = {"nn.conv2d_bias_act", *(f"nn.conv{r}d{t}" for r in (1, 2, 3) for t in ("", "_transpose"))}
_POOLS = {f"nn.{kind}_pool{r}d" for r in (1, 2, 3) for kind in ("max", "avg")}
_NORMALIZATION = {"nn.softmax": 5, "nn.log_softmax": 5, "nn.layer_norm": 8, "nn.skip_layer_norm": 9,
                  "nn.batch_norm": 4, "nn.rms_norm": 5, "nn.instance_norm": 8}


def numel(ty: Type, assumed_dim: int = ASSUMED_DIM) -> int:
    """Elements of a tensor type (all fields of a tuple type)."""
    if isinstance(ty, TupleType):
        return sum(numel(f, assumed_dim) for f in ty.fields)
    return math.prod(dim_size(d, assumed_dim) for d in ty.shape)


def nbytes(ty: Type, assumed_dim: int = ASSUMED_DIM) -> int:
    """Bytes of a tensor type (all fields of a tuple type)."""
    if isinstance(ty, TupleType):
        return sum(nbytes(f, assumed_dim) for f in ty.fields)
    return numel(ty, assumed_dim) * np.dtype(ty.dtype).itemsize


def dim_size(d, assumed_dim: int = ASSUMED_DIM) -> int:
    """A dimension's size, every size variable in a symbolic one counting as `assumed_dim`."""
    return d if isinstance(d, int) else dim_value(d, assumed_dim)


def conv_macs(attrs: Attrs, in_types: Sequence[Type], out_type: Type, assumed_dim: int = ASSUMED_DIM) -> int:
    """Multiply-adds of a convolution of any spatial rank: every output element sums (in_channels / groups)
    x kernel-size products; a transposed one scatters every input element to (out_channels / groups) x
    kernel-size outputs."""
    data, weight = in_types[0], in_types[1]
    transposed = attrs.kernel_layout.startswith("IO")
    skip = attrs.kernel_layout.index("I" if transposed else "O")
    per_element = math.prod(dim_size(d, assumed_dim) for i, d in enumerate(weight.shape) if i != skip)
    return numel(data if transposed else out_type, assumed_dim) * per_element


def _matmul_macs(attrs: Attrs, in_types: Sequence[Type], out_type: Type, assumed_dim: int) -> int:
    a: TensorType = in_types[0]  # type: ignore[assignment]
    k = a.shape[-2] if attrs.get("transpose_a") else a.shape[-1]
    return numel(out_type, assumed_dim) * dim_size(k, assumed_dim)


def op_work(op_name: str, attrs: Attrs, in_types: Sequence[Type], out_type: Type,
            assumed_dim: int = ASSUMED_DIM) -> Work:
    """The FLOPs and bytes of one call of `op_name`, computed once, with no algorithmic trick."""
    moved = sum(nbytes(t, assumed_dim) for t in in_types) + nbytes(out_type, assumed_dim)
    out_elems = numel(out_type, assumed_dim)
    if op_name in _VIEWS:
        return Work(0.0, 0.0, launches=0)
    if op_name in _CONVOLUTIONS:
        return Work(2.0 * conv_macs(attrs, in_types, out_type, assumed_dim) + 2.0 * out_elems, moved)
    if op_name in BLOCKED_CONVS:  # the convolution of the NCHW / OIHW views
        plain = attrs.with_(data_layout="NCHW", kernel_layout="OIHW", out_layout="")
        data, weight, out = plain_conv_types(attrs, in_types, out_type)
        return Work(2.0 * conv_macs(plain, [data, weight], out, assumed_dim) + 2.0 * out_elems, moved)
    if op_name in ("nn.dense", "nn.dense_bias_act"):
        k = dim_size(in_types[0].shape[-1], assumed_dim)  # type: ignore[union-attr]
        return Work(2.0 * out_elems * k + 2.0 * out_elems, moved)
    if op_name == "nn.feed_forward":  # dense, bias and GELU, then dense and bias; the hidden values stay inside
        data, weight1 = in_types[0], in_types[1]
        k = dim_size(data.shape[-1], assumed_dim)  # type: ignore[union-attr]
        units = dim_size(weight1.shape[0], assumed_dim)  # type: ignore[union-attr]
        hidden = numel(data, assumed_dim) // max(k, 1) * units
        flops = (2.0 * k + 1 + _TRANSCENDENTAL["nn.gelu"]) * hidden + (2.0 * units + 1) * out_elems
        return Work(flops, moved)
    if op_name in ("nn.matmul", "nn.batch_matmul", "nn.fused_matmul"):
        return Work(2.0 * _matmul_macs(attrs, in_types, out_type, assumed_dim), moved)
    if op_name in ("nn.attention", "nn.masked_attention", "nn.cached_attention"):
        q, k, v = in_types[:3]
        if op_name == "nn.cached_attention":  # ONNX Runtime writes the present K/V (outputs), then reads them again
            q, k, v = in_types[0], *out_type.fields[1:]
            moved += nbytes(k, assumed_dim) + nbytes(v, assumed_dim)
        scores = numel(q, assumed_dim) // dim_size(q.shape[-1], assumed_dim) * dim_size(k.shape[-2], assumed_dim)
        head_sizes = dim_size(q.shape[-1], assumed_dim) + dim_size(v.shape[-1], assumed_dim)
        capped = (_TRANSCENDENTAL["tanh"] + 2) * scores if attrs.get("softcap") else 0.0
        return Work(2.0 * scores * head_sizes + _NORMALIZATION["nn.softmax"] * scores + capped, moved)
    if op_name.startswith("image.resize"):  # a gather (nearest), or a weighted sum of 2 or 4 neighbours per axis
        taps = {"nearest_neighbor": 0, "linear": 2, "cubic": 4}[attrs.method] ** len(attrs.size)
        return Work(float(2 * taps * out_elems), moved)
    if op_name in _POOLS:
        return Work(float(out_elems * math.prod(attrs.pool_size)), moved)
    if op_name in _NORMALIZATION:
        return Work(float(_NORMALIZATION[op_name] * numel(in_types[0], assumed_dim)), moved)
    if op_name == "nn.lrn":
        return Work(float(2 * attrs.size * out_elems), moved)
    if op_name == "topk":  # a sort of every row along the axis: n log2 n comparisons each
        data: TensorType = in_types[0]  # type: ignore[assignment]
        row = dim_size(data.shape[normalize_axis(attrs.axis, data.ndim)], assumed_dim)
        return Work(float(numel(data, assumed_dim) * max(math.log2(row), 1.0)), moved)
    if op_name in _TRANSCENDENTAL:
        return Work(float(_TRANSCENDENTAL[op_name] * out_elems), moved)
    in_elems = sum(numel(t, assumed_dim) for t in in_types)
    return Work(float(max(in_elems, out_elems)), moved)
