"""A decode step's K/V cache folds into attention (`kv_cache`): the rules are exact in every float
dtype, and a grouped-query decode step as the exporters write it (`repeat_kv`'s copies of the
concatenations, their target shape summing the past and new lengths at run time) reaches
`nn.cached_attention` with K/V of their own heads for the ort target, verified in ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat
import ir
from eqsat.rules.library import RULESETS
from eqsat.soundness.check import check_rule
from ir import relay
from ir.types import Any, SizeVar

KV_RULES = {r.name: r for r in RULESETS["kv-cache"]}
BATCH, PAST, SEQ = SizeVar("batch"), SizeVar("past"), SizeVar("seq")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("name", sorted(KV_RULES))
def test_rule_is_exact_in_every_float_dtype(name, dtype):
    result = check_rule(KV_RULES[name], KV_RULES[name].example, dtype=dtype)
    assert result.applied >= 1 and result.programs >= 2, result


def _length(data: ir.Expr, axis: int) -> ir.Expr:
    return relay.take(relay.shape_of(data), relay.const(np.int64(axis)), axis=0)


def _ints(*values: int) -> ir.Expr:
    return relay.const(np.array(values, np.int64))


def _repeat_kv(cache: ir.Expr, new: ir.Expr, past: ir.Expr) -> ir.Expr:
    """Each of the cache's 2 heads copied twice by a run-time expand and reshape, their target's
    length the past's plus the new tokens' (as `transformers` writes `repeat_kv` after the cache)."""
    total = relay.reshape(relay.add(_length(past, 2), _length(new, 2)), [1])
    batch = relay.reshape(_length(new, 0), [1])
    spread = relay.dyn.expand(relay.expand_dims(cache, axis=2),
                              relay.concatenate([batch, _ints(2, 2), total, _ints(8)], axis=0))
    return relay.dyn.reshape(spread, relay.concatenate([batch, _ints(4), total, _ints(8)], axis=0))


def _decode_step() -> ir.IRModule:
    q = relay.var("q", shape=(BATCH, 4, SEQ, 8))
    new = {n: relay.var(n, shape=(BATCH, 2, SEQ, 8)) for n in "kv"}
    past = {n: relay.var(f"past_{n}", shape=(BATCH, 2, PAST, 8)) for n in "kv"}
    mask = relay.var("mask", shape=(Any,) * 4)
    caches = {n: relay.concatenate([past[n], new[n]], axis=-2) for n in "kv"}
    attended = relay.nn.masked_attention(q, *(_repeat_kv(caches[n], new[n], past[n]) for n in "kv"), mask,
                                         scale=0.25, nan_rows="zero")
    params = [q, new["k"], new["v"], past["k"], past["v"], mask]
    return ir.IRModule.from_expr(relay.Function(params, relay.Tuple([attended, caches["k"], caches["v"]])))


def test_grouped_decode_step_reaches_cached_attention_with_its_own_kv_heads():
    res = eqsat.optimize(_decode_step(), {}, target="ort", limits=eqsat.Limits(iterations=8, nodes=5_000))
    calls = [c for c in ir.post_order(res.mod["main"].body)
             if isinstance(c, ir.Call) and getattr(c.op, "name", "").endswith("attention")]
    assert [c.op.name for c in calls] == ["nn.cached_attention"], ir.astext(res.mod)
    assert [a.checked_type.shape[1] for a in calls[0].args[:5]] == [4, 2, 2, 2, 2]
    assert not any(isinstance(c, ir.Call) and getattr(c.op, "name", "") == "concatenate"
                   for c in ir.post_order(res.mod["main"].body))
