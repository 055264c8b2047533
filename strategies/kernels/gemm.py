"""Matrix products that always reach BLAS.

numpy's `matmul` on stacked or broadcast operands (3-D and up, or a transposed stack) can fall
back to its own loops, an order of magnitude slower than BLAS. `gemm` instead makes one 2-D
BLAS call per matrix.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["gemm"]


#: a power of two that makes every float32 and float64 subnormal normal (multiplying by it is exact)
_SCALE = 2.0 ** 64
#: per float dtype: the unsigned view, the bits of its magnitude, and the bits of its smallest normal
_BITS = {np.dtype(np.float32): (np.uint32, 0x7FFFFFFF, 0x00800000),
         np.dtype(np.float64): (np.uint64, 0x7FFFFFFFFFFFFFFF, 0x0010000000000000)}
#: the largest product magnitude scaled up by `_SCALE` to add the subnormals' part in that scale: up to
#: 2^120 after scaling, below float32's largest finite value with room for the part
_HEADROOM = 2.0 ** 56
#: the stride of the sample of an operand looked at for subnormals first, along each axis
_SAMPLE = 5


def _scaled_subnormals(x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(where the float32/float64 `x` is subnormal, its subnormals times `_SCALE` and 0 elsewhere), or
    None where a strided sample of `x` holds no subnormal (or `x` is of another dtype): the sample
    decides, so the common case costs a fraction of a pass. The scaled values are built from the
    bits (a subnormal's magnitude bits count its smallest steps): arithmetic on subnormals is slow."""
    bits = _BITS.get(x.dtype)
    if bits is None:
        return None
    view, magnitude, normal = bits
    sample = x[(slice(None, None, _SAMPLE),) * x.ndim].view(view) & view(magnitude)
    if not ((sample - view(1)) < view(normal - 1)).any():  # 1 <= magnitude < normal (0 wraps to the top)
        return None
    raw = x.view(view)
    steps = raw & view(magnitude)
    sub = (steps - view(1)) < view(normal - 1)
    unit = x.dtype.type(float(np.finfo(x.dtype).smallest_subnormal) * _SCALE)
    scaled = (steps.astype(x.dtype) * unit).view(view) | (raw & ~view(magnitude))  # the sign bit put back
    return sub, np.where(sub, scaled, view(0)).view(x.dtype)


def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """`a @ b` over the last two axes (leading axes broadcast), one BLAS GEMM per matrix.

    BLAS runs a hundred times slower on subnormal operands (a tenth of them already), as verification's
    edge values hold: where one operand has subnormals and the other is finite throughout, the
    subnormals are multiplied apart, scaled by an exact power of two to normal values, and the two
    products summed in that scale (the same sum in another order: the same value within rounding)."""
    for left, x, other in ((True, a, b), (False, b, a)):
        split = _scaled_subnormals(x)
        if split is None or not np.isfinite(other).all():
            continue
        sub, scaled = split
        normal = np.where(sub, x.dtype.type(0), x)  # selects bits: no arithmetic on the subnormals
        product = gemm(normal, b) if left else gemm(a, normal)
        part = gemm(scaled, b) if left else gemm(a, scaled)
        if np.abs(product).max(initial=0) < _HEADROOM:  # scaled up without overflow: tiny sums stay normal
            product *= product.dtype.type(_SCALE)
            product += part
            return np.multiply(product, product.dtype.type(1 / _SCALE), out=out)
        product += part * product.dtype.type(1 / _SCALE)
        return product if out is None else np.copyto(out, product) or out
    return _blas(a, b, out)


def _blas(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
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
