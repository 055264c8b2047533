"""Soft-capped attention scores (`softcap`: tanh(s / c) * c before the mask, Gemma-2's) and
sliding-window causal masks (Mistral's, Gemma-2's local layers), which the ops take as any additive
mask: the reference kernel against the spelled-out formula bit for bit, the export in ONNX Runtime
(`Attention`'s `softcap` at opset 23, the formula spelled out before) against the reference on
rows hidden entirely and in part, with and without a cache, and the rule reaching the op from
Gemma-2's eager spelling for the ort target."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import eqsat
import ir
import strategies
from eqsat.rules.library.softcap import _gemma2
from ir import relay
from ir.frontend import DEFAULT_OPSET, to_onnx

B, H, S, D, CAP, SCALE, WINDOW = 2, 4, 6, 8, 5.0, 0.5, 3


def _sliding_window(rows: int, cols: int, window: int = WINDOW) -> np.ndarray:
    """0 where key j is among the `window` latest at query i (the queries the last `rows` of `cols`), else -inf."""
    i = np.arange(rows)[:, None] + cols - rows
    j = np.arange(cols)[None, :]
    return np.where((j <= i) & (j > i - window), 0.0, -np.inf).astype(np.float32)


def _values(kv_heads: int = H, past: int = 0, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = {"q": rng.standard_normal((B, H, S, D)) * 4, "k": rng.standard_normal((B, kv_heads, S, D)) * 4,
              "v": rng.standard_normal((B, kv_heads, S, D))}
    if past:
        values.update(past_k=rng.standard_normal((B, kv_heads, past, D)) * 4,
                      past_v=rng.standard_normal((B, kv_heads, past, D)))
    mask = np.broadcast_to(_sliding_window(S, S + past), (B, 1, S, S + past)).copy()
    mask[1, 0, 2, :] = -np.inf  # a row hidden entirely
    values["mask"] = mask
    return {n: a.astype(np.float32) for n, a in values.items()}


def _formula(values: dict[str, np.ndarray]) -> np.ndarray:
    """Gemma-2's eager attention in float32: scores scaled, capped, masked, softmax, times V."""
    scores = np.matmul(values["q"], np.swapaxes(values["k"], -1, -2)) * np.float32(SCALE)
    capped = np.tanh(scores / np.float32(CAP)) * np.float32(CAP) + values["mask"]
    with np.errstate(invalid="ignore"):
        e = np.exp(capped - capped.max(-1, keepdims=True))
        probs = e / e.sum(-1, keepdims=True)
    return np.matmul(probs, values["v"])


def _program(values: dict[str, np.ndarray], nan_rows: str = "keep") -> ir.IRModule:
    args = [relay.var(n, shape=a.shape) for n, a in values.items()]
    op = relay.nn.cached_attention if "past_k" in values else relay.nn.masked_attention
    return ir.IRModule.from_expr(relay.Function(args, op(*args, scale=SCALE, softcap=CAP, nan_rows=nan_rows)))


def test_reference_kernel_is_the_capped_formula_bit_for_bit():
    values = _values()
    with np.errstate(invalid="ignore"):
        got = np.asarray(strategies.evaluate(_program(values), values))
    np.testing.assert_array_equal(got, _formula(values))
    assert np.isnan(got[1, :, 2]).all()


@pytest.mark.parametrize("opset", [DEFAULT_OPSET, 23])
@pytest.mark.parametrize("nan_rows", ["keep", "zero"])
@pytest.mark.parametrize("kv_heads, past", [(H, 0), (2, 0), (2, 5)])
def test_export_runs_in_onnx_runtime_as_the_reference_computes(opset, nan_rows, kv_heads, past):
    values = _values(kv_heads, past)
    mod = _program(values, nan_rows)
    model = to_onnx(mod, opset=opset)
    attention = [n for n in model.graph.node if n.op_type == "Attention"]
    assert [a.f for n in attention for a in n.attribute if a.name == "softcap"] == ([CAP] if opset >= 23 else [])
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, values)
    with np.errstate(invalid="ignore"):
        want = strategies.evaluate(mod, values)
    want = list(want) if isinstance(want, tuple) else [want]
    assert np.array_equal(np.isnan(got[0]), np.isnan(want[0]))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("window", [WINDOW, None])
def test_gemma2_eager_spelling_reaches_one_softcapped_attention(window):
    """Gemma-2's eager attention with a causal mask, or a sliding-window one (its local layers):
    one ONNX `Attention` with `softcap` for the ort target, verified in ONNX Runtime."""
    mod = ir.IRModule.from_expr(_gemma2(masked=True))
    res = eqsat.optimize(mod, {}, target="ort", limits=eqsat.Limits(iterations=8, nodes=5_000))
    calls = [c for c in ir.post_order(res.mod["main"].body) if isinstance(c, ir.Call)]
    assert [(c.op.name, c.attrs.softcap) for c in calls] == [("nn.masked_attention", 50.0)], ir.astext(res.mod)
    model = to_onnx(res.mod, res.params)
    assert [n.op_type for n in model.graph.node].count("Attention") == 1
    rng = np.random.default_rng(1)
    feed = {n: (rng.standard_normal(shape) * 8).astype(np.float32)
            for n, shape in (("q", (2, 3, 5, 4)), ("k", (2, 3, 6, 4)), ("v", (2, 3, 6, 4)))}
    feed["mask"] = _sliding_window(5, 6, window or 6)[None, None]
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    want = np.asarray(strategies.evaluate(mod, feed))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())  # the kernel's own tanh
