"""Loop formulas of N-d convolution, transposed convolution and pooling (channels first), for tiny inputs only."""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["conv_loop", "conv_transpose_loop", "pool_loop"]


def _positions(shape):
    return itertools.product(*(range(s) for s in shape))


def conv_loop(x, w, strides, pads, dilation, groups):
    """out[n, o, p...] = sum over c, t... of x[n, g*C + c, p*s - pad + t*d] * w[o, c, t...] (zero outside)."""
    rank = x.ndim - 2
    n, _, *size = x.shape
    c_out, cg, *kernel = w.shape
    out_size = [(size[i] + pads[i] + pads[rank + i] - dilation[i] * (kernel[i] - 1) - 1) // strides[i] + 1
                for i in range(rank)]
    out = np.zeros((n, c_out, *out_size))
    for b, o in _positions((n, c_out)):
        g = o // (c_out // groups)
        for pos in _positions(out_size):
            acc = 0.0
            for c in range(cg):
                for tap in _positions(kernel):
                    src = [pos[i] * strides[i] - pads[i] + tap[i] * dilation[i] for i in range(rank)]
                    if all(0 <= src[i] < size[i] for i in range(rank)):
                        acc += x[(b, g * cg + c, *src)] * w[(o, c, *tap)]
            out[(b, o, *pos)] = acc
    return out


def conv_transpose_loop(x, w, strides, pads, dilation, groups, output_padding):
    """out[n, g*F + f, q...] = sum of x[n, g*C + c, p...] * w[g*C + c, f, t...] over q = p*s + t*d - pad."""
    rank = x.ndim - 2
    n, c_in, *size = x.shape
    _, fg, *kernel = w.shape
    cg = c_in // groups
    out_size = [(size[i] - 1) * strides[i] + dilation[i] * (kernel[i] - 1) + 1 + output_padding[i]
                - pads[i] - pads[rank + i] for i in range(rank)]
    out = np.zeros((n, fg * groups, *out_size))
    for b, ci in _positions((n, c_in)):
        g = ci // cg
        for pos in _positions(size):
            for f in range(fg):
                for tap in _positions(kernel):
                    dst = [pos[i] * strides[i] + tap[i] * dilation[i] - pads[i] for i in range(rank)]
                    if all(0 <= dst[i] < out_size[i] for i in range(rank)):
                        out[(b, g * fg + f, *dst)] += x[(b, ci, *pos)] * w[(ci, f, *tap)]
    return out


def pool_loop(x, kind, size, strides, pads, dilation, ceil_mode, count_include_pad=False):
    """Max or average over each window's taps inside the input; the average divides by the taps inside
    (plus those in the explicit padding when count_include_pad)."""
    rank = x.ndim - 2
    n, c, *length = x.shape

    def out_len(i):
        room = length[i] + pads[i] + pads[rank + i] - dilation[i] * (size[i] - 1) - 1
        count = (room + (strides[i] - 1 if ceil_mode else 0)) // strides[i] + 1
        return count - 1 if ceil_mode and (count - 1) * strides[i] >= length[i] + pads[i] else count

    out_size = [out_len(i) for i in range(rank)]
    out = np.zeros((n, c, *out_size))
    for b, ch in _positions((n, c)):
        for pos in _positions(out_size):
            taps, counted = [], 0
            for tap in _positions(size):
                src = [pos[i] * strides[i] - pads[i] + tap[i] * dilation[i] for i in range(rank)]
                inside = all(0 <= src[i] < length[i] for i in range(rank))
                padded = all(-pads[i] <= src[i] < length[i] + pads[rank + i] for i in range(rank))
                if inside:
                    taps.append(x[(b, ch, *src)])
                counted += inside or (count_include_pad and padded)
            out[(b, ch, *pos)] = max(taps) if kind == "max" else sum(taps) / counted
    return out
