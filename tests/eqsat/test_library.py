"""Every library rule is sound: each program it puts in an e-class computes the same values."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ir
import strategies
from ir import relay

from eqsat.egraph.lower import lift, lower
from eqsat.errors import ExtractionError, RuleError
from eqsat.extract import GreedyDagExtractor, OpCount, node_costs
from eqsat.limits import Limits, StopReason
from eqsat.rules.library import RULESETS, resolve_rules
from eqsat.rules.library.examples import EXAMPLES
from eqsat.rules.rule import ruleset
from eqsat.runner import saturate

ALL_RULES = {r.name: r for r in RULESETS["all"]}


def test_every_library_rule_has_an_example():
    assert sorted(EXAMPLES) == sorted(ALL_RULES)


def inputs_for(mod: ir.IRModule, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {p.name_hint: (rng.random(p.type_annotation.concrete_shape) - 0.5).astype(p.type_annotation.dtype)
            for p in mod["main"].params}


@pytest.mark.parametrize("name", sorted(ALL_RULES))
def test_rule_is_sound_on_random_inputs(name):
    mod = ir.IRModule.from_expr(EXAMPLES[name]())
    low = lower(mod)
    report = saturate(low.egraph, ruleset(name, [ALL_RULES[name]]), Limits(iterations=2))
    assert report.applied_per_rule.get(name, 0) >= 1, f"{name} does not fire on its example"
    view = low.view()
    root = view.roots[0]
    assert len(view.classes[root]) >= 2 or name.startswith("merge"), "the rule added no alternative at the root"
    assert assert_alternatives_sound(mod, low, name) >= 2, f"{name}: only one distinct program checked"


def assert_alternatives_sound(mod: ir.IRModule, low, label: str) -> int:
    """Force every node of every reachable class into the extracted program once and check each
    program against `mod` on random inputs; returns how many distinct programs were checked."""
    view = low.view()
    base = node_costs(view, OpCount())
    inputs = inputs_for(mod)
    want = strategies.evaluate(mod, inputs)
    alternatives = [n for c in view.reachable() for n in view.classes[c]]
    programs = {ir.astext(mod)}  # a rule that collapses a class (x + 0 -> x) leaves only cyclic alternatives
    for forced in alternatives:  # every node of every class, forced into the program once
        costs = list(base)
        for other in view.classes[view.nodes[forced].eclass]:
            if other != forced:
                costs[other] = math.inf
        try:
            choice = GreedyDagExtractor().extract(view, view.roots, costs)
        except ExtractionError:  # the forced node may only be reachable through a cycle
            continue
        choice.check(view)
        program = lift(low, view, choice.node_of)
        programs.add(ir.astext(program))
        got = strategies.evaluate(program, inputs)
        for a, b in zip(_flat(got), _flat(want)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"{label}: {view.nodes[forced].label()}")
    return len(programs)


def _flat(value):
    return list(value) if isinstance(value, tuple) else [value]


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
    # concatenated weights are not leaves, so they never merge again and the run saturates
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
    assert assert_alternatives_sound(mod, low, f"merge {op}") >= 7
