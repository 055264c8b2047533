"""Pooling by taps: one strided slice per kernel position, folded with maximum or sum.

The reference kernels materialise every window (`sliding_window_view` then a reduction over two
axes); these walk the kernel positions instead, so each step is one vectorised numpy call over
the whole output.
"""

from __future__ import annotations

import numpy as np

from ir.attrs import Attrs

from .layout import from_nchw, pool_padding, tap_slices, to_nchw

__all__ = ["max_pool2d_taps", "avg_pool2d_taps"]


def _fold_taps(x: np.ndarray, attrs: Attrs, out_hw: tuple[int, int], fill, fold) -> np.ndarray:
    """Fold every kernel tap of NCHW `x` (padded with `fill`, ceil-mode room included)."""
    top, left, bottom, right = pool_padding(attrs.padding, attrs.pool_size, attrs.strides, attrs.dilation,
                                            x.shape[2:], out_hw)
    if top or left or bottom or right:
        x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    acc = None
    for p in range(attrs.pool_size[0]):
        for q in range(attrs.pool_size[1]):
            rows, cols = tap_slices(p, q, attrs.strides, attrs.dilation, out_hw)
            tap = x[:, :, rows, cols]
            if acc is None:
                acc = tap.copy()
            else:
                fold(acc, tap, out=acc)
    return acc


def max_pool2d_taps(attrs: Attrs, data: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    x = to_nchw(data, attrs.layout)
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    return from_nchw(_fold_taps(x, attrs, out_hw, low, np.maximum), attrs.layout)


def avg_pool2d_taps(attrs: Attrs, data: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    x = to_nchw(data, attrs.layout)
    total = _fold_taps(x, attrs, out_hw, 0, np.add)
    # the divisor: window positions inside the input (plus the explicit padding when
    # count_include_pad), never the extra room ceil mode adds
    top, left, bottom, right = attrs.padding
    inside = np.ones((1, 1) + x.shape[2:], dtype=x.dtype)
    if attrs.count_include_pad:
        inside = np.pad(inside, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=1)
        attrs = attrs.with_(padding=(0, 0, 0, 0))
    count = _fold_taps(inside, attrs, out_hw, 0, np.add)
    total /= np.maximum(count, 1)
    return from_nchw(total, attrs.layout)
