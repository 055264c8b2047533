"""The reference kernel of "nn.rotary_embedding" against a loop over tokens, heads and pairs: exact in
float32 and float16 (products and sum in the formula's order), both pair layouts, partial rotary."""

from __future__ import annotations

import numpy as np
import pytest

from ir.attrs import Attrs
from strategies.kernels.reference import run_reference


def _loop(x: np.ndarray, c: np.ndarray, s: np.ndarray, interleaved: bool) -> np.ndarray:
    out = x.copy()
    half = c.shape[-1]
    for b, n, t in np.ndindex(*x.shape[:3]):
        row = min(b, c.shape[0] - 1)
        for i in range(half):
            a, z = (2 * i, 2 * i + 1) if interleaved else (i, i + half)
            cos, sin = c[row, t, i], s[row, t, i]
            out[b, n, t, a] = x[b, n, t, a] * cos + (-x[b, n, t, z]) * sin
            out[b, n, t, z] = x[b, n, t, z] * cos + x[b, n, t, a] * sin
    return out


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("table, head", [((1, 4, 3), 6), ((2, 4, 2), 6)], ids=["full-shared", "partial-per-row"])
def test_rotary_embedding_equals_the_loop(dtype, interleaved, table, head):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, head)).astype(dtype)
    c, s = (rng.standard_normal(table).astype(dtype) for _ in range(2))
    got = run_reference("nn.rotary_embedding", Attrs({"interleaved": interleaved}), [x, c, s])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, _loop(x, c, s, interleaved))
