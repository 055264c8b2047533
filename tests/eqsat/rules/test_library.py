"""Every library rule is sound: each program it puts in an e-class computes the same values."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay

from eqsat.egraph.lower import lift, lower
from eqsat.errors import RuleError
from eqsat.extract import GreedyDagExtractor, OpCount
from eqsat.soundness.check import check_rule
from eqsat.limits import Limits, StopReason
from eqsat.rules.library import RULESETS, resolve_rules
from eqsat.rules.rule import Rewrite, ruleset
from eqsat.runner import saturate

ALL_RULES = {r.name: r for r in RULESETS["all"]}


def _example(name: str):
    return ALL_RULES[name].example


def test_every_library_rule_carries_an_example_and_a_near_miss():
    lacking = sorted(n for n, r in ALL_RULES.items() if not (getattr(r, "example", None) and r.near_misses))
    assert not lacking, f"rules without an example or a near miss next to them: {lacking}"


@pytest.mark.parametrize("name", sorted(ALL_RULES))
def test_rule_is_sound_on_random_and_edge_inputs(name):
    result = check_rule(ALL_RULES[name], _example(name))
    assert result.applied >= 1 and result.programs >= 2, result


@pytest.mark.parametrize("name", sorted(n for n, r in ALL_RULES.items() if getattr(r, "near_misses", ())))
def test_rule_refuses_its_near_misses(name):
    r = ALL_RULES[name]
    for near_miss in r.near_misses:
        mod = ir.IRModule.from_expr(near_miss())
        ir.infer_type(mod)
        low = lower(mod)
        report = saturate(low.egraph, ruleset(name, [r]), Limits(iterations=2))
        assert not report.applied_per_rule.get(name), f"{name} fired on its near miss:\n{ir.astext(mod)}"


def test_fewer_than_a_quarter_of_the_rules_need_a_builder():
    # a builder (a function as the right side) only where a rule computes: folds constants, composes
    # permutations, picks its result's form by the match; every other rule is a template
    rules = {r.name: r for rs in RULESETS.values() for r in rs if isinstance(r, Rewrite)}
    built = sorted(name for name, r in rules.items() if callable(r.rhs))
    assert len(built) < 0.25 * len(rules), f"{len(built)} of {len(rules)} rules have a builder: {built}"


def test_resolve_rules():
    assert resolve_rules("simplify+fusion").names == RULESETS["simplify"].names + RULESETS["fusion"].names
    with pytest.raises(RuleError, match="unknown rule set"):
        resolve_rules("nonsense")
    assert resolve_rules(RULESETS["ac"]) is RULESETS["ac"]


def test_fusion_rules_compose_to_a_fused_conv():
    x, w, b = relay.var("x", shape=(1, 3, 6, 6)), relay.var("w", shape=(4, 3, 3, 3)), relay.var("b", shape=(4,))
    mod = ir.IRModule.from_expr(relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w), b)))
    low = lower(mod)
    saturate(low.egraph, RULESETS["fusion"], Limits(iterations=5))
    view = low.view()
    choice = GreedyDagExtractor().extract(view, view.roots, OpCount())
    body = lift(low, view, choice.node_of)["main"].body
    assert body.op.name == "nn.conv2d_bias_act" and body.attrs.activation == "relu"


@pytest.mark.parametrize("op", ["conv", "dense"])
def test_merge_rules_saturate_on_many_parallel_calls(op):
    # four calls with equal attributes on one input: merged calls share that input again, but their
    # concatenated weights are not leaves, so they never merge again and the run saturates (plain
    # dense layers merge in pairs only)
    rng = np.random.default_rng(0)
    if op == "conv":
        x = relay.var("x", shape=(1, 3, 6, 6))
        calls = [relay.nn.conv2d(x, relay.const(rng.standard_normal((2 + i, 3, 3, 3)).astype("float32")),
                                 padding=(1, 1)) for i in range(4)]
    else:
        x = relay.var("x", shape=(2, 5))
        calls = [relay.nn.dense(x, relay.const(rng.standard_normal((2 + i, 5)).astype("float32"))) for i in range(4)]
    mod = ir.IRModule.from_expr(relay.Tuple(calls))
    low = lower(mod)
    report = saturate(low.egraph, RULESETS["merge"], Limits(iterations=20, nodes=10_000, seconds=30))
    assert report.stop_reason is StopReason.SATURATED, report.stop_reason
    assert sum(report.applied_per_rule.values()) == 6  # one merge per unordered pair, none nested
    assert report.enodes < 100
    assert check_rule(RULESETS["merge"], mod["main"].body, limits=Limits(iterations=20)).programs >= 7
