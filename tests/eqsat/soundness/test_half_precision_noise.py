"""Verification's tolerance for values computed in a 16-bit float: a float32 value computed from
float16 ones is compared at float16's tolerance, and an element's noise is at least its row's
typical move (in float16 a move often rounds away entirely), while a wrong value is still caught."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from eqsat.soundness.verify import _compare, _precisions
from ir import relay


def _module(body, dtype: str = "float16") -> ir.IRModule:
    x = relay.var("x", shape=(4, 8), dtype=dtype)
    mod = ir.IRModule.from_expr(relay.Function([x], body(x)))
    ir.infer_type(mod)
    return mod


def test_a_float32_value_computed_from_float16_has_float16_precision():
    widened = _module(lambda x: relay.Tuple([relay.exp(relay.cast(x, "float32")), relay.const(np.arange(3))]))
    assert _precisions(widened) == ["float16", None]
    assert _precisions(_module(lambda x: relay.exp(x), "float32")) == ["float32"]
    assert _precisions(_module(lambda x: relay.cast(relay.exp(x), "float16"), "float32")) == ["float16"]


def _rows(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Values of a row of 64 and their noise: 0 (the move rounded away) at the element compared, 4e-3
    elsewhere."""
    want = np.random.default_rng(seed).uniform(0.5, 1.0, (2, 64)).astype(np.float32)
    noise = np.full(want.shape, 4e-3)
    noise[0, 3] = 0.0
    return want, noise


@pytest.mark.parametrize("precision,agrees", [("float16", True), ("float32", False)])
def test_a_16_bit_elements_noise_is_at_least_its_rows(precision, agrees):
    want, noise = _rows()
    got = want.copy()
    got[0, 3] += np.float32(0.0035) + np.float32(1e-2) * want[0, 3]  # over RTOL, within 2x the row's noise
    assert _compare(want, got, noise, precision=precision).agrees is agrees


def test_a_wrong_element_is_still_caught_in_float16():
    want, noise = _rows()
    got = want.copy()
    got[0, 3] += np.float32(0.1)  # a wrong value: far beyond the row's noise
    assert not _compare(want, got, noise, precision="float16").agrees
