"""Attention as PyTorch's SDPA export writes it: `where(isnan(p), 0, p)` around the softmax `p`
(`nan_rows="zero"`), sqrt(scale) on q and on k^T; sound in every float dtype the rules accept, a
row the mask hides entirely included, and refused where the guard is something else."""

from __future__ import annotations

import numpy as np
import pytest

import ir
import strategies
from eqsat.egraph.lower import lower
from eqsat.limits import Limits
from eqsat.rules.library import RULESETS
from eqsat.rules.library.idioms import _guarded_attention_example
from eqsat.runner import saturate
from eqsat.soundness.check import check_rule
from ir import relay

ALL_RULES = {r.name: r for r in RULESETS["all"]}
GUARDED = sorted(n for n in ALL_RULES if n.endswith("-guarded"))


def _applied(mod: ir.IRModule, rules) -> set[str]:
    """The rules that applied when saturating `mod` with `rules`."""
    ir.infer_type(mod)
    report = saturate(lower(mod).egraph, rules, Limits(iterations=6))
    return {name for name, count in report.applied_per_rule.items() if count}


def test_guarded_rules_exist_for_each_scale_and_mask():
    assert GUARDED == ["attention-guarded", "attention-masked-guarded", "attention-scaled-guarded",
                       "attention-scaled-masked-guarded"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", GUARDED)
def test_guarded_rule_is_sound_in_every_float_dtype(name, dtype):
    result = check_rule(ALL_RULES[name], ALL_RULES[name].example, dtype=dtype)
    assert result.applied >= 1 and result.programs >= 2, result


def test_a_hidden_row_is_zero_in_the_spelling_and_in_the_op():
    expr = _guarded_attention_example(scaled=True, masked=True)
    mod = ir.IRModule.from_expr(expr)
    rng = np.random.default_rng(0)
    values = {p.name_hint: rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype("float32")
              for p in mod["main"].params}
    values["mask"][0, 0, 2, :] = -np.inf
    params = {p.name_hint: p for p in mod["main"].params}
    fused = ir.IRModule.from_expr(relay.Function(list(params.values()), relay.nn.masked_attention(
        *(params[n] for n in ("q", "k", "v", "mask")), scale=0.25, nan_rows="zero")))
    with np.errstate(invalid="ignore"):
        want = np.asarray(strategies.evaluate(mod, values))
    got = np.asarray(strategies.evaluate(fused, values))
    assert not np.any(want[0, :, 2]) and np.array_equal(got, want)


def test_sdpa_split_scale_reaches_the_op_through_the_algebra():
    """torch's SDPA export multiplies q and k^T by sqrt(scale) each."""
    q, k = relay.var("q", shape=(2, 3, 5, 4)), relay.var("k", shape=(2, 3, 6, 4))
    v, mask = relay.var("v", shape=(2, 3, 6, 4)), relay.var("mask", shape=(2, 1, 5, 6))
    half = relay.const(np.float32(0.5))
    scores = relay.nn.matmul(relay.multiply(q, half), relay.multiply(relay.transpose(k, (0, 1, 3, 2)), half))
    probs = relay.nn.softmax(relay.add(scores, mask), axis=-1)
    out = relay.nn.matmul(relay.where(relay.isnan(probs), relay.const(np.float32(0)), probs), v)
    applied = _applied(ir.IRModule.from_expr(relay.Function([q, k, v, mask], out)), RULESETS["default"])
    assert "attention-scaled-masked-guarded" in applied


@pytest.mark.parametrize("fill", [-0.0, 1.0])
def test_a_guard_with_another_fill_is_not_attention(fill):
    expr = _guarded_attention_example(scaled=True, masked=True, fill=fill)
    assert not {n for n in _applied(ir.IRModule.from_expr(expr), RULESETS["default"]) if n.startswith("attention")}


GROUPED = ["grouped-attention", "grouped-masked-attention"]
SHAPES = ["dyn-expand-static", "dyn-heads-round-trip", "dyn-reshape-static"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", GROUPED + SHAPES)
def test_grouped_and_shape_rules_are_exact_in_every_float_dtype(name, dtype):
    result = check_rule(ALL_RULES[name], ALL_RULES[name].example, dtype=dtype)
    assert result.applied >= 1 and result.programs >= 2, result


def test_a_rule_that_cannot_decide_yet_is_asked_again_after_the_next_change():
    """`dyn-expand-static` reads the data's shape, which the e-graph learns only once another rule
    has typed it: the match waits (`UNDECIDED`) and fires in a later iteration."""
    from eqsat.rules.pattern import call, pvars
    from eqsat.rules.rule import rule, ruleset
    from ir.types import Any
    x_, = pvars("x")
    data = relay.var("x", shape=(2, 1, 4))
    loose = relay.reshape(relay.dyn.reshape(data, relay.shape_of(data)), newshape=[0, 0, 0])  # typed (?, ?, ?)
    batch = relay.reshape(relay.take(relay.shape_of(data), relay.const(np.int64(0)), axis=0), [1])
    target = relay.concatenate([relay.const(np.array([1], np.int64)), batch, relay.const(np.array([3, 4], np.int64))],
                               axis=0)
    spread = relay.expand_dims(loose, axis=0)  # its class stays; the shape it learns is its operand's
    mod = ir.IRModule.from_expr(relay.Function([data], relay.dyn.expand(spread, target)))
    assert ir.infer_type(mod)["main"].body.args[0].checked_type.shape == (1, Any, Any, Any)
    typing = rule("reshape-of-dyn-reshape-is-data", call("reshape", call("dyn.reshape", x_, pvars("t")[0])),
                  lambda m: m.expr("x"))
    rules = ruleset("t", [ALL_RULES["dyn-expand-static"], typing])
    assert "dyn-expand-static" in _applied(mod, rules)
