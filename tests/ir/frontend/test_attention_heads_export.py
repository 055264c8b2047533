"""Attention whose q, k and v are a dense layer's tokens with their heads split off exports as ONNX
`Attention` on the 3-D tokens (`q_num_heads`), with no Transpose around it; reshapes and transposes
that undo earlier ones export as one Reshape of the earlier value."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import ir
from ir import relay
from ir.frontend import to_onnx
from strategies.interpreter import evaluate
from tests.ir.frontend.ort_helpers import assert_outputs_close, run_ort

RNG = np.random.default_rng(0)
BATCH, SEQ, HEADS, SIZE = 2, 8, 4, 8
HIDDEN = HEADS * SIZE


def _split(x, keys_last: bool = False, four_d: bool = False):
    """The zoo's BERT head split of `[batch * seq, hidden]` (`ir.models.bert`), optionally 4-D."""
    x = relay.reshape(x, newshape=[BATCH, SEQ, HEADS, SIZE])
    if four_d:
        return relay.transpose(x, axes=[0, 2, 1, 3])
    if keys_last:  # [batch * heads, size, seq], swapped back to [batch * heads, seq, size]
        x = relay.reshape(relay.transpose(x, axes=[0, 2, 3, 1]), newshape=[BATCH * HEADS, SIZE, SEQ])
        return relay.transpose(x, axes=[0, 2, 1])
    return relay.reshape(relay.transpose(x, axes=[0, 2, 1, 3]), newshape=[BATCH * HEADS, SEQ, SIZE])


def _self_attention(mask_shape: tuple[int, ...] | None = None, four_d: bool = False):
    x = relay.var("x", shape=(BATCH * SEQ, HIDDEN))
    weights = {f"w{p}": relay.var(f"w{p}", shape=(HIDDEN, HIDDEN)) for p in "qkvo"}
    q, k, v = (_split(relay.nn.dense(x, weights[f"w{p}"]), keys_last=p == "v", four_d=four_d) for p in "qkv")
    params = [x, *weights.values()]
    if mask_shape is None:
        context = relay.nn.attention(q, k, v, scale=SIZE ** -0.5)
    else:
        mask = relay.var("mask", shape=mask_shape)
        params.append(mask)
        context = relay.nn.masked_attention(q, k, v, mask, scale=SIZE ** -0.5)
    context = relay.reshape(context, newshape=[BATCH, HEADS, SEQ, SIZE])
    merged = relay.reshape(relay.transpose(context, axes=[0, 2, 1, 3]), newshape=[BATCH * SEQ, HIDDEN])
    mod = ir.IRModule.from_expr(relay.Function(params, relay.nn.dense(merged, weights["wo"])))
    ir.infer_type(mod)
    values = {n: (RNG.standard_normal(s) * 0.3).astype("float32")
              for n, s in [("x", (BATCH * SEQ, HIDDEN)), *((f"w{p}", (HIDDEN, HIDDEN)) for p in "qkvo")]}
    if mask_shape is not None:
        values["mask"] = np.where(RNG.random(mask_shape) < 0.2, -1e4, 0.0).astype("float32")
    return mod, values


def _run(model: onnx.ModelProto, inputs: dict, optimize: bool) -> list[np.ndarray]:
    if optimize:
        return run_ort(model, inputs)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, inputs)


def _export_and_check(mod, values) -> tuple[Counter, onnx.ModelProto]:
    model = to_onnx(mod)
    expected = evaluate(mod, values)
    for optimize in (False, True):
        assert_outputs_close([expected], _run(model, values, optimize), rel=1e-4)
    return Counter(n.op_type for n in model.graph.node), model


def _heads(model: onnx.ModelProto) -> list[int]:
    return [a.i for n in model.graph.node if n.op_type == "Attention" for a in n.attribute if a.name == "q_num_heads"]


@pytest.mark.parametrize("four_d", [False, True])
def test_split_heads_attention_runs_on_the_tokens_with_no_transpose(four_d):
    ops, model = _export_and_check(*_self_attention(four_d=four_d))
    assert ops["Attention"] == 1 and _heads(model) == [HEADS]
    assert ops["Transpose"] == ops["Unsqueeze"] == ops["Squeeze"] == 0
    # q, k, v to (batch, seq, hidden) and the result back to the dense layer's rows: one Reshape each
    assert ops["Reshape"] == 4


@pytest.mark.parametrize("mask_shape", [(1, SEQ, SEQ), (SEQ, SEQ)])
def test_a_mask_over_every_head_keeps_the_tokens_form(mask_shape):
    ops, model = _export_and_check(*_self_attention(mask_shape))
    assert _heads(model) == [HEADS] and ops["Transpose"] == 0


def test_a_mask_per_head_keeps_the_split_heads():
    ops, model = _export_and_check(*_self_attention((BATCH * HEADS, SEQ, SEQ)))
    assert _heads(model) == [] and ops["Attention"] == 1 and ops["Transpose"] > 0


def test_heads_not_split_from_tokens_keep_the_split_form():
    q, k, v = (relay.var(n, shape=(BATCH * HEADS, SEQ, SIZE)) for n in "qkv")
    mod = ir.IRModule.from_expr(relay.Function([q, k, v], relay.nn.attention(q, k, v, scale=0.5)))
    ir.infer_type(mod)
    values = {n: RNG.standard_normal((BATCH * HEADS, SEQ, SIZE)).astype("float32") for n in "qkv"}
    ops, model = _export_and_check(mod, values)
    assert _heads(model) == [] and ops["Unsqueeze"] == 3


def test_a_transpose_undone_through_a_reshape_is_one_reshape():
    x = relay.var("x", shape=(6, 4, 5))
    there = relay.reshape(relay.transpose(relay.exp(x), axes=[2, 0, 1]), newshape=[5, 24])
    back = relay.transpose(relay.reshape(there, newshape=[5, 6, 4]), axes=[1, 2, 0])
    mod = ir.IRModule.from_expr(relay.Function([x], relay.negative(back)))
    ir.infer_type(mod)
    ops, _ = _export_and_check(mod, {"x": RNG.standard_normal((6, 4, 5)).astype("float32")})
    assert ops["Transpose"] == 0 and ops["Reshape"] == 0


def test_a_relayout_something_else_reads_is_kept():
    x = relay.var("x", shape=(6, 4))
    turned = relay.transpose(relay.exp(x), axes=[1, 0])
    mod = ir.IRModule.from_expr(relay.Function([x], relay.Tuple([relay.transpose(turned, axes=[1, 0]), turned])))
    ir.infer_type(mod)
    model = to_onnx(mod)
    values = {"x": RNG.standard_normal((6, 4)).astype("float32")}
    expected = [np.asarray(e) for e in evaluate(mod, values)]
    assert_outputs_close(expected, run_ort(model, values), rel=1e-4)
    assert Counter(n.op_type for n in model.graph.node)["Transpose"] == 1


@pytest.mark.parametrize("merge", [False, True])
def test_as_many_heads_as_tokens_in_four_d(merge):
    """The heads split off (batch, seq, heads x size) when seq equals heads: the result's reshape to
    (batch, seq, heads, size) is still made (its shape is (batch, heads, seq, size) too)."""
    batch, seq, heads, size = 2, 4, 4, 8
    x = relay.var("x", shape=(batch * seq, heads * size))
    weights = {p: relay.var(f"w{p}", shape=(heads * size, heads * size)) for p in "qkv"}
    q, k, v = (relay.transpose(relay.reshape(relay.nn.dense(x, weights[p]), newshape=[batch, seq, heads, size]),
                               axes=[0, 2, 1, 3]) for p in "qkv")
    out = relay.nn.attention(q, k, v, scale=size ** -0.5)
    if merge:
        out = relay.reshape(relay.transpose(out, axes=[0, 2, 1, 3]), newshape=[batch * seq, heads * size])
    mod = ir.IRModule.from_expr(relay.Function([x, *weights.values()], relay.negative(out)))
    ir.infer_type(mod)
    values = {"x": RNG.standard_normal((batch * seq, heads * size)).astype("float32"),
              **{f"w{p}": (RNG.standard_normal((heads * size, heads * size)) * 0.3).astype("float32") for p in "qkv"}}
    _, model = _export_and_check(mod, values)
    assert _heads(model) == [heads]


def test_grouped_attention_spelled_out_repeats_kv_heads_and_refuses_unknown_head_counts():
    """Where no `Attention` node fits (float16 here), K and V of fewer heads are gathered to the query's
    heads; head counts unknown where the program is written cannot be told apart, so the export refuses
    (a program with the KV heads left as they are would not run)."""
    from ir.frontend.errors import FrontendError
    from ir.types import Any

    def program(heads, kv_heads):
        q = relay.var("q", shape=(2, heads, 5, 8), dtype="float16")
        k, v = (relay.var(n, shape=(2, kv_heads, 5, 8), dtype="float16") for n in "kv")
        return ir.IRModule.from_expr(relay.Function([q, k, v], relay.nn.attention(q, k, v, scale=0.25)))

    inputs = {n: RNG.standard_normal((2, h, 5, 8)).astype(np.float16) for n, h in (("q", 4), ("k", 2), ("v", 2))}
    model = to_onnx(program(4, 2))
    assert "Attention" not in Counter(n.op_type for n in model.graph.node)
    want = evaluate(program(4, 2), inputs)
    assert_outputs_close(run_ort(model, inputs), [np.asarray(want)], rel=2e-3)
    with pytest.raises(FrontendError, match="head counts must be known"):
        to_onnx(program(Any, Any))


def _run_time_tokens(kv_heads: int, mask: bool, merge: bool):
    """Self-attention over (batch, seq, hidden) tokens whose batch and length are symbolic, heads split
    off by `reshape(., [0, 0, heads, size])` and a transpose (how the shape rules write an export's
    run-time Reshape), K and V with `kv_heads` heads; the result merged back, or left split."""
    batch, seq = ir.SizeVar("batch"), ir.SizeVar("seq")
    x = relay.var("x", shape=(batch, seq, HIDDEN))
    heads = {"q": HEADS, "k": kv_heads, "v": kv_heads}
    weights = {p: relay.var(f"w{p}", shape=(h * SIZE, HIDDEN)) for p, h in heads.items()}
    q, k, v = (relay.transpose(relay.reshape(relay.nn.dense(x, weights[p]), newshape=[0, 0, heads[p], SIZE]),
                               axes=[0, 2, 1, 3]) for p in "qkv")
    params = [x, *weights.values()]
    if mask:
        params.append(relay.var("mask", shape=(batch, 1, seq, seq)))
        out = relay.nn.masked_attention(q, k, v, params[-1], scale=SIZE ** -0.5)
    else:
        out = relay.nn.attention(q, k, v, scale=SIZE ** -0.5)
    if merge:
        out = relay.reshape(relay.transpose(out, axes=[0, 2, 1, 3]), newshape=[0, 0, HIDDEN])
    mod = ir.IRModule.from_expr(relay.Function(params, relay.negative(out)))
    ir.infer_type(mod)
    return mod, {f"w{p}": (RNG.standard_normal((h * SIZE, HIDDEN)) * 0.3).astype("float32") for p, h in heads.items()}


@pytest.mark.parametrize("kv_heads", [HEADS, 2])
@pytest.mark.parametrize("mask", [False, True])
@pytest.mark.parametrize("merge", [True, False])
def test_heads_split_off_run_time_tokens_go_to_attention_as_tokens(kv_heads, mask, merge):
    """With a symbolic batch and length, `Attention` reads q, k and v as the 3-D tokens (`q_num_heads`,
    `kv_num_heads`: grouped heads too, and a padding mask per batch) and the merged result is its own:
    no Reshape or Transpose is left; a result left split is its Reshape and Transpose. Equal to the
    program at two sizes, with ONNX Runtime's optimizer off and on."""
    mod, weights = _run_time_tokens(kv_heads, mask, merge)
    model = to_onnx(mod, weights)
    ops = Counter(n.op_type for n in model.graph.node)
    assert _heads(model) == [HEADS] and ops["Attention"] == 1
    assert [a.i for n in model.graph.node for a in n.attribute if a.name == "kv_num_heads"] == [kv_heads]
    assert (ops["Reshape"], ops["Transpose"]) == ((0, 0) if merge else (1, 1)), ops
    for batch, seq in ((2, 5), (1, 3)):
        values = {"x": RNG.standard_normal((batch, seq, HIDDEN)).astype("float32")}
        if mask:
            values["mask"] = np.where(RNG.random((batch, 1, seq, seq)) < 0.3, -1e4, 0.0).astype("float32")
        expected = evaluate(mod, {**values, **weights})
        for optimize in (False, True):
            assert_outputs_close([expected], _run(model, values, optimize), rel=1e-4)


def test_a_split_something_else_reads_is_kept():
    """Where the split-off query is read by more than the attention (here the graph's output too), its
    Reshape and Transpose stay for that reader."""
    batch, seq = ir.SizeVar("batch"), ir.SizeVar("seq")
    x = relay.var("x", shape=(batch, seq, HIDDEN))
    q = relay.transpose(relay.reshape(relay.exp(x), newshape=[0, 0, HEADS, SIZE]), axes=[0, 2, 1, 3])
    out = relay.nn.attention(q, q, q, scale=SIZE ** -0.5)
    mod = ir.IRModule.from_expr(relay.Function([x], relay.Tuple([out, q])))
    ir.infer_type(mod)
    model = to_onnx(mod)
    values = {"x": RNG.standard_normal((2, 5, HIDDEN)).astype("float32")}
    assert_outputs_close([np.asarray(e) for e in evaluate(mod, values)], run_ort(model, values), rel=1e-4)
    assert _heads(model) == [HEADS] and Counter(n.op_type for n in model.graph.node)["Transpose"] == 2


@pytest.mark.parametrize("rotary", [SIZE, SIZE // 2])
def test_a_rotation_of_heads_split_off_run_time_tokens_rotates_the_tokens(rotary):
    """ONNX Runtime's `RotaryEmbedding` takes the 3-D tokens (`num_heads`) and gives them back: the
    rotated query and key go to `Attention` as tokens with no Reshape or Transpose between (a partial
    rotary dimension too), and both kernels read one reshape of each table; equal to the program at
    two sizes."""
    batch, seq = ir.SizeVar("batch"), ir.SizeVar("seq")
    x = relay.var("x", shape=(batch, seq, HIDDEN))
    cos, sin = (relay.var(n, shape=(1, seq, rotary // 2)) for n in ("cos", "sin"))
    weights = {p: relay.var(f"w{p}", shape=(HIDDEN, HIDDEN)) for p in "qkv"}
    q, k, v = (relay.transpose(relay.reshape(relay.nn.dense(x, weights[p]), newshape=[0, 0, -1, SIZE]),
                               axes=[0, 2, 1, 3]) for p in "qkv")
    q, k = (relay.nn.rotary_embedding(t, cos, sin) for t in (q, k))
    out = relay.reshape(relay.transpose(relay.nn.attention(q, k, v, scale=SIZE ** -0.5), axes=[0, 2, 1, 3]),
                        newshape=[0, 0, HIDDEN])
    mod = ir.IRModule.from_expr(relay.Function([x, cos, sin, *weights.values()], relay.negative(out)))
    ir.infer_type(mod)
    params = {f"w{p}": (RNG.standard_normal((HIDDEN, HIDDEN)) * 0.3).astype("float32") for p in "qkv"}
    model = to_onnx(mod, params, contrib=True)
    ops = Counter(n.op_type for n in model.graph.node)
    assert ops["RotaryEmbedding"] == 2 and ops["Attention"] == 1 and ops["Transpose"] == 0, ops
    assert [n.input[0] for n in model.graph.node if n.op_type == "Reshape"] == ["cos", "sin"]  # one for both kernels
    rotated = {n.output[0] for n in model.graph.node if n.op_type == "RotaryEmbedding"}
    assert set(next(n for n in model.graph.node if n.op_type == "Attention").input[:2]) == rotated
    for b, s in ((2, 5), (1, 3)):
        angles = RNG.uniform(-3, 3, (1, s, rotary // 2))
        values = {"x": RNG.standard_normal((b, s, HIDDEN)).astype("float32"),
                  "cos": np.cos(angles).astype("float32"), "sin": np.sin(angles).astype("float32")}
        expected = evaluate(mod, {**values, **params})
        for optimize in (False, True):
            assert_outputs_close([expected], _run(model, values, optimize), rel=1e-4)


def test_a_decode_steps_heads_split_off_run_time_tokens_go_to_attention_as_tokens_with_the_cache():
    """A decode step (past keys and values as inputs, grouped heads): `Attention` reads the new q, k and v
    as 3-D tokens beside the 4-D cache and returns the present cache as it is; equal at two sizes."""
    batch, seq, past = (ir.SizeVar(n) for n in ("batch", "seq", "past"))
    kv_heads = 2
    x = relay.var("x", shape=(batch, seq, HIDDEN))
    caches = [relay.var(n, shape=(batch, kv_heads, past, SIZE)) for n in ("past_key", "past_value")]
    mask = relay.var("mask", shape=(batch, 1, seq, ir.SizeVar("total")))
    heads = {"q": HEADS, "k": kv_heads, "v": kv_heads}
    weights = {p: relay.var(f"w{p}", shape=(h * SIZE, HIDDEN)) for p, h in heads.items()}
    q, k, v = (relay.transpose(relay.reshape(relay.nn.dense(x, weights[p]), newshape=[0, 0, heads[p], SIZE]),
                               axes=[0, 2, 1, 3]) for p in "qkv")
    out = relay.nn.cached_attention(q, k, v, *caches, mask, scale=SIZE ** -0.5)
    merged = relay.reshape(relay.transpose(relay.TupleGetItem(out, 0), axes=[0, 2, 1, 3]), newshape=[0, 0, HIDDEN])
    body = relay.Tuple([relay.negative(merged), relay.TupleGetItem(out, 1), relay.TupleGetItem(out, 2)])
    mod = ir.IRModule.from_expr(relay.Function([x, *caches, mask, *weights.values()], body))
    ir.infer_type(mod)
    params = {f"w{p}": (RNG.standard_normal((h * SIZE, HIDDEN)) * 0.3).astype("float32") for p, h in heads.items()}
    model = to_onnx(mod, params)
    ops = Counter(n.op_type for n in model.graph.node)
    assert ops["Transpose"] == ops["Reshape"] == 0 and _heads(model) == [HEADS], ops
    for b, s, p in ((2, 1, 4), (1, 3, 2)):
        values = {"x": RNG.standard_normal((b, s, HIDDEN)).astype("float32"),
                  "past_key": RNG.standard_normal((b, kv_heads, p, SIZE)).astype("float32"),
                  "past_value": RNG.standard_normal((b, kv_heads, p, SIZE)).astype("float32"),
                  "mask": np.where(RNG.random((b, 1, s, p + s)) < 0.3, -1e4, 0.0).astype("float32")}
        expected = [np.asarray(e) for e in evaluate(mod, {**values, **params})]
        for optimize in (False, True):
            assert_outputs_close(expected, _run(model, values, optimize), rel=1e-4)


@pytest.mark.parametrize("newshape, axes", [([-1, 0, HEADS, SIZE], [0, 2, 1, 3]), ([0, 0, SIZE, HEADS], [0, 3, 1, 2])])
def test_near_miss_heads_not_split_off_tokens_by_the_last_axis_stay_four_d(newshape, axes):
    """A reshape that does not keep the batch and length (`-1` first), or heads taken every HEADS-th
    element (head-minor) rather than as runs of the last axis, are no head split of the tokens:
    `Attention` takes the 4-D values, with their Transposes."""
    batch, seq = ir.SizeVar("batch"), ir.SizeVar("seq")
    x = relay.var("x", shape=(batch, seq, HIDDEN))
    q = relay.transpose(relay.reshape(relay.exp(x), newshape=newshape), axes=axes)
    mod = ir.IRModule.from_expr(relay.Function([x], relay.nn.attention(q, q, q, scale=0.5)))
    ir.infer_type(mod)
    model = to_onnx(mod)
    values = {"x": RNG.standard_normal((2, 5, HIDDEN)).astype("float32")}
    assert_outputs_close([np.asarray(evaluate(mod, values))], run_ort(model, values), rel=1e-4)
    assert _heads(model) == [] and Counter(n.op_type for n in model.graph.node)["Transpose"] == 1


def test_a_head_split_written_as_a_reshape_of_an_earlier_value_is_not_read_as_tokens():
    """Static rows: the tokens are a reshape of 2-D rows, so the head split is written as one Reshape of
    those rows to the static shape; the rows are no (batch, sequence, hidden) tokens, and the rotation
    keeps the 4-D split (equal to the program in ONNX Runtime)."""
    x = relay.var("x", shape=(BATCH * SEQ, HIDDEN))
    w = relay.var("w", shape=(HIDDEN, HIDDEN))
    cos, sin = (relay.var(n, shape=(1, SEQ, SIZE // 2)) for n in ("cos", "sin"))
    tokens = relay.reshape(relay.nn.dense(x, w), newshape=[BATCH, SEQ, HIDDEN])
    q = relay.transpose(relay.reshape(tokens, newshape=[0, 0, HEADS, SIZE]), axes=[0, 2, 1, 3])
    mod = ir.IRModule.from_expr(relay.Function([x, cos, sin, w], relay.nn.rotary_embedding(q, cos, sin)))
    ir.infer_type(mod)
    params = {"w": (RNG.standard_normal((HIDDEN, HIDDEN)) * 0.3).astype("float32")}
    model = to_onnx(mod, params, contrib=True)
    angles = RNG.uniform(-3, 3, (1, SEQ, SIZE // 2))
    values = {"x": RNG.standard_normal((BATCH * SEQ, HIDDEN)).astype("float32"),
              "cos": np.cos(angles).astype("float32"), "sin": np.sin(angles).astype("float32")}
    assert_outputs_close([np.asarray(evaluate(mod, {**values, **params}))], run_ort(model, values), rel=1e-4)
    rotary = next(n for n in model.graph.node if n.op_type == "RotaryEmbedding")
    assert next(n for n in model.graph.node if rotary.input[0] in n.output).op_type == "Transpose"
