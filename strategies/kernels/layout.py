"""Layouts and window geometry shared by the convolution and pooling kernels (canonical form: NCHW / OIHW)."""

from __future__ import annotations

import numpy as np

__all__ = ["to_nchw", "from_nchw", "weight_to_oihw", "tap_slices", "inside_range", "pool_padding"]

_DATA_TO_NCHW = {"NCHW": None, "NHWC": (0, 3, 1, 2)}
_NCHW_TO_DATA = {"NCHW": None, "NHWC": (0, 2, 3, 1)}
_WEIGHT_TO_OIHW = {"OIHW": None, "HWIO": (3, 2, 0, 1)}


def _permute(x: np.ndarray, table: dict, layout: str, what: str) -> np.ndarray:
    if layout not in table:
        raise ValueError(f"{what} layout {layout!r} is not supported (use one of {sorted(table)})")
    axes = table[layout]
    return x if axes is None else x.transpose(axes)


def to_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    """A view of 4-D data in `layout` as NCHW."""
    return _permute(x, _DATA_TO_NCHW, layout, "data")


def from_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    """A view of NCHW data in `layout`."""
    return _permute(x, _NCHW_TO_DATA, layout, "data")


def weight_to_oihw(w: np.ndarray, kernel_layout: str) -> np.ndarray:
    """A view of a convolution weight in `kernel_layout` as OIHW."""
    return _permute(w, _WEIGHT_TO_OIHW, kernel_layout, "kernel")


def tap_slices(p: int, q: int, strides: tuple[int, int], dilation: tuple[int, int],
               out_hw: tuple[int, int]) -> tuple[slice, slice]:
    """The (row, column) slices of a padded input that kernel tap (p, q) meets over every output pixel."""
    (sh, sw), (dh, dw), (oh, ow) = strides, dilation, out_hw
    return slice(p * dh, p * dh + sh * (oh - 1) + 1, sh), slice(q * dw, q * dw + sw * (ow - 1) + 1, sw)


def inside_range(out_size: int, in_size: int, before: int, offset: int, stride: int) -> tuple[int, int, int]:
    """The outputs [lo, hi) along one axis whose input index `o * stride + offset - before` lies inside
    the unpadded input (`offset`: the kernel tap's, `before`: the padding's), and the input index of lo."""
    start = offset - before
    lo = min(out_size, 0 if start >= 0 else (stride - 1 - start) // stride)
    last = in_size - 1 - start
    hi = min(out_size, last // stride + 1) if last >= 0 else 0
    return lo, max(lo, hi), lo * stride + start


def pool_padding(padding: tuple[int, int, int, int], pool_size: tuple[int, int], strides: tuple[int, int],
                 dilation: tuple[int, int], in_hw: tuple[int, int],
                 out_hw: tuple[int, int]) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) padding that gives every output window its full extent.

    That is the explicit padding, plus whatever room ceil mode needs past it at the bottom and right.
    """
    top, left, bottom, right = padding
    (kh, kw), (sh, sw), (dh, dw), (h, w), (oh, ow) = pool_size, strides, dilation, in_hw, out_hw
    return (top, left, max(bottom, (oh - 1) * sh + dh * (kh - 1) + 1 - h - top),
            max(right, (ow - 1) * sw + dw * (kw - 1) + 1 - w - left))
