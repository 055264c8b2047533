"""Pooling by taps: one strided slice per kernel row, then per kernel column, folded with maximum or sum.

The reference kernels materialise every window (`sliding_window_view` then a reduction over two
axes); these walk the kernel positions instead, so each step is one vectorised numpy call over
the whole (row-reduced) output.
"""

from __future__ import annotations

import numpy as np

from ir.attrs import Attrs

from .layout import from_nchw, inside_range, to_nchw

__all__ = ["max_pool2d_taps", "avg_pool2d_taps"]


def _fold_taps(x: np.ndarray, attrs: Attrs, out_hw: tuple[int, int], fill, fold) -> np.ndarray:
    """Fold every kernel tap of NCHW `x`, positions outside the input counting as `fill`.

    Rows first, then columns (max and sum are separable): the row taps read whole contiguous rows,
    and the column taps run on the already reduced, shorter array. Padding is never materialised:
    each tap folds only the outputs it sees inside the input (`inside_range`), so explicit padding
    and ceil mode's extra room are both `fill`.
    """
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = attrs.pool_size, attrs.strides, attrs.dilation, out_hw
    top, left = attrs.padding[:2]
    n, c, h, w = x.shape
    rows = np.full((n, c, oh, w), fill, dtype=x.dtype)
    for p in range(kh):
        r0, r1, i0 = inside_range(oh, h, top, p * dh, sh)
        if r0 < r1:
            fold(rows[:, :, r0:r1], x[:, :, i0:i0 + (r1 - r0 - 1) * sh + 1:sh], out=rows[:, :, r0:r1])
    acc = np.full((n, c, oh, ow), fill, dtype=x.dtype)
    for q in range(kw):
        c0, c1, j0 = inside_range(ow, w, left, q * dw, sw)
        if c0 < c1:
            fold(acc[..., c0:c1], rows[..., j0:j0 + (c1 - c0 - 1) * sw + 1:sw], out=acc[..., c0:c1])
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
