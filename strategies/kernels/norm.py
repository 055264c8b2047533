"""Normalisation kernels that compete with the reference ones.

- `softmax_inplace`: one output buffer, updated in place (no temporaries beyond the row sums);
- `batch_norm_affine`: inference batch norm folded into one per-channel scale and shift (computed
  on the channel vectors), so the tensor sees one multiply and one add instead of four passes;
- `layer_norm_one_pass`: mean and mean of squares from one pass each (dot products accumulated in
  float64, no centred temporary), variance as E[x^2] - E[x]^2.
"""

from __future__ import annotations

import numpy as np

from ir.attrs import Attrs
from ir.op.shapes import normalize_axis

from .reference import along_axis

__all__ = ["softmax_inplace", "layer_norm_one_pass", "batch_norm_affine"]


def softmax_inplace(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    out = x - x.max(axis=attrs.axis, keepdims=True)
    np.exp(out, out=out)
    out /= out.sum(axis=attrs.axis, keepdims=True)
    return out


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


def batch_norm_affine(attrs: Attrs, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray,
                      var: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x * scale + shift, mean, var) with scale = gamma / sqrt(var + eps), shift = beta - mean * scale."""
    axis = normalize_axis(attrs.axis, x.ndim)
    scale = 1.0 / np.sqrt(var.astype(np.float64) + attrs.epsilon)
    if attrs.scale:
        scale = scale * gamma
    shift = -mean * scale
    if attrs.center:
        shift = shift + beta
    out = x * along_axis(scale.astype(x.dtype), axis, x.ndim)
    out += along_axis(shift.astype(x.dtype), axis, x.ndim)
    return out, mean, var
