"""Reference kernels of `image.resize1d/2d/3d` (`ir.op.image` states the coordinate map).

Separable: each spatial axis is resized in turn, by a gather of the nearest input position, or a
weighted sum of the gathers of the two (linear) or four (cubic) neighbouring positions, more when
antialiasing a shrunk axis (so linear in 2-D is bilinear, in 3-D trilinear). Interpolation computes
in float64 and casts to the output dtype at the end.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np

from ir.attrs import Attrs

from .layout import from_nchw, to_nchw
from .reference import _ref

__all__ = ["source_positions"]


def source_positions(attrs: Attrs, axis: int, in_size: int, out_size: int) -> np.ndarray:
    """The input position each output index of spatial axis `axis` maps to (NaN: outside the roi's input)."""
    x = np.arange(out_size, dtype=np.float64)
    scale = float(attrs.scales[axis]) if attrs.scales else out_size / in_size
    scaled_out = in_size * scale  # out', the output length the scale implies
    mode = attrs.coordinate_transformation_mode
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        return in_size / 2 * (1 - out_size / scaled_out) + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if scaled_out > 1 else np.zeros_like(x)
    if mode == "align_corners":
        return x * (in_size - 1) / (scaled_out - 1) if scaled_out > 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    rank = len(attrs.size)
    start, end = attrs.roi[axis] * (in_size - 1), attrs.roi[rank + axis] * (in_size - 1)
    pos = start + x * (end - start) / (out_size - 1) if out_size > 1 else np.full_like(x, (start + end) / 2)
    return np.where((pos < 0) | (pos > in_size - 1), np.nan, pos)


def _nearest(pos: np.ndarray, rounding: str) -> np.ndarray:
    floor = np.floor(pos)
    frac = pos - floor
    if rounding == "round_prefer_floor":
        return floor + (frac > 0.5)
    if rounding == "round_prefer_ceil":
        return floor + (frac >= 0.5)
    return floor if rounding == "floor" else np.ceil(pos)


def _resize_axis(x: np.ndarray, attrs: Attrs, i: int) -> tuple[np.ndarray, np.ndarray]:
    """`x` resized along spatial axis `i`, and where the positions fell outside the roi's input."""
    axis, in_size, out_size = 2 + i, x.shape[2 + i], attrs.size[i]
    pos = source_positions(attrs, i, in_size, out_size)
    outside = np.isnan(pos)
    pos = np.where(outside, 0.0, pos)
    shape = [1] * x.ndim
    shape[axis] = out_size
    if attrs.method == "nearest_neighbor":
        index = np.clip(_nearest(pos, attrs.rounding_method), 0, in_size - 1).astype(np.int64)
        return np.take(x, index, axis=axis), outside.reshape(shape)
    scale = (float(attrs.scales[i]) if attrs.scales else out_size / in_size) if attrs.antialias else 1.0
    neighbours, weights = _filter_taps(pos, attrs, in_size, min(scale, 1.0))
    out = sum(np.take(x, n, axis=axis) * w.reshape(shape) for n, w in zip(neighbours, weights))
    return out, outside.reshape(shape)


def _keys(d: np.ndarray, alpha: float) -> np.ndarray:
    """Keys' cubic convolution kernel."""
    d = np.abs(d)
    near = ((alpha + 2) * d - (alpha + 3)) * d * d + 1
    far = ((alpha * d - 5 * alpha) * d + 8 * alpha) * d - 4 * alpha
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _kernel(attrs: Attrs) -> tuple[Callable[[np.ndarray], np.ndarray], int]:
    """The interpolation kernel of the call's method, and its support radius."""
    if attrs.method == "linear":
        return (lambda d: np.clip(1 - np.abs(d), 0, 1)), 1
    return partial(_keys, alpha=attrs.cubic_alpha), 2


def _filter_taps(pos: np.ndarray, attrs: Attrs, in_size: int, stretch: float) -> tuple[list, list]:
    """The input indices (clamped into the axis) and weights of every tap of the interpolation filter at
    each position: the taps j within the support of the kernel at (j - p) x `stretch` (below 1 when
    antialiasing a shrunk axis, which widens the filter), weights normalised to sum to 1."""
    kernel, support = _kernel(attrs)
    low = np.floor(pos)
    first = int(np.floor(-support / stretch)) + 1
    neighbours = [low.astype(np.int64) + k for k in range(first, 2 - first)]
    weights = [kernel((n - pos) * stretch) for n in neighbours]
    if attrs.method == "cubic" and attrs.cubic_exclude:
        weights = [np.where((n >= 0) & (n < in_size), w, 0.0) for n, w in zip(neighbours, weights)]
    total = sum(weights)
    return [np.clip(n, 0, in_size - 1) for n in neighbours], [w / total for w in weights]


@_ref("image.resize1d", "image.resize2d", "image.resize3d")
def _resize(attrs: Attrs, data: np.ndarray) -> np.ndarray:
    x = to_nchw(data, attrs.layout)
    out_dtype = np.dtype(attrs.out_dtype or data.dtype)
    out = x if attrs.method == "nearest_neighbor" else x.astype(np.float64)
    outside = np.zeros((1,) * x.ndim, dtype=bool)
    for i in range(len(attrs.size)):
        out, out_of_roi = _resize_axis(out, attrs, i)
        outside = outside | out_of_roi
    if outside.any():
        out = np.where(outside, np.asarray(attrs.extrapolation_value, out.dtype), out)
    return from_nchw(out.astype(out_dtype, copy=False), attrs.layout)
