"""A loop formula of ONNX Resize (nearest, linear, cubic; every coordinate transformation), for tiny inputs only."""

from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = ["resize_loop", "keys"]


def source(mode, x, in_len, out_len, scale, roi_start, roi_end):
    """ONNX's coordinate transformations, one output index at a time (None: outside the crop)."""
    implied = in_len * scale
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = in_len / 2 - in_len / 2 * out_len / implied
        return offset + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if implied > 1 else 0.0
    if mode == "align_corners":
        return 0.0 if implied == 1 else x * (in_len - 1) / (implied - 1)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if out_len == 1:
        pos = (roi_start + roi_end) / 2 * (in_len - 1)
    else:
        pos = roi_start * (in_len - 1) + x * (roi_end - roi_start) * (in_len - 1) / (out_len - 1)
    return pos if 0 <= pos <= in_len - 1 else None


def round_position(pos, rounding):
    if rounding == "floor":
        return math.floor(pos)
    if rounding == "ceil":
        return math.ceil(pos)
    frac = pos - math.floor(pos)
    if frac == 0.5:
        return math.floor(pos) if rounding == "round_prefer_floor" else math.ceil(pos)
    return math.floor(pos + 0.5)


def keys(d, alpha):
    """Keys' cubic convolution kernel at distance d."""
    d = abs(d)
    if d <= 1:
        return (alpha + 2) * d ** 3 - (alpha + 3) * d ** 2 + 1
    return alpha * d ** 3 - 5 * alpha * d ** 2 + 8 * alpha * d - 4 * alpha if d < 2 else 0.0


def filter_taps(c, n, method, alpha, exclude, stretch):
    """(input index, weight) of every integer j whose kernel value at (j - c) x stretch may be non-zero
    (|j - c| <= radius / stretch), normalised to sum to 1; indices past the axis repeat its edge
    (cubic with exclude: dropped)."""
    radius = (1 if method == "linear" else 2) / stretch
    kernel = (lambda d: max(0.0, 1 - abs(d))) if method == "linear" else (lambda d: keys(d, alpha))
    taps = [(j, kernel((j - c) * stretch)) for j in range(math.floor(c - radius), math.ceil(c + radius) + 1)]
    if exclude:
        taps = [(j, w) for j, w in taps if 0 <= j < n]
    total = sum(w for _, w in taps)
    return [(min(max(j, 0), n - 1), w / total) for j, w in taps]


def resize_loop(data, size, method, mode, rounding="round_prefer_floor", scales=None, roi=None, extrapolation=0.0,
                alpha=-0.75, exclude=False, antialias=False):
    """Every output element from the input positions its coordinates map to (channels-first data)."""
    rank = data.ndim - 2
    in_sizes = data.shape[2:]
    scales = scales or [o / i for o, i in zip(size, in_sizes)]
    roi = roi or [0.0] * (2 * rank)
    out = np.zeros(data.shape[:2] + tuple(size))
    for pos in itertools.product(*(range(s) for s in size)):
        coords = [source(mode, pos[i], in_sizes[i], size[i], scales[i], roi[i], roi[rank + i]) for i in range(rank)]
        if any(c is None for c in coords):
            out[(slice(None), slice(None)) + pos] = extrapolation
            continue
        if method == "nearest_neighbor":
            index = tuple(min(max(round_position(c, rounding), 0), n - 1) for c, n in zip(coords, in_sizes))
            out[(slice(None), slice(None)) + pos] = data[(slice(None), slice(None)) + index]
            continue
        per_axis = [filter_taps(c, n, method, alpha, exclude, min(s, 1.0) if antialias else 1.0)
                    for c, n, s in zip(coords, in_sizes, scales)]
        total = 0.0
        for taps in itertools.product(*per_axis):  # every neighbour, weighted by the product of its axes' weights
            index = tuple(j for j, _ in taps)
            total = total + math.prod(w for _, w in taps) * data[(slice(None), slice(None)) + index]
        out[(slice(None), slice(None)) + pos] = total
    return out
