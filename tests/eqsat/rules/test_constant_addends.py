"""`fold-constant-addends` folds `(a + c1) + c2` into `a + (c1 + c2)`, except where rounding absorbs
an addend: in float16, 65504 + 3 is 65504, and the fold would put `y + 3` in the class of `y`, after
which the rules fold 3s into new constants on every iteration (a five-op program ran into the
60-second time limit after 26 iterations)."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat
import ir
from ir import relay
from strategies.interpreter import evaluate


def _sum(c1: float, c2: float, dtype: str) -> ir.IRModule:
    x = relay.var("x", shape=(2, 3), dtype=dtype)
    body = relay.add(relay.add(relay.negative(x), relay.const(np.array(c1, dtype))), relay.const(np.array(c2, dtype)))
    return ir.IRModule.from_expr(relay.Function([x], body))


@pytest.mark.parametrize("c1, c2, dtype, folds", [
    (65504.0, 3.0, "float16", False),   # 3 vanishes next to 65504
    (3.0, 65504.0, "float16", False),
    (1e8, 1.0, "float32", False),       # 1 vanishes next to 1e8
    (2.0, 3.0, "float16", True),
    (1000.0, 24.0, "float16", True),
    (-2.0, 3.5, "float32", True),
])
def test_a_constant_sum_that_absorbs_an_addend_is_not_folded(c1, c2, dtype, folds):
    mod = _sum(c1, c2, dtype)
    res = eqsat.optimize(mod, target="cpu", limits=eqsat.Limits(iterations=30, nodes=5_000), verify=False)
    assert res.report.stop_reason is eqsat.StopReason.SATURATED, res.report.summary()
    assert (res.report.applied_per_rule.get("fold-constant-addends", 0) > 0) == folds
    x = {"x": np.array([[-1.0, 0.0, 2.0], [3.0, -70000.0, 0.5]]).astype(dtype)}
    with np.errstate(all="ignore"):
        want, got = np.asarray(evaluate(mod, x)), np.asarray(evaluate(res.mod, x, res.params))
    if not folds:
        np.testing.assert_array_equal(got, want)
