"""Normalisation kernels that compete with the reference ones.

- `softmax_compute`: the reference's operations, but all in one output buffer (a donated input
  when the executor offers one), no temporaries beyond the row maxima and sums;
- `batch_norm_compute`: inference batch norm as one per-channel scale and shift, computed once
  when the statistics are constants (else on the channel vectors of each call), so the tensor
  sees one multiply and one add instead of four passes, in a donated input when offered one;
- `layer_norm_compute`: the reference's two passes (mean, then the variance of the centred
  values) in one buffer; with `skip`, the residual sum of `nn.skip_layer_norm` first;
- `layer_norm_one_pass`: mean and mean of squares from one pass each (dot products accumulated in
  float64, no centred temporary), variance as E[x^2] - E[x]^2.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ir.attrs import Attrs
from ir.op.shapes import normalize_axis
from ir.types import Type

from .prepared import Kernel, PreparedCompute, donated_buffer, static_shape
from .reference import along_axis

__all__ = ["softmax_compute", "layer_norm_compute", "layer_norm_one_pass", "batch_norm_compute"]


def _prepare_softmax(attrs: Attrs, constants: Sequence[Any], out_type: Type, config: Mapping[str, Any]) -> Kernel:
    shape, dtype = static_shape(out_type), np.dtype(out_type.dtype)

    def kernel(inputs: Sequence[Any], donated) -> np.ndarray:
        x = inputs[0]
        out = np.subtract(x, x.max(axis=attrs.axis, keepdims=True), out=donated_buffer(inputs, donated, shape, dtype))
        np.exp(out, out=out)
        out /= out.sum(axis=attrs.axis, keepdims=True)
        return out
    return kernel


def softmax_compute() -> PreparedCompute:
    """`nn.softmax` in one buffer."""
    return PreparedCompute(_prepare_softmax, "softmax_inplace", uses_donations=True)


def _normalize_in_place(attrs: Attrs, out: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """`out` (already the data) layer-normalized in place: the reference's operations, in its order."""
    axis = normalize_axis(attrs.axis, out.ndim)
    out -= out.mean(axis=axis, keepdims=True)
    deviation = np.square(out).mean(axis=axis, keepdims=True)
    deviation += attrs.epsilon
    out /= np.sqrt(deviation, out=deviation)
    if attrs.scale:
        out *= along_axis(gamma, axis, out.ndim)
    if attrs.center:
        out += along_axis(beta, axis, out.ndim)
    return out


def layer_norm_compute(skip: bool = False) -> PreparedCompute:
    """`nn.layer_norm` (or, `skip`, `nn.skip_layer_norm`) by two passes, in one buffer."""
    def prepare(attrs: Attrs, constants: Sequence[Any], out_type: Type, config: Mapping[str, Any]) -> Kernel:
        shape, dtype = static_shape(out_type), np.dtype(out_type.dtype)
        data_positions = (0, 1) if skip else (0,)

        def kernel(inputs: Sequence[Any], donated) -> np.ndarray:
            out = donated_buffer(inputs, donated, shape, dtype, among=data_positions)
            if skip:
                out = np.add(inputs[0], inputs[1], out=out)
            elif out is None:  # a donated buffer is the data itself
                out = inputs[0].astype(dtype)
            return _normalize_in_place(attrs, out, *inputs[-2:])
        return kernel

    name = "skip_layer_norm_two_pass" if skip else "layer_norm_two_pass"
    return PreparedCompute(prepare, name, uses_donations=True)


def layer_norm_one_pass(attrs: Attrs, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Layer norm over the last axis; the moments accumulate in float64 so E[x^2] - E[x]^2 keeps its digits."""
    size = x.shape[-1]
    mean = x.sum(axis=-1, keepdims=True, dtype=np.float64) / size
    mean_sq = np.einsum("...i,...i->...", x, x, dtype=np.float64)[..., None] / size
    inv_std = (1.0 / np.sqrt(np.maximum(mean_sq - mean * mean, 0.0) + attrs.epsilon)).astype(x.dtype)
    out = x - mean.astype(x.dtype)
    out *= inv_std
    if attrs.scale:
        out *= gamma
    if attrs.center:
        out += beta
    return out


def _scale_shift(attrs: Attrs, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray, var: np.ndarray, axis: int,
                 ndim: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """scale = gamma / sqrt(var + eps), shift = beta - mean * scale (computed in float64), shaped along `axis`."""
    scale = 1.0 / np.sqrt(var.astype(np.float64) + attrs.epsilon)
    if attrs.scale:
        scale = scale * gamma
    shift = -mean * scale
    if attrs.center:
        shift = shift + beta
    return along_axis(scale.astype(dtype), axis, ndim), along_axis(shift.astype(dtype), axis, ndim)


def _prepare_batch_norm(attrs: Attrs, constants: Sequence[Any], out_type: Type,
                        config: Mapping[str, Any]) -> Kernel:
    data_type = out_type.fields[0]
    shape, dtype = static_shape(data_type), np.dtype(data_type.dtype)
    axis = normalize_axis(attrs.axis, data_type.ndim)
    fixed = (_scale_shift(attrs, *constants[1:], axis, data_type.ndim, dtype)
             if all(c is not None for c in constants[1:]) else None)

    def kernel(inputs: Sequence[Any], donated) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = inputs[0]
        scale, shift = fixed or _scale_shift(attrs, *inputs[1:], axis, x.ndim, x.dtype)
        out = np.multiply(x, scale, out=donated_buffer(inputs, donated, shape, dtype, among=(0,)))
        out += shift
        return out, inputs[3], inputs[4]
    return kernel


def batch_norm_compute() -> PreparedCompute:
    """`nn.batch_norm` (inference) as x * scale + shift; returns (out, moving_mean, moving_var)."""
    return PreparedCompute(_prepare_batch_norm, "batch_norm_affine", uses_donations=True)
