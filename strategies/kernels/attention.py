"""Reference kernels of the attention ops (see `ir.op.fused`): the spelled-out formula in the inputs'
dtype, in the order the exports write it (scores scaled, soft-capped, masked; softmax; times V)."""

from __future__ import annotations

import numpy as np

from ir.attrs import Attrs

from .reference import _ref, _stable_softmax

__all__: list[str] = []


@_ref("nn.attention", "nn.masked_attention")
def _attention(attrs: Attrs, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    groups = q.shape[-3] // k.shape[-3]
    if groups > 1:  # grouped-query attention: each KV head serves `groups` query heads in turn
        k, v = np.repeat(k, groups, axis=-3), np.repeat(v, groups, axis=-3)
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * np.asarray(attrs.scale, q.dtype)
    if getattr(attrs, "softcap", 0.0) > 0:
        cap = np.asarray(attrs.softcap, q.dtype)
        scores = np.tanh(scores / cap) * cap
    if mask is not None:
        scores = scores + mask
    probs = _stable_softmax(scores, -1)
    if getattr(attrs, "nan_rows", "keep") == "zero":
        probs = np.where(np.isnan(probs), np.zeros((), probs.dtype), probs)
    return np.matmul(probs, v)


@_ref("nn.cached_attention")
def _cached_attention(attrs: Attrs, q: np.ndarray, k: np.ndarray, v: np.ndarray, past_k: np.ndarray,
                      past_v: np.ndarray, mask: np.ndarray) -> tuple:
    present_k, present_v = np.concatenate([past_k, k], axis=-2), np.concatenate([past_v, v], axis=-2)
    return _attention(attrs, q, present_k, present_v, mask), present_k, present_v
