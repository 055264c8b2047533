"""The float predicates' reference kernels, element by element, on every kind of float."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ir
from strategies.kernels.reference import run_reference

VALUES = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e-45, 3e38], np.float32)
FORMULAS = {"isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite}


@pytest.mark.parametrize("op", sorted(FORMULAS))
def test_predicate_matches_math(op):
    got = run_reference(op, ir.Attrs({}), [VALUES.reshape(3, 3)])
    assert got.dtype == np.bool_
    assert got.reshape(-1).tolist() == [FORMULAS[op](float(v)) for v in VALUES]
