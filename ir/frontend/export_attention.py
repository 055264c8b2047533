"""Emitter of the attention ops: ONNX `Attention` from opset 23, its decomposition below.

    nn.attention(q, k, v; scale)              -> Attention(Q, K, V; scale)           (opset >= 23)
    nn.masked_attention(q, k, v, mask; scale) -> Attention(Q, K, V, attn_mask; scale)

A 3-D call (heads, sequence, head size) is written as one batch of 4-D (Unsqueeze, then Squeeze).
A row the mask hides entirely (-inf throughout) is NaN in the op, as in its spelled-out form, but 0
in ONNX Runtime's kernel; a `ReduceMax`/`Where` guard on the (small) mask puts the NaN back.
Otherwise (an older opset, or a rank ONNX's `Attention` does not take) each is written as
`MatMul(Q, Transpose(K))`, `Mul` by the scale, `Add` of the mask, `Softmax` over the last axis
and `MatMul` with V: the spelling it was recognised from.
"""

from __future__ import annotations

from typing import Sequence

from ..expr import Call
from ..op.shapes import known
from .export_context import ONE_NODE_OPSETS, EmitContext, Value, emits
from .export_tensor import unsqueeze

__all__ = ["ATTENTION_OPSET"]

#: the first opset that defines `Attention`
ATTENTION_OPSET = 23
ONE_NODE_OPSETS.update({"nn.attention": ATTENTION_OPSET, "nn.masked_attention": ATTENTION_OPSET})
#: ONNX's `Attention` takes 4-D (batch, heads, sequence, head size) inputs (3-D ones pack the heads);
#: a 3-D call's leading axis is taken as the heads of one batch
_ATTENTION_RANK = 4
#: the dtypes ONNX Runtime's CPU kernel of `Attention` takes
_ATTENTION_DTYPES = ("float32",)


def _mask_over_scores(ctx: EmitContext, call: Call, args: Sequence[Value], mask: Value) -> Value:
    """The mask as ONNX Runtime takes it: 4-D, its last two axes as long as the scores' (ONNX
    Runtime broadcasts only the leading axes of `attn_mask`), expanded where they are not (to
    lengths read when the model runs where they are symbolic)."""
    shape = ctx.type_of(call.args[3]).shape
    rows, cols = ctx.type_of(call.args[0]).shape[-2], ctx.type_of(call.args[1]).shape[-2]
    if len(shape) == _ATTENTION_RANK and tuple(shape[-2:]) == (rows, cols):
        return mask
    if known(rows) and known(cols):
        target = ctx.ints((1, 1, rows, cols))  # Expand broadcasts both ways: the 1s keep the mask's axes
    else:
        lengths = [ctx.node("Shape", [value], start=-2, end=-1) for value in args[:2]]
        target = ctx.node("Concat", [ctx.ints((1, 1)), *lengths], axis=0)
    return ctx.node("Expand", [mask, target])


def _nan_in_hidden_rows(ctx: EmitContext, mask: Value, dtype: str) -> Value:
    """The mask with NaN in its rows that are -inf throughout. There softmax divides 0 by 0, which
    the op (and its spelled-out form) gives as NaN, while ONNX Runtime's `Attention` writes 0 for
    such a row; a NaN in the mask makes it NaN. The mask is small (it broadcasts), so this is cheap."""
    row_max = ctx.node("ReduceMax", [mask, ctx.ints([-1])], keepdims=1)
    hidden = ctx.node("Equal", [row_max, ctx.const(-float("inf"), dtype)])
    return ctx.node("Where", [hidden, ctx.const(float("nan"), dtype), mask])


@emits("nn.attention", "nn.masked_attention")
def emit_attention(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    query = ctx.type_of(call.args[0])
    scale = call.attrs.scale
    if ctx.opset >= ATTENTION_OPSET and query.ndim in (3, 4) and query.dtype in _ATTENTION_DTYPES:
        added = list(range(_ATTENTION_RANK - query.ndim))
        inputs = [unsqueeze(ctx, a, added) for a in args[:3]]
        if len(args) > 3:
            inputs.append(_mask_over_scores(ctx, call, args, _nan_in_hidden_rows(ctx, args[3], query.dtype)))
        out = ctx.node("Attention", inputs, scale=scale)
        return ctx.node("Squeeze", [out, ctx.ints(added)]) if added else out
    perm = list(range(query.ndim))
    perm[-2:] = perm[-1], perm[-2]
    scores = ctx.node("MatMul", [args[0], ctx.node("Transpose", [args[1]], perm=perm)])
    if scale != 1.0:
        scores = ctx.node("Mul", [scores, ctx.const(scale, query.dtype)])
    if len(args) > 3:
        scores = ctx.node("Add", [scores, args[3]])
    return ctx.node("MatMul", [ctx.node("Softmax", [scores], axis=-1), args[2]])
