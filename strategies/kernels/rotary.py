"""Reference kernel of `nn.rotary_embedding` (see `ir.op.rotary`): the products and sum in the order
PyTorch's `x * cos + rotate_half(x) * sin` computes them, in the data's dtype."""

from __future__ import annotations

import numpy as np

from ir.attrs import Attrs

from .reference import _ref

__all__ = ["rotary_embedding"]


def rotary_embedding(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, interleaved: bool = False) -> np.ndarray:
    """`x` (B, N, S, H) rotated by per-token `cos`, `sin` (B or 1, S, r/2); features past r pass through."""
    half = cos.shape[-1]
    c, s = cos[:, None], sin[:, None]  # (B or 1, 1, S, r/2): one row per token, shared by the heads
    if interleaved:
        first, second = x[..., 0:2 * half:2], x[..., 1:2 * half:2]
    else:
        first, second = x[..., :half], x[..., half:2 * half]
    out = x.copy()
    rotated_first = first * c + (-second) * s
    rotated_second = second * c + first * s
    if interleaved:
        out[..., 0:2 * half:2], out[..., 1:2 * half:2] = rotated_first, rotated_second
    else:
        out[..., :half], out[..., half:2 * half] = rotated_first, rotated_second
    return out


@_ref("nn.rotary_embedding")
def _rotary_embedding(attrs: Attrs, x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    return rotary_embedding(x, cos, sin, attrs.interleaved)
