"""Matrix products that always reach BLAS.

numpy's `matmul` on stacked or broadcast operands (3-D and up, or a transposed stack) can fall
back to its own loops, an order of magnitude slower than BLAS. `gemm` instead makes one 2-D
BLAS call per matrix.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["gemm"]


def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """`a @ b` over the last two axes (leading axes broadcast), one BLAS GEMM per matrix."""
    if a.ndim == 2 and b.ndim == 2:
        return np.matmul(a, b, out=out)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if out is None and math.prod(batch) == 1:  # a single matrix: skip the broadcasting loop
        product = np.matmul(a.reshape(a.shape[-2:]), b.reshape(b.shape[-2:]))
        return product.reshape(batch + product.shape)
    if out is None:
        out = np.empty(batch + (a.shape[-2], b.shape[-1]), dtype=np.result_type(a, b))
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    for index in np.ndindex(*batch):
        np.matmul(a[index], b[index], out=out[index])
    return out
