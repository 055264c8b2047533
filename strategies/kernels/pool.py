"""Pooling by taps: one strided slice per kernel position along each spatial axis in turn, folded with
maximum or sum.

The reference kernels materialise every window (`sliding_window_view` then a reduction over the
kernel axes); these walk the kernel positions instead, so each step is one vectorised numpy call
over the whole (partly reduced) output. Any spatial rank (1-D, 2-D, 3-D) and layout.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ir.attrs import Attrs

from .layout import from_nchw, inside_range, pad_spatial, to_nchw

__all__ = ["max_pool_taps", "avg_pool_taps"]


def _fold_taps(x: np.ndarray, attrs: Attrs, out_sizes: Sequence[int], fill, fold) -> np.ndarray:
    """Fold every kernel tap of channels-first `x`, positions outside the input counting as `fill`.

    One spatial axis at a time (max and sum are separable): the first axis's taps read whole
    contiguous rows, and each later axis runs on the already reduced, shorter array. Padding is
    never materialised: each tap folds only the outputs it sees inside the input (`inside_range`),
    so explicit padding and ceil mode's extra room are both `fill`.
    """
    acc = x
    for i, out_size in enumerate(out_sizes):
        axis, size, stride = 2 + i, x.shape[2 + i], attrs.strides[i]
        reduced = np.full(acc.shape[:axis] + (out_size,) + acc.shape[axis + 1:], fill, dtype=x.dtype)
        for p in range(attrs.pool_size[i]):
            lo, hi, start = inside_range(out_size, size, attrs.padding[i], p * attrs.dilation[i], stride)
            if lo < hi:
                target = reduced[(slice(None),) * axis + (slice(lo, hi),)]
                fold(target, acc[(slice(None),) * axis + (slice(start, start + (hi - lo - 1) * stride + 1, stride),)],
                     out=target)
        acc = reduced
    return acc


def max_pool_taps(attrs: Attrs, data: np.ndarray, out_sizes: Sequence[int]) -> np.ndarray:
    x = to_nchw(data, attrs.layout)
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    return from_nchw(_fold_taps(x, attrs, out_sizes, low, np.maximum), attrs.layout)


def avg_pool_taps(attrs: Attrs, data: np.ndarray, out_sizes: Sequence[int]) -> np.ndarray:
    x = to_nchw(data, attrs.layout)
    total = _fold_taps(x, attrs, out_sizes, 0, np.add)
    # the divisor: window positions inside the input (plus the explicit padding when
    # count_include_pad), never the extra room ceil mode adds
    inside = np.ones((1, 1) + x.shape[2:], dtype=x.dtype)
    if attrs.count_include_pad:
        inside = pad_spatial(inside, attrs.padding, fill=1)
        attrs = attrs.with_(padding=(0,) * len(attrs.padding))
    count = _fold_taps(inside, attrs, out_sizes, 0, np.add)
    total /= np.maximum(count, 1)
    return from_nchw(total, attrs.layout)
