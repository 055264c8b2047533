"""Soundness bisection: a wrong rule planted among the library's is found and named with its match."""

from __future__ import annotations

import pytest

import ir
from ir import relay

import eqsat
from eqsat import RULESETS, Limits, call, pvars, rule, ruleset

x, = pvars("x")
RELU_DROP = rule("relu-drop", call("nn.relu", x), x)
ERF_AS_TANH = rule("erf-as-tanh", call("erf", x), call("tanh", x))
ZERO_PRODUCT = rule("zero-product", call("multiply", x, call("subtract", x, x)), call("subtract", x, x))


def _planted(*wrong: eqsat.Rule) -> eqsat.RuleSet:
    return RULESETS["default"] + ruleset("planted", wrong)


@pytest.mark.parametrize("model, wrong, op", [("resnet50", RELU_DROP, "nn.relu"), ("bert", ERF_AS_TANH, "erf")])
def test_a_planted_rule_is_found_and_named_with_its_match(model, wrong, op):
    mod, params = ir.models.get(model, small=True)
    found = eqsat.bisect_unsound(mod, params, rules=_planted(wrong))
    culprit = found.culprit
    assert culprit is not None and culprit.rule == wrong.name, found
    assert culprit.iteration == 1 and list(culprit.bindings) == ["x"]
    assert f"{op}(" in culprit.before and f"{op}(" not in culprit.after
    assert f"rule {wrong.name} is unsound" in str(found) and culprit.bindings["x"] in str(found)
    assert found.seconds < 30


def test_optimize_names_the_unsound_rule_when_verification_fails():
    mod, params = ir.models.get("resnet50", small=True)
    with pytest.raises(eqsat.VerificationError, match="first unsound application: rule relu-drop in iteration 1"):
        eqsat.optimize(mod, params, rules=_planted(RELU_DROP))


def test_the_library_replays_without_a_finding():
    mod, params = ir.models.get("bert", small=True)
    found = eqsat.bisect_unsound(mod, params, rules="default")
    assert not found.found and found.checked > 0 and found.iterations >= 2, found
    assert found.summary().startswith("no unsound rule application")


def test_exact_rules_are_checked_bit_for_bit():
    """x * (x - x) is -0.0 where x < 0; x - x is +0.0: verification's tolerance cannot see it."""
    a = relay.var("a", shape=(4, 3))
    found = eqsat.bisect_unsound(a * (a - a), rules=ruleset("planted", [ZERO_PRODUCT]), limits=Limits(iterations=2))
    assert found.culprit is not None and found.culprit.exact, found
    assert "bits differ" in found.culprit.problem
    assert found.culprit.bindings["x"].endswith("input a")


def test_a_bisection_out_of_time_says_so():
    mod, params = ir.models.get("bert", small=True)
    found = eqsat.bisect_unsound(mod, params, rules=_planted(ERF_AS_TANH), seconds=1e-3)
    assert not found.found and not found.finished and found.checked == 0
    assert "budget of 0 s ran out in iteration 1" in found.summary() and "`eqsat bisect MODEL` goes on" in str(found)
