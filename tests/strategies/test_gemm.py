"""`strategies.kernels.gemm`: products with subnormal operands (verification's edge values) are the
products BLAS computes, within rounding, and where the other operand is not finite, BLAS's own."""

from __future__ import annotations

import numpy as np
import pytest

from strategies.kernels.gemm import _blas, gemm


def _with_subnormals(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    values = rng.standard_normal(shape).astype(dtype)
    info = np.finfo(dtype)
    picks = rng.random(shape)
    values[picks < 0.1] = info.smallest_subnormal * 3
    values[(picks >= 0.1) & (picks < 0.15)] = -info.tiny / 4
    values[..., 1] = info.smallest_subnormal  # a column (or row) of subnormals alone: a tiny result
    return values


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("side", ["left", "right", "both"])
def test_subnormal_operands_give_the_product_within_rounding(dtype, side):
    rng = np.random.default_rng(0)
    a = _with_subnormals(rng, (6, 40), dtype) if side != "right" else rng.standard_normal((6, 40)).astype(dtype)
    b = (_with_subnormals(rng, (40, 50), dtype) if side != "left" else rng.standard_normal((40, 50)).astype(dtype))
    exact = a.astype(np.longdouble) @ b.astype(np.longdouble)
    got = gemm(a, b)
    ulp = np.finfo(dtype).eps * np.abs(a).astype(np.longdouble) @ np.abs(b).astype(np.longdouble)
    assert np.all(np.abs(got - exact) <= 40 * ulp + 4 * np.finfo(dtype).smallest_subnormal)
    out = np.empty_like(got)
    assert gemm(a, b, out) is out and np.array_equal(out, got)
    assert np.abs(got - _blas(a, b)).max() <= np.abs(_blas(a, b) - exact).max() + 40 * ulp.max()


def test_a_batched_product_with_subnormals_matches_blas():
    rng = np.random.default_rng(1)
    a = _with_subnormals(rng, (2, 3, 8, 5), np.float32)
    b = rng.standard_normal((3, 5, 4)).astype(np.float32)
    np.testing.assert_allclose(gemm(a, b), _blas(a, b), rtol=1e-5, atol=1e-6)


def test_subnormals_times_infinities_are_blas_own_product():
    """Subnormals in one operand, infinities or NaN in the other: BLAS's product as it is (a subnormal
    times infinity is infinite, where a zero put in its place would make NaN)."""
    rng = np.random.default_rng(2)
    a = _with_subnormals(rng, (6, 40), np.float32)
    b = rng.standard_normal((40, 50)).astype(np.float32)
    b[1, 0], b[3, 7] = np.inf, np.nan
    np.testing.assert_array_equal(gemm(a, b), _blas(a, b))


def test_infinities_beside_the_subnormals_stay_where_blas_puts_them():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 40)).astype(np.float32)
    a[0, 0] = 0.0
    b = _with_subnormals(rng, (40, 50), np.float32)
    b[0, 0], b[3, 7] = np.inf, np.nan
    got, want = gemm(a, b), _blas(a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))  # 0 * inf is NaN in both
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-6)
