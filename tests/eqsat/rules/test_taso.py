"""TASO's substitutions: branches become one wide op where the cost model says it pays, both forms stay."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat
import ir
from ir import relay

from eqsat.egraph.lower import lower
from eqsat.limits import Limits, StopReason
from eqsat.rules.library import RULESETS
from eqsat.runner import saturate

_rng = np.random.default_rng(3)


def _const(*shape: int) -> ir.Expr:
    return relay.const(_rng.standard_normal(shape).astype("float32"))


def _branches(n: int, kernel: int = 3) -> ir.IRModule:
    """Inception-like: `n` conv -> bias -> relu branches of one input, concatenated pairwise."""
    x = relay.var("x", shape=(1, 8, 12, 12))
    pad = kernel // 2
    outs = [relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, _const(4 + 4 * i, 8, kernel, kernel), padding=(pad, pad)),
                                            _const(4 + 4 * i))) for i in range(n)]
    out = outs[0]
    for o in outs[1:]:
        out = relay.concatenate([out, o], axis=1)
    return ir.IRModule.from_expr(out)


@pytest.mark.parametrize("target", ["ops", "cpu", "ort"])
def test_concatenated_branches_become_one_fused_convolution(target):
    mod = _branches(2)
    res = eqsat.optimize(mod, rules="default+taso", target=target, limits=Limits(iterations=20))
    assert res.report.stop_reason is StopReason.SATURATED
    assert res.op_counts_after.get("nn.conv2d_bias_act") == 1 and "nn.conv2d" not in res.op_counts_after
    assert res.cost_after < eqsat.optimize(mod, rules="default", target=target, verify=False).cost_after
    assert res.verification is not None and res.verification.status == "verified", res.verification


def test_the_e_graph_keeps_both_forms_and_a_branch_count_saturates():
    mod = _branches(4)
    low = lower(mod)
    report = saturate(low.egraph, RULESETS["taso"] + RULESETS["merge"], Limits(iterations=30, nodes=20_000))
    assert report.stop_reason is StopReason.SATURATED and report.enodes < 400
    ops = {n.op for n in low.view().nodes}
    assert {"concatenate", "split", "nn.conv2d", "nn.relu", "nn.bias_add"} <= ops


def test_branches_with_different_kernels_are_not_merged():
    # a 1x1 next to a 3x3 would need zero taps, which turn an infinity next door into NaN
    x = relay.var("x", shape=(1, 4, 6, 6))
    mod = ir.IRModule.from_expr(relay.concatenate([relay.nn.conv2d(x, _const(4, 4, 3, 3), padding=(1, 1)),
                                                   relay.nn.conv2d(x, _const(4, 4, 1, 1))], axis=1))
    report = saturate(lower(mod).egraph, RULESETS["taso"], Limits(iterations=5))
    assert not report.applied_per_rule.get("concat-conv-merge")


@pytest.mark.parametrize("shapes, reassociated", [(((64, 4), (4, 64), (64, 4)), True),
                                                  (((4, 64), (64, 4), (4, 64)), False)])
def test_matmul_chains_take_the_cheaper_order(shapes, reassociated):
    a, b, c = (relay.var(n, shape=s) for n, s in zip("abc", shapes))
    mod = ir.IRModule.from_expr(relay.nn.matmul(relay.nn.matmul(a, b), c))
    res = eqsat.optimize(mod, rules="taso", target="cpu")
    inner = res.mod["main"].body.args[1]
    assert isinstance(inner, ir.Call) == reassociated
    assert res.cost_after <= res.cost_before


def test_symbolic_sizes_on_the_split_axis_are_declined_not_guessed():
    from ir.types import Any
    a, b = relay.var("a", shape=(Any, 3)), relay.var("b", shape=(Any, 3))
    joined = relay.concatenate([a, b], axis=0)
    parts = relay.split(relay.nn.relu(joined), 2, axis=0)
    mod = ir.IRModule.from_expr(relay.Tuple([relay.split(joined, 2, axis=0)[0],
                                             relay.concatenate([parts[0], parts[1]], axis=0)]))
    report = saturate(lower(mod).egraph, RULESETS["taso"], Limits(iterations=5))
    assert not report.applied_per_rule.get("split-concat-first") and not report.applied_per_rule.get("concat-split")
