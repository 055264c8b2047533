"""Layouts and window geometry shared by the convolution and pooling kernels (canonical form: channels
first, NCHW / OIHW and their 1-D and 3-D forms)."""

from __future__ import annotations

import numpy as np

from ir.op.nn import SPATIAL

__all__ = ["to_nchw", "from_nchw", "weight_to_oihw", "pad_spatial", "tap_slices", "inside_range", "pool_padding"]


def _permute(x: np.ndarray, layout: str, target: str) -> np.ndarray:
    """A view of `x`, laid out as `layout`, in the axis order `target` (the same letters)."""
    if len(layout) != x.ndim or sorted(layout) != sorted(target):
        raise ValueError(f"layout {layout!r} does not fit a rank-{x.ndim} array laid out as {target!r}")
    axes = tuple(layout.index(ch) for ch in target)
    return x if axes == tuple(range(x.ndim)) else x.transpose(axes)


def to_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    """A view of 3-, 4- or 5-D data in `layout` (e.g. NHWC) as channels first (NCW, NCHW or NCDHW)."""
    return _permute(x, layout, "NC" + SPATIAL[x.ndim - 2])


def from_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    """A view of channels-first data in `layout`."""
    return _permute(x, "NC" + SPATIAL[x.ndim - 2], layout)


def weight_to_oihw(w: np.ndarray, kernel_layout: str) -> np.ndarray:
    """A view of a convolution weight in `kernel_layout` as O, I, spatial axes (OIW, OIHW or OIDHW)."""
    return _permute(w, kernel_layout, "OI" + SPATIAL[w.ndim - 2])


def pad_spatial(x: np.ndarray, padding: tuple[int, ...], fill: float = 0) -> np.ndarray:
    """Channels-first `x` padded with `fill` by (befores..., afters...) along its spatial axes."""
    rank = x.ndim - 2
    if not any(padding):
        return x
    return np.pad(x, [(0, 0), (0, 0)] + list(zip(padding[:rank], padding[rank:])), constant_values=fill)


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


def pool_padding(padding: tuple[int, ...], pool_size: tuple[int, ...], strides: tuple[int, ...],
                 dilation: tuple[int, ...], in_sizes: tuple[int, ...], out_sizes: tuple[int, ...]) -> tuple[int, ...]:
    """Padding (befores..., afters...) that gives every output window its full extent.

    That is the explicit padding, plus whatever room ceil mode needs past it at the end of each axis.
    """
    rank = len(pool_size)
    befores, afters = padding[:rank], padding[rank:]
    return tuple(befores) + tuple(max(after, (o - 1) * s + d * (k - 1) + 1 - size - before)
                                  for before, after, k, s, d, size, o in
                                  zip(befores, afters, pool_size, strides, dilation, in_sizes, out_sizes))
