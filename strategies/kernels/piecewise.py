"""Reference kernels of the piecewise activations and instance normalization (`ir.op.piecewise`).

Constants are taken in the input's dtype, as ONNX Runtime computes them, so float32 stays float32.
"""

from __future__ import annotations

import numpy as np

from ir.attrs import Attrs
from ir.op.shapes import normalize_axis

from .reference import _ref, along_axis, scale_shift


def _exp_minus_one_below_zero(x: np.ndarray, alpha: float) -> np.ndarray:
    """alpha * (exp(x) - 1) for x <= 0 (exp of the positive part is never taken, so never overflows)."""
    return x.dtype.type(alpha) * np.expm1(np.minimum(x, 0))


@_ref("nn.elu")
def _elu(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, _exp_minus_one_below_zero(x, attrs.alpha))


@_ref("nn.selu")
def _selu(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return x.dtype.type(attrs.gamma) * np.where(x > 0, x, _exp_minus_one_below_zero(x, attrs.alpha))


@_ref("nn.celu")
def _celu(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    alpha = x.dtype.type(attrs.alpha)
    return np.maximum(x, 0) + np.minimum(alpha * np.expm1(x / alpha), 0)


@_ref("nn.shrink")
def _shrink(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    """Integers compare against and add the float attributes, then truncate (as ONNX Runtime casts back)."""
    lambd, bias = (x.dtype.type(v) if x.dtype.kind == "f" else v for v in (attrs.lambd, attrs.bias))
    return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0))


@_ref("nn.prelu")
def _prelu(attrs: Attrs, x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    return np.where(x < 0, x * along_axis(alpha, normalize_axis(attrs.axis, x.ndim), x.ndim), x)


@_ref("nn.instance_norm")
def _instance_norm(attrs: Attrs, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    axis = normalize_axis(attrs.axis, x.ndim)
    spatial = tuple(i for i in range(1, x.ndim) if i != axis)
    mean = x.mean(axis=spatial, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=spatial, keepdims=True)
    normalized = (x - mean) / np.sqrt(var + x.dtype.type(attrs.epsilon))
    return scale_shift(attrs, normalized, gamma, beta, axis)
