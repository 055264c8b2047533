"""Saturation and extraction keep a program of the ONNX conformance ops computing the same values."""

from __future__ import annotations

import numpy as np

from eqsat.limits import Limits
from eqsat.optimize import optimize
from strategies.interpreter import evaluate
from tests.strategies.conformance_program import conformance_program


def test_optimize_keeps_the_values():
    mod, inputs = conformance_program()
    result = optimize(mod, limits=Limits(iterations=4))
    for e, g in zip(evaluate(mod, inputs), evaluate(result.mod, inputs)):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
