"""Emitter of the attention ops: ONNX `Attention` from opset 23, its decomposition below.

    nn.attention(q, k, v; scale)              -> Attention(Q, K, V; scale)           (opset >= 23)
    nn.masked_attention(q, k, v, mask; scale) -> Attention(Q, K, V, attn_mask; scale)   (and `softcap`)
    nn.cached_attention(q, k, v, past_k, past_v, mask; scale)
                      -> Y, present_key, present_value = Attention(Q, K, V, attn_mask, past_key, past_value; scale)

(ONNX Runtime's contrib `GroupQueryAttention` also takes a cache, but it computes its own causal
mask over right-padded rows (`seqlens_k`, `local_window_size`), not the mask an export builds from
a left-padded `attention_mask`; ONNX `Attention` with past takes any additive mask, a sliding
window's included, and the K/V heads as they are.)

Where q, k and v are (batch, sequence, heads x head size) values with their heads split off by
static reshapes and transposes (`EmitContext.relayouts`), as a dense layer's heads are, `Attention`
reads those 3-D values with `q_num_heads` / `kv_num_heads` and the Transposes go: its 3-D result is
the call's value through relayout nodes a consumer that merges the heads back reads through.
Where the batch and sequence are known only when the model runs, q, k and v split into heads by
`reshape(x, [0, 0, heads, size])` and a transpose of the sequence and head axes (the static form the
shape rules give an exporter's run-time Reshape) are read the same way, as 3-D x; the result is the
call's value through a Reshape and a Transpose (`HeadSplit`) that a consumer merging the heads back
reads through (`export_tensor`).
Otherwise a 3-D call (heads, sequence, head size) is written as one batch of 4-D (Unsqueeze, then Squeeze).
A row the mask hides entirely (-inf throughout) is NaN in the op, as in its spelled-out form, but 0
in ONNX Runtime's kernel; a `ReduceMax`/`Where` guard on the (small) mask puts the NaN back, and a
row hidden by the lowest finite value is uniform in the op but 0 in the kernel, so the mask is
raised to -1e30 where it is lower but finite.
With `nan_rows="zero"` (torch SDPA's `where(isnan(p), 0, p)` guard) a hidden row is 0 in the op
and in the kernel, and only the floor is applied. A row whose scores hold NaN or +inf (Q or K hold
NaN or infinity, or their products overflow) is NaN throughout its softmax: the op makes its weights
0, so its result is `0 x V` (0 where V's column is finite, NaN where it is not), while the kernel
gives NaN. The kernel's NaN is replaced by `sum(0 x V)` over the keys (`_zero_rows_as_the_op`):
that is the op's value for such a row, and NaN wherever the kernel's NaN has another cause (a
non-finite V column), so every other value is left as it is.
K and V with fewer heads than Q (grouped-query attention) go to `Attention` as they are (its 4-D
inputs may have fewer KV heads).
Otherwise (an older opset, a dtype or a rank ONNX Runtime's `Attention` does not take) each is
written as the spelling it was recognised from (`_spelled_out`), a cache's `Concat`s first.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..expr import Call, Expr
from ..op.shapes import known
from .errors import FrontendError
from ..types import TensorType, is_static
from .export_context import ONE_NODE_OPSETS, EmitContext, HeadSplit, Relayout, Value, emits
from .export_tensor import head_split_of, relayout_of, split_heads, unsqueeze

__all__ = ["ATTENTION_OPSET"]

#: the first opset that defines `Attention`
ATTENTION_OPSET = 23
ONE_NODE_OPSETS.update(dict.fromkeys(("nn.attention", "nn.masked_attention", "nn.cached_attention"), ATTENTION_OPSET))
#: ONNX's `Attention` takes 4-D (batch, heads, sequence, head size) inputs (3-D ones pack the heads);
#: a 3-D call's leading axis is taken as the heads of one batch
_ATTENTION_RANK = 4
#: the dtypes `Attention` is written in. ONNX Runtime 1.32 runs it in float16 too (its CPU kernel
#: computes in float32), but not as the op does: exporters fill hidden scores with the dtype's lowest
#: value, and a row hidden throughout is then, in float16, scores rounded onto that value (spaced 32
#: apart there) and averaged over the largest, while the kernel softmaxes the scores themselves; the
#: float32 floor below (`_MASK_FLOOR`) has no float16 counterpart
_ATTENTION_DTYPES = ("float32",)


def _mask_over_scores(ctx: EmitContext, mask_expr: Expr, mask: Value, rows, cols,
                      sources: Sequence[Sequence[Value]]) -> Value:
    """The mask as ONNX Runtime takes it: 4-D, its last two axes as long as the scores' (`rows`, `cols`;
    ONNX Runtime broadcasts only the leading axes of `attn_mask`), expanded where they are not; where
    the lengths are symbolic they are read when the model runs, each as the sum of the second-to-last
    axes of its `sources` (the query's; the keys', or the past and new keys' of a cache)."""
    shape = ctx.type_of(mask_expr).shape
    if len(shape) == _ATTENTION_RANK and tuple(shape[-2:]) == (rows, cols):
        return mask
    if known(rows) and known(cols):
        target = ctx.ints((1, 1, rows, cols))  # Expand broadcasts both ways: the 1s keep the mask's axes
    else:
        lengths = []
        for values in sources:
            parts = [ctx.node("Shape", [value], start=-2, end=-1) for value in values]
            lengths.append(parts[0] if len(parts) == 1 else ctx.node("Add", parts))
        target = ctx.node("Concat", [ctx.ints((1, 1)), *lengths], axis=0)
    return ctx.node("Expand", [mask, target])


#: the most negative mask value passed to ONNX Runtime's `Attention`: a row hidden by the dtype's
#: lowest finite value (the eager exports' `finfo.min` fill) is uniform in the op and its spelled-out
#: form, but 0 in the kernel, which reads such a value as -inf; at -1e30 the kernel gives the uniform
#: row too, and every other row is unchanged (its hidden scores still underflow to 0)
_MASK_FLOOR = -1e30


def _kernel_mask(ctx: EmitContext, call: Call, mask_expr: Expr, mask: Value) -> Value:
    """The mask as ONNX Runtime's `Attention` reads it to compute `call`: its finite values below
    `_MASK_FLOOR` raised to it (-inf stays: a row hidden in part keeps its -inf columns at 0 weight),
    and, where the op keeps a row NaN (`nan_rows="keep"`), NaN in its rows that are -inf throughout
    (softmax divides 0 by 0 there, which the op and its spelled-out form give as NaN and the kernel
    as 0, as the op does with `nan_rows="zero"`; a NaN in the mask makes the row NaN). The mask is
    small (it broadcasts), so this is cheap; a constant mask is computed here, and a step its
    bounds (`ir.value_bounds`) show to change nothing is left out."""
    dtype = ctx.type_of(call.args[0]).dtype
    keep = getattr(call.attrs, "nan_rows", "keep") != "zero"
    constant = ctx.value_of(mask)
    if constant is not None:
        with np.errstate(invalid="ignore"):
            raised = np.where((constant < _MASK_FLOOR) & np.isfinite(constant), _MASK_FLOOR, constant)
            hidden = keep & (np.max(constant, axis=-1, keepdims=True) == -np.inf)
        return ctx.const(np.where(hidden, np.nan, raised).astype(constant.dtype))
    chosen = _chosen_mask(ctx, call, mask)
    if chosen is not None:
        return chosen
    bound = ctx.bounds.of(mask_expr)
    if bound is not None and bound[0] >= _MASK_FLOOR:  # nothing to raise, and no row is -inf throughout
        return mask
    floor, low = ctx.const(_MASK_FLOOR, dtype), ctx.const(-float("inf"), dtype)
    finite_low = ctx.node("And", [ctx.node("Less", [mask, floor]), ctx.node("Greater", [mask, low])])
    raised = ctx.node("Where", [finite_low, floor, mask])
    if not keep or (bound is not None and bound[0] > -np.inf):
        return raised
    hidden = ctx.node("Equal", [ctx.node("ReduceMax", [mask, ctx.ints([-1])], keepdims=1), low])
    return ctx.node("Where", [hidden, ctx.const(float("nan"), dtype), raised])


def _chosen_mask(ctx: EmitContext, call: Call, mask: Value) -> Value | None:
    """`_kernel_mask` of a mask that a `Where` chooses between two constants (the exports' `where(keep, 0,
    finfo.min)`), as one `Where` choosing between the constants raised to `_MASK_FLOOR`, in place of the
    mask's own; None where it is not such a mask, or one constant is -inf where the op keeps hidden
    rows NaN (which rows are hidden throughout is then known only when the model runs)."""
    made = ctx.producer(mask)
    if made is None or made.op_type != "Where":
        return None
    branches = [ctx.value_of(name) for name in made.input[1:]]
    if any(b is None for b in branches):
        return None
    if getattr(call.attrs, "nan_rows", "keep") != "zero" and any(np.isneginf(b).any() for b in branches):
        return None
    raised = [np.where((b < _MASK_FLOOR) & np.isfinite(b), np.asarray(_MASK_FLOOR, b.dtype), b) for b in branches]
    ctx.bypassable[mask] = made.input[0]  # the mask's own Where is left out when nothing else reads it
    return ctx.node("Where", [made.input[0], *(ctx.const(r) for r in raised)])


def _zero_rows_as_the_op(ctx: EmitContext, call: Call, out: Value, value: Value, *, out_tokens: bool,
                         value_tokens: bool, heads, kv_heads, size) -> Value:
    """`out`, the kernel's result, where the op has `nan_rows="zero"`: its NaN replaced by the sum over
    the keys of `0 x value` (see the module docstring), each KV head's for the query heads that read
    it. Layouts: (batch, sequence, heads x size) tokens, whose head counts and size are known, or
    (batch, heads, sequence, size), whose counts may be known only when the model runs."""
    if getattr(call.attrs, "nan_rows", "keep") != "zero" or ctx.bounds.scores_finite(
            call, [ctx.bounds.of(a) for a in call.args]):
        return out  # no score can be NaN or +inf (`ir.value_bounds`): no row for the kernel to give as NaN
    zeros = ctx.node("Mul", [value, ctx.const(0.0, ctx.type_of(call.args[2]).dtype)])
    fill = ctx.node("ReduceSum", [zeros, ctx.ints([1 if value_tokens else 2])], keepdims=1)
    if not (value_tokens and out_tokens and heads == kv_heads):  # else already in the result's layout
        if value_tokens:
            fill = ctx.node("Reshape", [fill, ctx.ints([0, kv_heads, 1, size])])
        fill = _per_query_head(ctx, fill, out, heads, kv_heads, out_tokens)
        if out_tokens:
            fill = ctx.node("Reshape", [fill, ctx.ints([0, 1, -1])])
    return ctx.node("Where", [ctx.node("IsNaN", [out]), fill, out])


def _per_query_head(ctx: EmitContext, fill: Value, out: Value, heads, kv_heads, out_tokens: bool) -> Value:
    """`fill` (batch, KV heads, 1, size) with each KV head repeated for the query heads that read it
    (query head h reads KV head h // (heads / KV heads)), the counts read from `out` (heads on axis 1,
    or on 2 of its tokens split) and `fill` where they are known only when the model runs."""
    if known(heads) and known(kv_heads):
        if heads == kv_heads:
            return fill
        return ctx.node("Gather", [fill, ctx.ints(np.repeat(np.arange(kv_heads), heads // kv_heads))], axis=1)
    if out_tokens:  # tokens come with their counts (`HeadSplit`)
        raise FrontendError(f"attention over tokens with {heads} query and {kv_heads} key/value heads")
    scalar = ctx.ints([])
    count = ctx.node("Reshape", [ctx.node("Shape", [out], start=1, end=2), scalar])
    group = ctx.node("Div", [count, ctx.node("Reshape", [ctx.node("Shape", [fill], start=1, end=2), scalar])])
    start, step = (ctx.const(np.asarray(n, dtype="int64")) for n in (0, 1))
    index = ctx.node("Div", [ctx.node("Range", [start, count, step]), group])
    return ctx.node("Gather", [fill, index], axis=1)


def _split_heads(batch: int, heads: int, shape: Sequence[int]) -> np.ndarray:
    """Positions in a (batch, sequence, heads x head size) tensor of its heads split off: (batch, sequence,
    heads, head size) transposed to (batch, heads, sequence, head size), shaped as `shape`."""
    sequence, size = shape[-2], shape[-1]
    flat = np.arange(batch * sequence * heads * size, dtype=np.int32)
    return flat.reshape(batch, sequence, heads, size).transpose(0, 2, 1, 3).reshape(shape)


def _head_sources(ctx: EmitContext, call: Call, args: Sequence[Value]) -> tuple[int, int, list[Relayout]] | None:
    """(batch, heads, how each of q, k, v was made) where each is a (batch, sequence, heads x head size)
    value with its heads split off by reshapes and transposes, the layout the heads of a dense layer
    over the tokens are in; None where one is not."""
    relayouts = [relayout_of(ctx, expr, value) for expr, value in zip(call.args[:3], args[:3])]
    if any(r is None or not r.steps for r in relayouts):
        return None
    shape = ctx.type_of(call.args[0]).concrete_shape
    if len(shape) == _ATTENTION_RANK:
        candidates = [(shape[0], shape[1])]
    else:  # (batch x heads, ...): every split of the leading axis with more than one head
        candidates = [(shape[0] // h, h) for h in range(2, shape[0] + 1) if shape[0] % h == 0]
    positions = [r.positions() for r in relayouts]
    for batch, heads in candidates:
        if all(np.array_equal(p, _split_heads(batch, heads, p.shape)) for p in positions):
            return batch, heads, relayouts
    return None


def _attention_over_tokens(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    """`Attention` on the 3-D (batch, sequence, heads x head size) values q, k and v were split into heads
    from (see `_head_sources`), with `q_num_heads` / `kv_num_heads`: ONNX Runtime splits and merges the
    heads itself, so the Transposes around it go; the result is the call's layout as relayout nodes
    of its output, which a consumer that merges the heads back reads through (`export_tensor`)."""
    if len(args) > 3 and any(d != 1 for d in ctx.type_of(call.args[3]).shape[:-2]):
        return None  # a mask per batch or head: its axes would not line up with ONNX's
    if ctx.type_of(call.args[1]).shape[-3] != ctx.type_of(call.args[0]).shape[-3]:
        return None  # fewer KV heads: the 4-D form takes them as they are
    sources = _head_sources(ctx, call, args)
    if sources is None:
        return None
    batch, heads, relayouts = sources
    inputs = []
    for expr, r in zip(call.args[:3], relayouts):
        sequence, size = ctx.type_of(expr).concrete_shape[-2:]
        tokens = (batch, sequence, heads * size)
        inputs.append(r.base if r.shape == tokens else ctx.node("Reshape", [r.base, ctx.ints(tokens)]))
    if len(args) > 3:
        inputs.append(_scores_mask(ctx, call, args))
    out = ctx.node("Attention", inputs, scale=call.attrs.scale, softcap=_softcap(call), q_num_heads=heads,
                   kv_num_heads=heads)
    shape = tuple(ctx.type_of(call).concrete_shape)
    sequence, size = shape[-2], shape[-1]
    out = _zero_rows_as_the_op(ctx, call, out, inputs[2], out_tokens=True, value_tokens=True, heads=heads,
                               kv_heads=heads, size=size)
    tokens = (batch, sequence, heads * size)
    relayout = Relayout(out, tokens)
    value = out
    steps = [("reshape", (batch, sequence, heads, size)), ("transpose", (0, 2, 1, 3))]
    if shape != (batch, heads, sequence, size):  # the 3-D call's (batch x heads, sequence, size)
        steps.append(("reshape", shape))
    for kind, arg in steps:
        value = (ctx.node("Reshape", [value, ctx.ints(arg)]) if kind == "reshape"
                 else ctx.node("Transpose", [value], perm=list(arg)))
        relayout = relayout.then(kind, arg)
        ctx.relayouts[value] = relayout
    return value


def _token_sources(ctx: EmitContext, call: Call, args: Sequence[Value]) -> tuple[HeadSplit, ...] | None:
    """How q, k and v were split off their tokens (`head_split_of`), where all three were, K and V with as
    many heads as each other, a number that divides the query's; else None."""
    sources = tuple(head_split_of(ctx, expr, value) for expr, value in zip(call.args[:3], args[:3]))
    if any(s is None for s in sources):
        return None
    heads, kv_heads, v_heads = (s.heads for s in sources)  # type: ignore[union-attr]
    return sources if v_heads == kv_heads and heads % kv_heads == 0 else None  # type: ignore[return-value]


def _on_tokens(ctx: EmitContext, call: Call, sources: Sequence[HeadSplit], inputs: Sequence[Value],
               outputs: int = 1) -> list[Value]:
    """The outputs of `Attention` on `inputs` (the tokens of `sources` first) with their head counts: its
    result as the call's value through a `HeadSplit` (`split_heads`), a cache's outputs as they are."""
    q, k, v = sources
    out = ctx.node("Attention", list(inputs), outputs=outputs, scale=call.attrs.scale, softcap=_softcap(call),
                   q_num_heads=q.heads, kv_num_heads=k.heads)
    first, *present = out if outputs > 1 else [out]
    first = _zero_rows_as_the_op(ctx, call, first, present[1] if present else inputs[2], out_tokens=True,
                                 value_tokens=not present, heads=q.heads, kv_heads=k.heads, size=v.size)
    return [split_heads(ctx, first, q.heads, v.size), *present]


def _attention_over_run_time_tokens(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    """`Attention` on the 3-D values q, k and v were split into heads from (`_token_sources`), with
    `q_num_heads` / `kv_num_heads` (`_on_tokens`)."""
    sources = _token_sources(ctx, call, args)
    if sources is None:
        return None
    inputs = [s.tokens for s in sources]
    if len(args) > 3:
        inputs.append(_scores_mask(ctx, call, args, inputs[:2]))
    return _on_tokens(ctx, call, sources, inputs)[0]


def _scores_mask(ctx: EmitContext, call: Call, args: Sequence[Value], qk: Sequence[Value] | None = None) -> Value:
    """The mask of an `nn.masked_attention` call as ONNX Runtime's `Attention` reads it (the lengths it
    is expanded to read from `qk`, the query and key values `Attention` takes, by default the call's)."""
    rows, cols = ctx.type_of(call.args[0]).shape[-2], ctx.type_of(call.args[1]).shape[-2]
    q, k = qk or args[:2]
    kernel_mask = _kernel_mask(ctx, call, call.args[3], args[3])
    return _mask_over_scores(ctx, call.args[3], kernel_mask, rows, cols, ([q], [k]))


def _softcap(call: Call) -> float | None:
    """The call's soft cap as `Attention`'s attribute (left out where there is none)."""
    return call.attrs.softcap if getattr(call.attrs, "softcap", 0.0) > 0 else None


def _head_layout(ctx: EmitContext, call: Call) -> dict:
    """`_zero_rows_as_the_op`'s layout arguments for a call's 4-D (batch, heads, sequence, size) values
    (a 3-D call's leading axis is its heads)."""
    query, key = ctx.type_of(call.args[0]).shape, ctx.type_of(call.args[1]).shape
    return dict(out_tokens=False, value_tokens=False, heads=query[-3], kv_heads=key[-3], size=query[-1])


def _one_node(ctx: EmitContext, query: TensorType) -> bool:
    return ctx.opset >= ATTENTION_OPSET and query.dtype in _ATTENTION_DTYPES


@emits("nn.attention", "nn.masked_attention")
def emit_attention(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    query = ctx.type_of(call.args[0])
    if _one_node(ctx, query) and query.ndim in (3, 4):
        over_tokens = ((_attention_over_tokens(ctx, call, args) if is_static(query.shape) else None)
                       or _attention_over_run_time_tokens(ctx, call, args))
        if over_tokens is not None:
            return over_tokens
        added = list(range(_ATTENTION_RANK - query.ndim))
        inputs = [unsqueeze(ctx, a, added) for a in args[:3]]
        if len(args) > 3:
            inputs.append(_scores_mask(ctx, call, args))
        out = _zero_rows_as_the_op(ctx, call, ctx.node("Attention", inputs, scale=call.attrs.scale,
                                                       softcap=_softcap(call)), inputs[2], **_head_layout(ctx, call))
        return ctx.node("Squeeze", [out, ctx.ints(added)]) if added else out
    kv_heads = ctx.type_of(call.args[1]).shape[-3]
    return _spelled_out(ctx, call, query, kv_heads, *args[:3], args[3] if len(args) > 3 else None)


@emits("nn.cached_attention")
def emit_cached_attention(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    """`Attention` with `past_key`/`past_value` inputs and `present_key`/`present_value` outputs (4-D
    float32 from opset 23; q, k and v split off tokens read as the tokens, as without a cache);
    otherwise each cache's `Concat` and the attention spelled out."""
    query = ctx.type_of(call.args[0])
    if _one_node(ctx, query) and query.ndim == _ATTENTION_RANK:
        sources = _token_sources(ctx, call, args)
        q, k, v = args[:3] if sources is None else (s.tokens for s in sources)
        rows, cols = query.shape[-2], call.checked_type.fields[1].shape[-2]
        mask = _mask_over_scores(ctx, call.args[5], _kernel_mask(ctx, call, call.args[5], args[5]), rows, cols,
                                 ([q], [args[3], k]))
        inputs = [q, k, v, mask, *args[3:5]]
        if sources is not None:
            return tuple(_on_tokens(ctx, call, sources, inputs, outputs=3))
        out, *present = ctx.node("Attention", inputs, outputs=3, scale=call.attrs.scale, softcap=_softcap(call))
        return (_zero_rows_as_the_op(ctx, call, out, present[1], **_head_layout(ctx, call)), *present)
    present = [ctx.node("Concat", [past, new], axis=-2) for past, new in ((args[3], args[1]), (args[4], args[2]))]
    out = _spelled_out(ctx, call, query, ctx.type_of(call.args[1]).shape[-3], args[0], *present, args[5])
    return (out, *present)


def _spelled_out(ctx: EmitContext, call: Call, query: TensorType, kv_heads, q: Value, k: Value, v: Value,
                 mask: Value | None) -> Value:
    """`MatMul(Q, Transpose(K))` (K and V with fewer heads gathered to the query's first), `Mul` by the
    scale, `Tanh` of the scores over the soft cap times the cap, `Add` of the mask, `Softmax` over the
    last axis (its NaN rows made 0 for `nan_rows="zero"`) and `MatMul` with V."""
    perm = list(range(query.ndim))
    perm[-2:] = perm[-1], perm[-2]
    key, value = _repeat_kv(ctx, query.shape[-3], kv_heads, k, v)
    scores = ctx.node("MatMul", [q, ctx.node("Transpose", [key], perm=perm)])
    if call.attrs.scale != 1.0:
        scores = ctx.node("Mul", [scores, ctx.const(call.attrs.scale, query.dtype)])
    if _softcap(call):
        cap = ctx.const(call.attrs.softcap, query.dtype)
        scores = ctx.node("Mul", [ctx.node("Tanh", [ctx.node("Div", [scores, cap])]), cap])
    if mask is not None:
        scores = ctx.node("Add", [scores, mask])
    probs = ctx.node("Softmax", [scores], axis=-1)
    if getattr(call.attrs, "nan_rows", "keep") == "zero":
        probs = ctx.node("Where", [ctx.node("IsNaN", [probs]), ctx.const(0.0, query.dtype), probs])
    return ctx.node("MatMul", [probs, value])


def _repeat_kv(ctx: EmitContext, q_heads, kv_heads, key: Value, value: Value) -> tuple[Value, Value]:
    """K and V with each of their heads repeated for its group of query heads (a `Gather` of the
    head axis, which takes symbolic lengths elsewhere), or as they are where the head counts agree."""
    if not (known(q_heads) and known(kv_heads)):
        raise FrontendError(f"attention with {q_heads} query and {kv_heads} key/value heads: the head counts must "
                            f"be known to write it as ONNX ops")
    if q_heads == kv_heads:
        return key, value
    heads = ctx.ints(np.repeat(np.arange(kv_heads), q_heads // kv_heads))
    return ctx.node("Gather", [key, heads], axis=-3), ctx.node("Gather", [value, heads], axis=-3)
