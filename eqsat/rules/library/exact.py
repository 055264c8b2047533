"""Constants a rule computes at build time, computed in the op's own dtype and refused where the
folded value would overflow or underflow where the program it replaces would not.

    product = fold(np.multiply, c1, c2, dtype="float16")   # None: refuse the rewrite

A folded float is refused when it is infinite or NaN while the exact value (in float64) is finite,
when nonzero constants cancel to zero (`(a + 3) - 3` rounds `a` first), or when it is zero or
subnormal while the exact value is not zero: `(x * 1e-4) * 1e-4` in float16 keeps its values
where `x * (1e-4 * 1e-4)` is `x * 0`. Integers fold with the wrap-around of their
dtype (for + and * that equals the step-by-step result: both are exact modulo 2^bits).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ir.dtype_info import float_info, is_float, numpy_dtype
from ir.expr import Constant

__all__ = ["fold", "rounded", "finite_normal", "subnormal", "constant"]


def finite_normal(exact: np.ndarray, folded: np.ndarray, dtype: str, exempt: np.ndarray | None = None) -> bool:
    """True when `folded` (in `dtype`) is finite wherever `exact` is, and a normal float wherever
    `exact` is nonzero, except where `exempt` (an operand that was zero or subnormal already)."""
    info = float_info(dtype)
    if _all_normal(np.asarray(folded), info):  # finite and normal throughout: nothing to refuse
        return True
    exact = np.asarray(exact, np.float64)
    wide = np.asarray(folded).astype(np.float64)
    if np.any(np.isfinite(exact) & ~np.isfinite(wide)) or np.any(np.isnan(wide) & ~np.isnan(exact)):
        return False
    underflow = (exact != 0) & np.isfinite(exact) & (np.abs(wide) < float(info.tiny))
    return not np.any(underflow if exempt is None else underflow & ~np.asarray(exempt))


def _all_normal(values: np.ndarray, info) -> bool:
    """Whether every element of the float `values` is a finite, normal float of `info` (NaN is not)."""
    if values.size == 0 or values.dtype not in _NATIVE_FLOATS:
        return False
    magnitude = np.abs(values)
    return bool(magnitude.min() >= info.tiny and magnitude.max() <= info.max)


#: the float dtypes numpy compares natively (bfloat16 goes through float64)
_NATIVE_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def subnormal(values: np.ndarray) -> np.ndarray:
    """Where the float `values` are zero or subnormal in their own dtype (nowhere for integers)."""
    if not is_float(values.dtype.name):
        return np.zeros(values.shape, bool)
    tiny = float_info(values.dtype.name).tiny
    if values.dtype in _NATIVE_FLOATS:  # in their own dtype, where tiny is exact: no float64 copy
        return np.abs(values) < values.dtype.type(tiny)
    return np.abs(values.astype(np.float64)) < float(tiny)


def rounded(values: np.ndarray, dtype: str, exempt: np.ndarray | None = None) -> np.ndarray | None:
    """`values` (computed wider, e.g. in float64) rounded once to `dtype`; None when the rounding
    overflows or underflows (see `finite_normal`; `exempt` as there), or an integer does not fit."""
    target = numpy_dtype(dtype)
    values = np.asarray(values)
    if not is_float(dtype):
        as_int = values.astype(target) if values.dtype.kind in "iub" else None
        if as_int is None or not np.array_equal(as_int, values):
            return None
        return as_int
    with np.errstate(all="ignore"):
        out = values.astype(target)
    return out if finite_normal(values.astype(np.float64), out, dtype, exempt) else None


def fold(op: Callable[..., np.ndarray], *operands: np.ndarray, dtype: str) -> np.ndarray | None:
    """`op(*operands)` computed in `dtype` (each operand converted to it first); None when an
    operand does not convert exactly or a float result overflows or underflows (see
    `finite_normal`)."""
    target = numpy_dtype(dtype)
    values = [np.asarray(v) for v in operands]
    with np.errstate(all="ignore"):
        cast = [v.astype(target) for v in values]
        if any(not _same(c, v) for c, v in zip(cast, values)):
            return None
        out = np.asarray(op(*cast)).astype(target)
        if not is_float(dtype):
            return out
        exact = op(*(c.astype(np.float64) for c in cast))
    if np.any((exact == 0) & np.all([c.astype(np.float64) != 0 for c in np.broadcast_arrays(*cast)], axis=0)):
        return None  # nonzero constants that cancel: the step-by-step program rounds before they do
    return out if finite_normal(exact, out, dtype) else None


def _same(cast: np.ndarray, value: np.ndarray) -> bool:
    """`cast` holds `value` exactly (NaN for NaN)."""
    if value.dtype.kind in "iub" and cast.dtype.kind in "iub":
        return bool(np.array_equal(cast, value))
    a, b = cast.astype(np.float64), value.astype(np.float64)
    return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def constant(values: np.ndarray) -> Constant:
    """A constant of exactly `values`' dtype (`ir.const` narrows float64 arrays to float32)."""
    return Constant(np.asarray(values))
