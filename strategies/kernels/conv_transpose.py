"""Transposed convolution (`nn.conv1d/2d/3d_transpose`) as one GEMM per kernel tap.

Each tap multiplies every input position's channels by its [out / groups, in / groups] weight
matrices (one BLAS call per image and group) and adds the products into the output positions it
reaches, a strided slice of the uncropped output; the padding is cropped off at the end. A
constant weight is packed once, when the call is prepared.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ir.attrs import Attrs
from ir.types import Type

from .gemm import gemm
from .layout import from_nchw, to_nchw, weight_to_oihw
from .prepared import Kernel, PreparedCompute

__all__ = ["conv_transpose_compute"]


def _pack(attrs: Attrs, weight: np.ndarray) -> np.ndarray:
    """[k..., G, OCg, Cg]: each tap's weight matrices, contiguous."""
    w = weight_to_oihw(weight, attrs.kernel_layout)  # [out / groups, in, k...]
    out_per_group, in_c, *kernel = w.shape
    if attrs.out_dtype:
        w = w.astype(attrs.out_dtype)
    grouped = w.reshape(out_per_group, attrs.groups, in_c // attrs.groups, *kernel)
    return np.ascontiguousarray(grouped.transpose(*range(3, 3 + len(kernel)), 1, 0, 2))


def _run(attrs: Attrs, data: np.ndarray, packed: np.ndarray) -> np.ndarray:
    x = to_nchw(data, attrs.data_layout)
    if attrs.out_dtype:
        x = x.astype(attrs.out_dtype)
    n, in_c, *in_sizes = x.shape
    *kernel, groups, out_per_group, _ = packed.shape
    rank = len(kernel)
    pad, strides, dilation = attrs.padding, attrs.strides, attrs.dilation
    full = [(size - 1) * s + d * (k - 1) + 1 + extra
            for size, s, d, k, extra in zip(in_sizes, strides, dilation, kernel, attrs.output_padding)]
    out = np.zeros((n, groups, out_per_group, *full), dtype=np.result_type(x, packed))
    columns = x.reshape(n, groups, in_c // groups, math.prod(in_sizes))
    for tap in np.ndindex(*kernel):
        where = tuple(slice(t * d, t * d + s * (size - 1) + 1, s)
                      for t, d, s, size in zip(tap, dilation, strides, in_sizes))
        out[(slice(None),) * 3 + where] += gemm(packed[tap], columns).reshape(n, groups, out_per_group, *in_sizes)
    crop = tuple(slice(pad[i], full[i] - pad[rank + i]) for i in range(rank))
    out = out.reshape(n, groups * out_per_group, *full)[(slice(None), slice(None)) + crop]
    return from_nchw(np.ascontiguousarray(out), attrs.data_layout)


def conv_transpose_compute() -> PreparedCompute:
    """`nn.conv{1,2,3}d_transpose` by per-tap GEMMs, in the call's layouts."""
    def prepare(attrs: Attrs, constants: Sequence[Any], out_type: Type, config: Mapping[str, Any]) -> Kernel:
        packed = _pack(attrs, constants[1]) if constants[1] is not None else None

        def kernel(inputs: Sequence[Any], donated) -> np.ndarray:
            return _run(attrs, inputs[0], packed if packed is not None else _pack(attrs, inputs[1]))
        return kernel

    return PreparedCompute(prepare, "conv_transpose_gemm")
