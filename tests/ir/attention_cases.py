"""Shapes, inputs and an element-by-element formula for the attention ops' tests."""

from __future__ import annotations

import math

import numpy as np

B, H, S, T, D, DV = 2, 3, 5, 7, 4, 6


def attention_inputs(mask_shape=None, seed=0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {"q": (B, H, S, D), "k": (B, H, T, D), "v": (B, H, T, DV)}
    if mask_shape is not None:
        shapes["mask"] = mask_shape
    return {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}


def attention_loops(values: dict[str, np.ndarray], scale: float) -> np.ndarray:
    """Attention written element by element, in float64."""
    q, k, v = (values[n].astype(np.float64) for n in "qkv")
    (batch, heads, rows, size), cols, width = q.shape, k.shape[2], v.shape[3]
    scores_shape = (batch, heads, rows, cols)
    mask = np.broadcast_to(values["mask"], scores_shape) if "mask" in values else np.zeros(scores_shape)
    out = np.zeros((batch, heads, rows, width))
    for b in range(batch):
        for h in range(heads):
            for i in range(rows):
                scores = [sum(q[b, h, i, d] * k[b, h, j, d] for d in range(size)) * scale + mask[b, h, i, j]
                          for j in range(cols)]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                for e in range(width):
                    out[b, h, i, e] = sum(w / total * v[b, h, j, e] for j, w in enumerate(weights))
    return out
