"""Verification's noise scale at a kink: a value just above a relu's or a clip's corner whose two
moved runs both end below it and clamp to it. Their moves measure the distance to the corner, not
the rounding noise of the terms, so such an element takes its row's median noise; MobileNetV2's
folded ReLU6 convolutions, verified with the default rules on the ort target, were refused
because of one such element."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat
import ir
from eqsat.soundness.verify import _noise


def test_elements_whose_ways_met_at_a_corner_take_their_rows_median_noise():
    want = np.array([[1.5e-7, 1.0, 2.0, 3.0, 0.0], [1e-7, 2e-7, 0.0, 5.0, 0.0]], np.float32)
    up = np.array([[0.0, 1.01, 2.02, 3.03, 0.0], [0.0, 0.0, 0.0, 5.0, 0.0]], np.float32)
    down = np.array([[0.0, 0.99, 1.98, 2.97, 0.0], [0.0, 0.0, 0.0, 5.0, 0.0]], np.float32)
    noise = _noise(want, [up, down])
    assert noise[0, 0] == pytest.approx(0.02, rel=1e-3), "the median of 0.01, 0.02 and 0.03 (not of the zero)"
    np.testing.assert_allclose(noise[0, 1:], [0.01, 0.02, 0.03, 0.0], rtol=1e-3)
    assert noise[1, 0] == noise[1, 1] == np.inf, "a row of met or unmoved elements: its noise is unknown"
    assert noise[1, 2] == 0 and noise[1, 3] == 0, "an element the moves left where it was is not met"
    assert _noise(want, [up])[0, 0] == pytest.approx(1.5e-7), "one way alone cannot tell a corner"


@pytest.mark.slow
def test_mobilenet_v2_with_the_default_rules_verifies_on_the_ort_target():
    mod, params = ir.models.get("mobilenet_v2")
    res = eqsat.optimize(mod, params, target="ort", rules="default")
    assert res.verification.passed and res.op_counts_after.get("nn.conv2d_bias_act")
