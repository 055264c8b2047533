"""ONNX's own node cases of the conformance ops, imported and run on the executor.

Inputs that a converter needs at import (repeats, k, axis, depth, target shape, range bounds) are
frozen into initializers first. The cases that do not pass yet are marked with the reason (strictly:
one that starts passing fails until its mark is removed).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.ir.frontend.onnx_node_cases import node_cases, run_node_case

#: op type -> the inputs that must be constants at import
FROZEN = {"CumSum": (1,), "Tile": (1,), "Trilu": (1,), "TopK": (1,), "OneHot": (1,), "Expand": (1,),
          "Range": (0, 1, 2)}
OPS = ["Elu", "Selu", "Celu", "Shrink", "PRelu", "Sign", "Mod", "Where", "Tile", "Expand", "Trilu", "LogSoftmax",
       "CumSum", "Range", "OneHot", "GatherElements", "ScatterND", "TopK", "ArgMax", "ArgMin", "InstanceNormalization"]


def _gap(name: str) -> str | None:
    """Why onnx's case `name` does not pass yet, or None."""
    if "bfloat16" in name:
        return "the frontend has no bfloat16"
    return None


def _params():
    for op in OPS:
        for case in node_cases(op):
            gap = _gap(case.name)
            marks = [pytest.mark.xfail(reason=gap, strict=True)] if gap else []
            yield pytest.param(case, FROZEN.get(op, ()), id=f"{op}-{case.name}", marks=marks)


@pytest.mark.parametrize("case, frozen", list(_params()))
def test_onnx_node_case(case, frozen):
    expected, actual = run_node_case(case, frozen)
    assert len(expected) == len(actual)
    for e, a in zip(expected, actual):
        assert e.shape == a.shape and e.dtype == a.dtype, (e.shape, e.dtype, a.shape, a.dtype)
        np.testing.assert_allclose(a, e, rtol=max(case.rtol, 1e-5), atol=max(case.atol, 1e-5))
