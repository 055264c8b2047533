"""Attention with `nan_rows="zero"` (torch SDPA's guard) exported as ONNX `Attention` gives the op's
value on rows whose scores are not finite: the op makes such a row's weights 0 (its result `0 x V`),
the kernel gives NaN, and the export puts the op's value back. Checked in every layout the export
writes (4-D heads, grouped KV heads, heads split off tokens, a decode step's cache) against the op
as the numpy executor computes it."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay
from ir.frontend import to_onnx
from ir.op.registry import make_call
from strategies.interpreter import evaluate
from tests.ir.frontend.ort_helpers import run_ort

BATCH, HEADS, SEQ, SIZE, PAST = 2, 4, 5, 8, 3


def _heads(name: str, heads: int, tokens: bool, length: int = SEQ) -> tuple[relay.Var, ir.Expr]:
    """A (batch, heads, length, size) value: a variable, or (`tokens`) split off a (batch, length,
    heads x size) variable as a dense layer's heads are."""
    if not tokens:
        var = relay.var(name, shape=(BATCH, heads, length, SIZE))
        return var, var
    var = relay.var(name, shape=(BATCH, length, heads * SIZE))
    return var, relay.transpose(relay.reshape(var, newshape=[0, 0, heads, SIZE]), axes=[0, 2, 1, 3])


def _program(kv_heads: int, tokens: bool, cache: bool) -> ir.IRModule:
    (q, qh), (k, kh), (v, vh) = (_heads(n, HEADS if n == "q" else kv_heads, tokens) for n in "qkv")
    params = [q, k, v]
    length = SEQ + (PAST if cache else 0)
    mask = relay.var("mask", shape=(1, 1, SEQ, length))  # one for every batch row: the tokens' form
    if cache:
        past = [relay.var(f"past_{n}", shape=(BATCH, kv_heads, PAST, SIZE)) for n in "kv"]
        params += past
        out = make_call("nn.cached_attention", [qh, kh, vh, *past, mask], {"scale": 0.3, "nan_rows": "zero"})
        body = relay.Tuple([relay.TupleGetItem(out, i) for i in range(3)])
    else:
        body = relay.nn.masked_attention(qh, kh, vh, mask, scale=0.3, nan_rows="zero")
    mod = ir.IRModule.from_expr(relay.Function([*params, mask], body))
    ir.infer_type(mod)
    return mod


def _set(values: dict[str, np.ndarray], name: str, batch: int, head: int, position: int, value: float) -> None:
    """Feature 0 of `head` at `position` of `name`, whichever layout it has."""
    array = values[name]
    if array.ndim == 4:
        array[batch, head, position, 0] = value
    else:
        array[batch, position, head * SIZE] = value


def _inputs(mod: ir.IRModule) -> dict[str, np.ndarray]:
    """Random values with: a NaN key of batch 0 (every row of the query heads reading it has a NaN
    score), an infinite query value of batch 1 (its row's scores are infinite), an infinite value of
    batch 1 (a column no row of its heads can make finite) and a row the mask hides throughout."""
    rng = np.random.default_rng(0)
    values = {p.name_hint: rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype("float32")
              for p in mod["main"].params}
    cached = "past_k" in values
    _set(values, "past_k" if cached else "k", 0, 0, 1, np.nan)
    _set(values, "past_v" if cached else "v", 1, 0, 2, np.inf)
    _set(values, "q", 1, 1, 2, np.inf)
    values["mask"] = np.where(rng.random(values["mask"].shape) < 0.3, -np.inf, 0.0).astype("float32")
    values["mask"][0, 0, 4, :] = -np.inf
    return values


@pytest.mark.parametrize("kv_heads", [HEADS, 2], ids=["heads", "grouped"])
@pytest.mark.parametrize("tokens", [False, True], ids=["4d", "tokens"])
@pytest.mark.parametrize("cache", [False, True], ids=["prefill", "cache"])
def test_rows_whose_scores_are_not_finite_are_the_ops(kv_heads, tokens, cache):
    mod = _program(kv_heads, tokens, cache)
    model = to_onnx(mod, {}, contrib=True)
    assert [n.op_type for n in model.graph.node].count("Attention") == 1
    values = _inputs(mod)
    with np.errstate(all="ignore"):
        want = evaluate(mod, values)
    want = [np.asarray(w) for w in (want if isinstance(want, (list, tuple)) else [want])]
    got = run_ort(model, values)
    attended = want[0]
    assert np.isnan(attended).any() and (attended == 0).any(), "the inputs must reach both cases"
    for w, g in zip(want, got):
        assert np.array_equal(np.isnan(w), np.isnan(g)) and np.array_equal(np.isinf(w), np.isinf(g))
        finite = np.isfinite(w)
        np.testing.assert_allclose(g[finite], w[finite], rtol=1e-5, atol=1e-6)


def test_scores_bounded_from_token_ids_need_no_guard():
    """Q, K and V made from token ids (an embedding, a layer norm, a dense layer: `ir.value_bounds`)
    and a mask of 0 and -inf: no score can be NaN or +inf, so the kernel's result is written as it is."""
    rng = np.random.default_rng(1)
    ids = relay.var("ids", shape=(BATCH, SEQ), dtype="int64")
    hidden = relay.take(relay.const(rng.standard_normal((16, HEADS * SIZE)).astype("float32")), ids, axis=0)
    normed = relay.nn.layer_norm(hidden, relay.const(np.ones(HEADS * SIZE, "float32")),
                                 relay.const(np.zeros(HEADS * SIZE, "float32")))
    q, k, v = (relay.transpose(relay.reshape(relay.nn.dense(normed, relay.const(
        rng.standard_normal((HEADS * SIZE, HEADS * SIZE)).astype("float32"))), newshape=[0, 0, HEADS, SIZE]),
        axes=[0, 2, 1, 3]) for _ in range(3))
    keep = relay.var("keep", shape=(1, 1, SEQ, SEQ), dtype="bool")
    mask = relay.where(keep, relay.const(np.float32(0)), relay.const(np.float32(-np.inf)))
    body = relay.nn.masked_attention(q, k, v, mask, scale=0.3, nan_rows="zero")
    mod = ir.IRModule.from_expr(relay.Function([ids, keep], body))
    ir.infer_type(mod)
    model = to_onnx(mod, {}, contrib=True)
    ops = [n.op_type for n in model.graph.node]
    assert "Attention" in ops and "IsNaN" not in ops, ops
    keep_values = rng.random((1, 1, SEQ, SEQ)) < 0.5
    keep_values[0, 0, 0] = False  # a row hidden throughout: 0 in the op and the kernel
    values = {"ids": rng.integers(0, 16, (BATCH, SEQ)), "keep": keep_values}
    with np.errstate(all="ignore"):
        want = np.asarray(evaluate(mod, values))
    np.testing.assert_allclose(run_ort(model, values)[0], want, rtol=1e-5, atol=1e-6)
    assert not want[:, :, 0].any()


@pytest.mark.parametrize("nan_rows", ["keep", "zero"])
def test_a_constant_mask_is_read_by_the_kernel_as_computed_at_export(nan_rows):
    """A constant mask (its lowest finite values raised for the kernel, its rows hidden throughout made
    NaN where the op keeps them NaN) is one constant: no node computes it when the model runs."""
    rng = np.random.default_rng(2)
    constant = np.where(rng.random((1, 1, SEQ, SEQ)) < 0.3, np.float32(np.finfo(np.float32).min), 0).astype("float32")
    constant[0, 0, 1] = -np.inf
    q, k, v = (relay.var(n, shape=(BATCH, HEADS, SEQ, SIZE)) for n in "qkv")
    mod = ir.IRModule.from_expr(relay.Function([q, k, v], relay.nn.masked_attention(
        q, k, v, relay.const(constant), scale=0.3, nan_rows=nan_rows)))
    ir.infer_type(mod)
    model = to_onnx(mod, {}, contrib=True)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Attention") == 1 and not {"Less", "Greater", "ReduceMax", "Equal"} & set(ops), ops
    values = {n: rng.standard_normal((BATCH, HEADS, SEQ, SIZE)).astype("float32") for n in "qkv"}
    with np.errstate(all="ignore"):
        want = np.asarray(evaluate(mod, values))
    got = run_ort(model, values)[0]
    assert np.array_equal(np.isnan(want), np.isnan(got)) and np.isnan(want).any() == (nan_rows == "keep")
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-5, atol=1e-6)


def test_a_mask_bounded_above_the_floor_is_read_as_it_is():
    """BERT's `(1 - mask) * -10000` from an integer mask lies in [-10000, 0] (`ir.value_bounds`): nothing
    to raise and no row hidden throughout, so the kernel reads it as the model computes it."""
    rng = np.random.default_rng(3)
    q, k, v = (relay.var(n, shape=(BATCH, HEADS, SEQ, SIZE)) for n in "qkv")
    keep = relay.var("keep", shape=(BATCH, 1, 1, SEQ), dtype="int64")
    mask = relay.multiply(relay.subtract(relay.const(np.float32(1)), relay.cast(keep, "float32")),
                          relay.const(np.float32(-10000)))
    mod = ir.IRModule.from_expr(relay.Function([q, k, v, keep], relay.nn.masked_attention(q, k, v, mask, scale=0.3)))
    ir.infer_type(mod)
    model = to_onnx(mod, {}, contrib=True)
    ops = [n.op_type for n in model.graph.node]
    assert not {"Less", "ReduceMax", "Where"} & set(ops), ops
    values = {n: rng.standard_normal((BATCH, HEADS, SEQ, SIZE)).astype("float32") for n in "qkv"}
    values["keep"] = rng.integers(0, 2, (BATCH, 1, 1, SEQ))
    values["keep"][0] = 0  # every key hidden by -10000: a uniform row, in the op and the kernel
    np.testing.assert_allclose(run_ort(model, values)[0], np.asarray(evaluate(mod, values)), rtol=1e-5, atol=1e-6)
