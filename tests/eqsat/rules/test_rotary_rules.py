"""Rotary embedding rules end to end: programs spelled as PyTorch models write RoPE optimize for the
`ort` target into ONNX Runtime's `RotaryEmbedding` and give the original's outputs in ONNX Runtime;
variants the kernel does not compute stay unfused (and correct). The committed LLM fixtures are
tested in tests/ir/frontend/test_llm_fixtures.py."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat
import ir
from eqsat.rules.library.rotary import _ahead_example, _cache_example, _gptj_example, _rope_example
from ir import relay
from ir.frontend import to_onnx
from tests.ir.frontend.ort_helpers import assert_outputs_close, run_ort

LIMITS = eqsat.Limits(iterations=10, nodes=20_000)


def _feed(mod: ir.IRModule, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for p in mod["main"].params:
        ty = p.checked_type
        out[p.name_hint] = (rng.integers(0, 16, ty.concrete_shape).astype(ty.dtype) if ty.dtype == "int64"
                            else rng.standard_normal(ty.concrete_shape).astype(ty.dtype))
    return out


def _optimized(expr: ir.Expr) -> list[str]:
    mod = ir.IRModule.from_expr(relay.Function(ir.free_vars(expr), expr))
    ir.infer_type(mod)
    res = eqsat.optimize(mod, {}, target="ort", limits=LIMITS)
    model = to_onnx(res.mod, res.params, contrib=True)
    feed = _feed(mod)
    assert_outputs_close(run_ort(to_onnx(mod, {}), feed), run_ort(model, feed), rel=1e-5)
    return [n.op_type for n in model.graph.node]


@pytest.mark.parametrize("program", [_rope_example, lambda: _rope_example(split=True),
                                     lambda: _rope_example(partial=True), _cache_example, _gptj_example,
                                     lambda: _gptj_example(tiled=False), _ahead_example,
                                     lambda: _ahead_example(tiled=False), lambda: _ahead_example(halved=True),
                                     lambda: _ahead_example(tiled=False, halved=True),
                                     lambda: _ahead_example(casts=1), lambda: _ahead_example(casts=2),
                                     lambda: _ahead_example(halved=True, casts=1)],
                         ids=["sliced", "split", "partial", "cache", "gptj-pairs-tiled", "gptj-pairs-expanded",
                              "cohere-pairs-tiled", "cohere-pairs-expanded", "glm-half-table-tiled",
                              "glm-half-table-expanded", "cohere-float16-tables", "cohere-float16-tables-cast-back",
                              "glm-float16-tables"])
def test_rope_spellings_become_rotary_embedding(program):
    ops = _optimized(program())
    assert ops.count("RotaryEmbedding") == 1 and "Neg" not in ops, ops


@pytest.mark.parametrize("program", [lambda: _rope_example(scale=0.5), lambda: _rope_example(sign=1),
                                     lambda: _rope_example(second=relay.var("g", shape=(1, 5, 4))),
                                     lambda: _cache_example(equal_halves=False), lambda: _gptj_example(pair_axis=3),
                                     lambda: _ahead_example(pair_axis=2),
                                     lambda: _ahead_example(pair_axis=2, halved=True)],
                         ids=["scaled-tables", "other-sign", "two-angle-sets", "cache-halves-differ",
                              "gptj-tables-repeated-as-halves", "cohere-tables-repeated-as-halves",
                              "glm-tables-repeated-as-halves"])
def test_variants_the_kernel_does_not_compute_stay_unfused(program):
    ops = _optimized(program())
    assert "RotaryEmbedding" not in ops, ops
