"""Loop-based formulas, written independently of the reference kernels, for tiny inputs only."""

from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = ["conv2d_nchw", "pool2d_nchw", "reduce_loop", "lrn_loop"]


def conv2d_nchw(x: np.ndarray, w: np.ndarray, strides, padding, dilation, groups: int) -> np.ndarray:
    """Direct definition: out[n, o, i, j] = sum over c, p, q of x[n, g*C + c, i*s - pad + p*d, ...] * w[o, c, p, q]."""
    n, c_in, h, wd = x.shape
    c_out, c_per_group, kh, kw = w.shape
    top, left, bottom, right = padding
    oh = (h + top + bottom - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + left + right - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, c_out, oh, ow), dtype=np.float64)
    per_group_out = c_out // groups
    for b, o, i, j in itertools.product(range(n), range(c_out), range(oh), range(ow)):
        g = o // per_group_out
        acc = 0.0
        for c, p, q in itertools.product(range(c_per_group), range(kh), range(kw)):
            y = i * strides[0] - top + p * dilation[0]
            z = j * strides[1] - left + q * dilation[1]
            if 0 <= y < h and 0 <= z < wd:
                acc += float(x[b, g * c_per_group + c, y, z]) * float(w[o, c, p, q])
        out[b, o, i, j] = acc
    return out


def pool2d_nchw(x: np.ndarray, kind: str, size, strides, padding, dilation, ceil_mode: bool,
                count_include_pad: bool = False) -> np.ndarray:
    """Max or average pooling by enumerating each window's taps (TVM's divisor rules for average)."""
    n, c, h, w = x.shape
    top, left, bottom, right = padding

    def out_len(length, k, s, d, before, after):
        room = length + before + after - d * (k - 1) - 1
        count = (room + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (count - 1) * s >= length + before:
            count -= 1
        return count

    oh = out_len(h, size[0], strides[0], dilation[0], top, bottom)
    ow = out_len(w, size[1], strides[1], dilation[1], left, right)
    out = np.zeros((n, c, oh, ow), dtype=np.float64)
    for b, ch, i, j in itertools.product(range(n), range(c), range(oh), range(ow)):
        taps, counted = [], 0
        for p, q in itertools.product(range(size[0]), range(size[1])):
            y = i * strides[0] - top + p * dilation[0]
            z = j * strides[1] - left + q * dilation[1]
            inside = 0 <= y < h and 0 <= z < w
            in_padding = -top <= y < h + bottom and -left <= z < w + right
            if inside:
                taps.append(float(x[b, ch, y, z]))
            if inside or (count_include_pad and in_padding):
                counted += 1
        if kind == "max":
            out[b, ch, i, j] = max(taps) if taps else -math.inf
        else:
            out[b, ch, i, j] = sum(taps) / max(counted, 1)
    return out


def reduce_loop(x: np.ndarray, axes: tuple[int, ...], kind: str, keepdims: bool) -> np.ndarray:
    """Group every element by its kept coordinates and fold each group in Python."""
    kept = [i for i in range(x.ndim) if i not in axes]
    groups: dict[tuple, list] = {}
    for index in itertools.product(*(range(d) for d in x.shape)):
        groups.setdefault(tuple(index[i] for i in kept), []).append(x[index])
    fold = {
        "sum": sum, "max": max, "min": min, "mean": lambda v: sum(v) / len(v), "prod": math.prod,
        "argmax": lambda v: int(np.argmax(v)), "argmin": lambda v: int(np.argmin(v)),
    }[kind]
    out_shape = [x.shape[i] for i in kept]
    out = np.array([fold(groups[k]) for k in sorted(groups)], dtype=np.float64).reshape(out_shape)
    if keepdims:
        out = out.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
    return out


def lrn_loop(x: np.ndarray, size: int, axis: int, bias: float, alpha: float, beta: float) -> np.ndarray:
    """x / (bias + alpha / size * sum of squares over [c - size // 2, c - size // 2 + size)) ** beta."""
    out = np.zeros(x.shape, dtype=np.float64)
    for index in itertools.product(*(range(d) for d in x.shape)):
        c = index[axis]
        acc = 0.0
        for k in range(c - size // 2, c - size // 2 + size):
            if 0 <= k < x.shape[axis]:
                other = list(index)
                other[axis] = k
                acc += float(x[tuple(other)]) ** 2
        out[index] = float(x[index]) / (bias + alpha / size * acc) ** beta
    return out
