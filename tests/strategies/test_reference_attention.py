"""The attention ops' reference kernel against attention written element by element."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from strategies.kernels.reference import run_reference
from tests.ir.attention_cases import B, S, T, attention_inputs, attention_loops


@pytest.mark.parametrize("mask_shape", [None, (B, 1, 1, T), (S, T)])
def test_reference_kernel_matches_the_loops(mask_shape):
    values = attention_inputs(mask_shape)
    op = "nn.masked_attention" if mask_shape else "nn.attention"
    got = run_reference(op, ir.Attrs({"scale": 0.3}), list(values.values()))
    np.testing.assert_allclose(got, attention_loops(values, 0.3), rtol=1e-5, atol=1e-6)


def test_cached_reference_kernel_is_the_loops_over_the_past_and_new_keys():
    values = attention_inputs((B, 1, S, T))
    past = {n: values[n][:, :, :3] for n in "kv"}
    new = {n: values[n][:, :, 3:] for n in "kv"}
    out, present_k, present_v = run_reference("nn.cached_attention", ir.Attrs({"scale": 0.3}),
                                              [values["q"], new["k"], new["v"], past["k"], past["v"], values["mask"]])
    np.testing.assert_array_equal(present_k, values["k"])
    np.testing.assert_array_equal(present_v, values["v"])
    np.testing.assert_allclose(out, attention_loops(values, 0.3), rtol=1e-5, atol=1e-6)
