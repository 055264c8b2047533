"""A loop formula of ONNX Resize (nearest and linear, every coordinate transformation), for tiny inputs only."""

from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = ["resize_loop"]


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


def resize_loop(data, size, method, mode, rounding="round_prefer_floor", scales=None, roi=None, extrapolation=0.0):
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
        total = 0.0
        clamped = [min(max(c, 0.0), n - 1) for c, n in zip(coords, in_sizes)]
        for corner in itertools.product((0, 1), repeat=rank):  # the 2^rank neighbours, weighted by distance
            weight, index = 1.0, []
            for c, n, side in zip(clamped, in_sizes, corner):
                low = math.floor(c)
                weight *= (c - low) if side else (1 - (c - low))
                index.append(min(low + side, n - 1))
            total = total + weight * data[(slice(None), slice(None)) + tuple(index)]
        out[(slice(None), slice(None)) + pos] = total
    return out
