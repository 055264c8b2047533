"""The executor runs the ONNX conformance ops as the reference interpreter does, on numpy and on ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

import strategies
from strategies.interpreter import evaluate

from .conformance_program import conformance_program


@pytest.mark.parametrize("target", ["cpu", "ort"])
def test_executor_matches_the_interpreter(target):
    mod, inputs = conformance_program()
    expected = evaluate(mod, inputs)
    got = strategies.build(mod, target).run(**inputs)
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert e.dtype == g.dtype
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
