"""The committed LLM fixtures (`tests/fixtures/llm`, made by `benchmarks/llm_models.py`: Llama,
Qwen2, Phi-3, Gemma, Gemma-2, GPT-2, GPT-J and a BERT-like encoder, both torch exporters, sdpa and eager
attention, decode steps with a KV cache): each imports, optimizes for the `ort` target, and its export with
ONNX Runtime's contrib ops gives the fixture's outputs in ONNX Runtime, at the example sizes and at
a second size from the same program (symbolic batch, sequence and past lengths). No torch needed.

`optimize` verifies each program itself in ONNX Runtime (a fully masked and a left-padded row
among its input sets); the check below is the comparison with the fixture's own outputs, on the
inputs the exporting script fed torch.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache

import numpy as np
import onnx
import pytest

import eqsat
import ir
from benchmarks.llm_models import DEEP, HALF, feed, sizes_to_check
from ir.frontend import from_onnx, to_onnx
from tests.ir.frontend.ort_helpers import assert_outputs_close, run_ort

#: one test worker runs this file, so each fixture is optimized once (`optimized` is cached)
pytestmark = pytest.mark.xdist_group("llm_fixtures")

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "llm")
MANIFEST = json.load(open(os.path.join(FIXTURES, "manifest.json")))
ENTRIES = {e["name"]: e for e in MANIFEST["fixtures"]}
LIMITS = eqsat.Limits(iterations=8, nodes=20_000)
XFAIL: dict[str, str] = {}
"""fixture -> why it does not import or verify yet."""
UNVERIFIED: dict[str, str] = {}
"""fixture -> why `optimize` runs with verify=False on it (the comparison below still runs)."""
SLIDING_CACHE = {"gemma2_torchscript_eager_cache"}
"""decode-step fixtures whose layer keeps a sliding window: the past is sliced to its last
sliding_window - 1 tokens before the Concat, and the present is the last that many of the result."""


@lru_cache(maxsize=None)
def optimized(name: str) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """(the fixture, our ort program for it exported with contrib ops)."""
    proto = onnx.load(os.path.join(FIXTURES, ENTRIES[name]["file"]))
    mod, params = from_onnx(proto)
    res = eqsat.optimize(mod, params, target="ort", limits=LIMITS, verify=name not in UNVERIFIED)
    ir.infer_type(res.mod)
    return proto, to_onnx(res.mod, res.params, contrib=True)


def feeds(entry: dict) -> list[dict[str, np.ndarray]]:
    return [feed(entry["family"], entry["cache"], **sizes) for sizes in sizes_to_check(entry["cache"]).values()]


def test_manifest_covers_every_family_exporter_and_attention():
    seen = {(e["family"], e["exporter"], e["attention"], e["cache"]) for e in ENTRIES.values()}
    families = {e["family"] for e in ENTRIES.values()}
    assert families >= {"llama", "qwen2", "phi3", "gemma", "gpt2", "bert"}
    for family in families:
        has = next(e["has"] for e in ENTRIES.values() if e["family"] == family)
        for exporter in has.get("exporters", ("torchscript", "dynamo")):
            for attention in has.get("attentions", ("sdpa", "eager")):
                assert (family, exporter, attention, False) in seen
    assert {e["family"] for e in ENTRIES.values() if e["cache"]} == {e["family"] for e in ENTRIES.values()
                                                                     if e["has"]["decoder"]}
    assert all(e["bytes"] < 1 << 20 for e in ENTRIES.values())
    assert any(e["has"]["kv_heads"] < MANIFEST["sizes"]["heads"] for e in ENTRIES.values())


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=XFAIL[n], strict=True))
                                  if n in XFAIL else n for n in sorted(ENTRIES)])
def test_fixture_imports_optimizes_and_matches_in_ort(name):
    proto, ours = optimized(name)
    assert len(ours.graph.output) == len(ENTRIES[name]["outputs"])
    for inputs in feeds(ENTRIES[name]):
        assert_outputs_close(run_ort(proto, inputs), run_ort(ours, inputs), rel=1e-4)


@pytest.mark.parametrize("name", sorted(n for n, e in ENTRIES.items() if e["has"]["rope"] and n not in XFAIL))
def test_rotary_embedding_is_fused(name):
    """Q's and K's rotations become ONNX Runtime's RotaryEmbedding (outputs: the test above): the
    half rotation sharing one cos and one sin table computed from the positions, GPT-J's interleaved
    pairs of (batch, sequence, heads, head size) data, its partial rotary dimension and its tables
    repeated per pair (a tile, or dynamo's expand) read as they are from its sin/cos cache; Cohere's
    and GLM's interleaved pairs of (batch, heads, sequence, head size) data, their angles repeated
    per pair before cos and sin (Cohere) or the first half of a half-rotation table repeated (GLM,
    partial)."""
    entry = ENTRIES[name]
    _, ours = optimized(name)
    ops = [n.op_type for n in ours.graph.node]
    rotary = [(n.domain, {a.name: a.i for a in n.attribute}) for n in ours.graph.node
              if n.op_type == "RotaryEmbedding"]
    interleaved = int(entry["has"]["rope"] == "interleaved")
    assert [domain for domain, _ in rotary] == ["com.microsoft"] * 2 * MANIFEST["sizes"]["layers"], ops
    assert all(attrs["interleaved"] == interleaved and attrs["rotary_embedding_dim"] == entry["has"]["rotary_dim"]
               for _, attrs in rotary), rotary
    assert "Neg" not in ops and "Tile" not in ops
    if not interleaved:
        assert ops.count("Cos") == ops.count("Sin") == 1


@pytest.mark.parametrize("name", sorted(n for n in ENTRIES if n not in XFAIL))
def test_attention_is_fused(name):
    """Every layer's attention is one ONNX `Attention`, from either exporter's eager spelling and from
    SDPA's (`where(isnan(p), 0, p)` on the probabilities: `nan_rows="zero"`, which the kernel computes
    on hidden rows; on rows whose scores hold NaN or infinity it gives NaN, which an `IsNaN` of its
    result replaces by the op's value). No Softmax remains, and an IsNaN only on an Attention's result."""
    _, ours = optimized(name)
    ops = [n.op_type for n in ours.graph.node]
    assert ops.count("Attention") == MANIFEST["sizes"]["layers"], ops
    results = {n.output[0] for n in ours.graph.node if n.op_type == "Attention"}
    assert "Softmax" not in ops
    assert all(n.input[0] in results for n in ours.graph.node if n.op_type == "IsNaN")


@pytest.mark.parametrize("name", sorted(n for n, e in ENTRIES.items() if e["has"]["kv_heads"] < MANIFEST["sizes"]["heads"]
                                        and n not in XFAIL))
def test_grouped_query_attention_takes_kv_heads_as_they_are(name):
    """Where the model has fewer KV heads than query heads, `repeat_kv`'s copies (Expand + Reshape, as
    either exporter writes them, of the new K/V or of their concatenation with the cache) fold into
    the attention op, which takes K and V with their own heads, and the export is ONNX `Attention` on
    K/V of that many heads."""
    proto = onnx.load(os.path.join(FIXTURES, ENTRIES[name]["file"]))
    mod, params = from_onnx(proto)
    res = eqsat.optimize(mod, params, target="ort", limits=LIMITS, verify=False)
    calls = [c for c in ir.post_order(res.mod["main"].body) if isinstance(c, ir.Call)
             and getattr(c.op, "name", "") in ("nn.attention", "nn.masked_attention", "nn.cached_attention")]
    kv, heads = ENTRIES[name]["has"]["kv_heads"], MANIFEST["sizes"]["heads"]
    assert len(calls) == MANIFEST["sizes"]["layers"]
    for c in calls:
        assert [a.checked_type.shape[-3] for a in c.args[:3]] == [heads, kv, kv], ir.astext(res.mod)
    _, ours = optimized(name)  # the verified program exports it as ONNX Attention
    assert [n.op_type for n in ours.graph.node].count("Attention") == MANIFEST["sizes"]["layers"]


@pytest.mark.parametrize("name", sorted(n for n, e in ENTRIES.items() if e["cache"] and n not in XFAIL))
def test_decode_step_attention_takes_and_returns_its_cache(name):
    """A decode step's attention is one ONNX `Attention` that reads the past keys and values (graph
    inputs) and returns the present ones (graph outputs): the `Concat` of each cache with the new
    tokens' K/V folds into it, with the new K/V's own (grouped) heads. A sliding-window layer's
    attention reads the window's Slice of the past and its present is sliced to the window (the slice
    of a symbolic length typed as a `MinDim`)."""
    _, ours = optimized(name)
    inputs = {i.name for i in ours.graph.input}
    outputs = {o.name for o in ours.graph.output}
    if name in SLIDING_CACHE:
        window = [n for n in ours.graph.node if n.op_type == "Slice"]
        inputs = {n.output[0] for n in window if n.input[0] in inputs}
        outputs = {n.input[0] for n in window if n.output[0] in outputs}
    attention = [n for n in ours.graph.node if n.op_type == "Attention"]
    assert len(attention) == MANIFEST["sizes"]["layers"]
    for node in attention:
        assert len(node.input) == 6 and set(node.input[4:]) <= inputs, node
        assert len(node.output) == 3 and set(node.output[1:]) <= outputs, node
    assert not any(n.op_type == "Concat" and set(n.input) & inputs for n in ours.graph.node)


@pytest.mark.parametrize("name", sorted(n for n, e in ENTRIES.items() if e["has"].get("softcap") and n not in XFAIL))
def test_soft_capped_scores_are_the_kernels(name):
    """Gemma-2's eager attention (scores soft-capped before its sliding-window or causal mask) is one
    ONNX `Attention` whose `softcap` is the model's (outputs: the first test)."""
    _, ours = optimized(name)
    caps = [a.f for n in ours.graph.node if n.op_type == "Attention" for a in n.attribute if a.name == "softcap"]
    assert caps == [ENTRIES[name]["has"]["softcap"]] * MANIFEST["sizes"]["layers"]


def _extra_fixture(file: str) -> tuple[onnx.ModelProto, onnx.ModelProto, list[str]]:
    """(a fixture outside the manifest, our ort program for it with contrib ops, that program's op types)."""
    proto = onnx.load(os.path.join(FIXTURES, file))
    res = eqsat.optimize(*from_onnx(proto), target="ort", limits=LIMITS)
    ours = to_onnx(res.mod, res.params, contrib=True)
    return proto, ours, [n.op_type for n in ours.graph.node]


def test_every_layer_of_a_two_layer_model_reaches_its_fused_kernels():
    """The second layer's shapes are computed at run time from the first layer's outputs (`Any` at
    import); the e-graph types them as the first layer's fusions do, so that layer's rotary
    embeddings, attention and norms fuse as well, and the program still gives the fixture's outputs."""
    family, exporter, attention, layers = DEEP
    proto, ours, ops = _extra_fixture(f"{family}_{exporter}_{attention}_{layers}layers.onnx")
    assert ops.count("RotaryEmbedding") == 2 * layers and ops.count("Attention") == layers, ops
    assert ops.count("RMSNormalization") == 2 * layers + 1 and "Neg" not in ops and "Softmax" not in ops, ops
    for sizes in sizes_to_check(False).values():
        inputs = feed(family, False, **sizes)
        assert_outputs_close(run_ort(proto, inputs), run_ort(ours, inputs), rel=1e-4)


def test_a_half_precision_model_reaches_its_rotary_and_activation_kernels():
    """Float16 weights: the rotary tables are computed in float32 and cast to float16, which the
    rotary rules see through, and ONNX Runtime runs its rotary and QuickGelu kernels in float16.
    Attention stays spelled out: the export fills hidden scores with float16's lowest value, and a
    row hidden throughout is then averaged by float16 rounding in the original, which no kernel
    reproduces (see `ir.frontend.export_attention`)."""
    family, exporter, attention, dtype = HALF
    proto, ours, ops = _extra_fixture(f"{family}_{exporter}_{attention}_fp16.onnx")
    assert ops.count("RotaryEmbedding") == 2 and ops.count("QuickGelu") == 1, ops
    assert ops.count("RMSNormalization") == 3 and "Neg" not in ops and "Sigmoid" not in ops, ops
    assert "Attention" not in ops and "Softmax" in ops, ops
    for sizes in sizes_to_check(False).values():
        inputs = feed(family, False, **sizes, dtype=dtype)
        assert_outputs_close(run_ort(proto, inputs), run_ort(ours, inputs), rel=2e-3)
