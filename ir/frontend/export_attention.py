"""Emitter of the attention ops: ONNX `Attention` from opset 23, its decomposition below.

    nn.attention(q, k, v; scale)              -> Attention(Q, K, V; scale)           (4-D, opset >= 23)
    nn.masked_attention(q, k, v, mask; scale) -> Attention(Q, K, V, attn_mask; scale)

Otherwise (an older opset, or a rank ONNX's `Attention` does not take) each is written as
`MatMul(Q, Transpose(K))`, `Mul` by the scale, `Add` of the mask, `Softmax` over the last axis
and `MatMul` with V: the spelling it was recognised from.
"""

from __future__ import annotations

from typing import Sequence

from ..expr import Call
from .export_context import ONE_NODE_OPSETS, EmitContext, Value, emits

__all__ = ["ATTENTION_OPSET"]

#: the first opset that defines `Attention`
ATTENTION_OPSET = 23
ONE_NODE_OPSETS.update({"nn.attention": ATTENTION_OPSET, "nn.masked_attention": ATTENTION_OPSET})
#: ONNX's `Attention` takes 4-D (batch, heads, sequence, head size) inputs (3-D ones pack the heads)
_ATTENTION_RANK = 4
#: the dtypes ONNX Runtime's CPU kernel of `Attention` takes
_ATTENTION_DTYPES = ("float32",)


def _mask_over_scores(ctx: EmitContext, call: Call, mask: Value) -> Value:
    """The mask with its last two axes as long as the scores' (ONNX Runtime broadcasts only the
    leading axes of `attn_mask`), expanded where they are shorter."""
    shape = ctx.static_shape(call.args[3], "attention mask")
    rows, cols = ctx.static_shape(call.args[0], "query")[-2], ctx.static_shape(call.args[1], "key")[-2]
    if tuple(shape[-2:]) == (rows, cols):
        return mask
    lead = tuple(shape[:-2]) or (1,)
    return ctx.node("Expand", [mask, ctx.ints((*lead, rows, cols))])


@emits("nn.attention", "nn.masked_attention")
def emit_attention(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    query = ctx.type_of(call.args[0])
    scale = call.attrs.scale
    if ctx.opset >= ATTENTION_OPSET and query.ndim == _ATTENTION_RANK and query.dtype in _ATTENTION_DTYPES:
        if len(args) > 3:
            args = [*args[:3], _mask_over_scores(ctx, call, args[3])]
        return ctx.node("Attention", args, scale=scale)
    perm = list(range(query.ndim))
    perm[-2:] = perm[-1], perm[-2]
    scores = ctx.node("MatMul", [args[0], ctx.node("Transpose", [args[1]], perm=perm)])
    if scale != 1.0:
        scores = ctx.node("Mul", [scores, ctx.const(scale, query.dtype)])
    if len(args) > 3:
        scores = ctx.node("Add", [scores, args[3]])
    return ctx.node("MatMul", [ctx.node("Softmax", [scores], axis=-1), args[2]])
