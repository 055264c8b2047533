"""The executor runs the ONNX conformance ops as the reference interpreter does."""

from __future__ import annotations

import numpy as np

import strategies
from strategies.interpreter import evaluate

from .conformance_program import conformance_program


def test_executor_matches_the_interpreter():
    mod, inputs = conformance_program()
    expected = evaluate(mod, inputs)
    got = strategies.build(mod, "cpu").run(**inputs)
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert e.dtype == g.dtype
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)
