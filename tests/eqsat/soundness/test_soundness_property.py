"""Property: for random programs, every rule set extracts a program that computes the same values
as the input on typical and edge inputs (+-0, denormals, +-inf, NaN, full-range integers).

Exact rule sets must give the same bits; sets with float reassociation (`ac`, `all`, `folding`)
must agree within the checker's tolerance and keep NaN and infinities in place.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eqsat
import ir
import strategies
from ir import relay

from eqsat.soundness.check import output_difference, edge_inputs
from eqsat.rules.library import RULESETS

SHAPE = (2, 3)
_UNARY = {"float32": ["nn.relu", "negative", "abs", "sigmoid"], "int32": ["negative", "abs", "nn.relu"]}
_BINARY = ["add", "multiply", "subtract", "maximum"]


def _constant(draw, dtype: str) -> ir.Expr:
    choice = draw(st.sampled_from(["zero", "neg_zero", "one", "random"]))
    value = {"zero": 0.0, "neg_zero": -0.0, "one": 1.0}.get(choice)
    if value is None:
        data = np.asarray(draw(st.lists(st.integers(-4, 4), min_size=3, max_size=3)), dtype)
    else:
        data = np.full(3, value, dtype)
    return relay.const(data.astype(dtype))


@st.composite
def programs(draw) -> ir.IRModule:
    dtype = draw(st.sampled_from(["float32", "int32"]))
    pool: list[ir.Expr] = [relay.var(f"x{i}", shape=SHAPE, dtype=dtype) for i in range(2)]
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["unary", "binary", "const", "layout"]))
        a = draw(st.sampled_from(pool))
        if kind == "unary":
            pool.append(relay.op.get(draw(st.sampled_from(_UNARY[dtype])))(a))
        elif kind == "binary":
            pool.append(relay.op.get(draw(st.sampled_from(_BINARY)))(a, draw(st.sampled_from(pool))))
        elif kind == "const":
            pool.append(relay.op.get(draw(st.sampled_from(["add", "multiply"])))(a, _constant(draw, dtype)))
        else:
            pool.append(relay.transpose(relay.transpose(a, (1, 0)), (1, 0)) if draw(st.booleans())
                        else relay.reshape(relay.reshape(a, (3, 2)), SHAPE))
    return ir.IRModule.from_expr(relay.Tuple(pool[-2:]))


def _exact(rules: str) -> bool:
    return all(getattr(r, "exact", True) for r in RULESETS[rules])


@pytest.mark.parametrize("rules", ["simplify", "fusion", "default", "all"])
@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(mod=programs())
def test_every_rule_set_keeps_the_values_of_random_programs(rules, mod):
    ir.infer_type(mod)
    res = eqsat.optimize(mod, target="ops", rules=rules, limits=eqsat.Limits(iterations=4, nodes=5_000),
                         verify=False)
    exact = _exact(rules)
    for inputs in edge_inputs(mod, extreme=exact):
        with np.errstate(all="ignore"):
            want, got = strategies.evaluate(mod, inputs), strategies.evaluate(res.mod, inputs, res.params)
        for w, g in zip(want, got):
            problem = output_difference(np.asarray(w), np.asarray(g), exact)
            assert not problem, f"{rules}: {problem}\n{ir.astext(mod)}\n->\n{ir.astext(res.mod)}"
