"""Converter of ONNX `Attention` (opset 23) to `nn.attention` / `nn.masked_attention`, and with a
key/value cache to `nn.cached_attention`.

Taken: 4-D query, key and value (batch, heads, sequence, head size), K and V with fewer heads
dividing the query's (grouped-query attention), an additive float mask or a boolean one (True
attends), `is_causal`, `scale` (default 1/sqrt(head size)), and `past_key` / `past_value` with an
`attn_mask` over the past and new keys (the outputs `present_key` / `present_value`). Refused with
an error naming the attribute or input: 3-D inputs (packed heads), a cache without a mask or with
`is_causal`, `nonpad_kv_seqlen`, the `qk_matmul_output` output, `softcap` and
`qk_matmul_output_mode`.
"""

from __future__ import annotations

import math

import numpy as np

from ..expr import Expr
from .errors import FrontendError
from .import_context import NodeContext, converter

_RANK = 4
_PAST, _NONPAD = (4, 5), 6


def _refuse_unsupported(ctx: NodeContext) -> bool:
    """Whether the node reads and writes a key/value cache; raises on what is not taken."""
    if ctx.has_input(_NONPAD):
        raise FrontendError("input 'nonpad_kv_seqlen' is not supported")
    cached = [ctx.has_input(i) for i in _PAST]
    if any(cached) and not (all(cached) and ctx.has_input(3) and not ctx.attr("is_causal", 0)):
        raise FrontendError("a key/value cache is taken as past_key and past_value with an attn_mask and "
                            "without is_causal")
    if ctx.num_outputs > 3 and ctx.node.output[3]:
        raise FrontendError("the qk_matmul_output output of Attention is not supported")
    for key in ("softcap", "qk_matmul_output_mode"):
        if ctx.attr(key, 0):
            raise ctx.unsupported(key, ctx.attr(key), "0 only")
    return all(cached)


@converter("Attention")
def convert_attention(ctx: NodeContext) -> Expr | list[Expr]:
    cached = _refuse_unsupported(ctx)
    query, key, value = (ctx.input(i) for i in range(3))
    shapes = [ctx.type_of(x).shape for x in (query, key, value)]
    if any(len(s) != _RANK for s in shapes):
        raise FrontendError(f"Attention takes 4-D (batch, heads, sequence, head size) inputs here, "
                            f"got shapes {[tuple(s) for s in shapes]}")
    head_size = shapes[0][-1]
    if not isinstance(head_size, int) and not ctx.has_attr("scale"):
        raise FrontendError("the default scale needs a static head size; give the scale attribute")
    scale = ctx.attr("scale", 1 / math.sqrt(head_size) if isinstance(head_size, int) else 1.0)
    mask = _mask(ctx, query, key)
    if cached:
        step = ctx.call("nn.cached_attention", query, key, value, ctx.input(4), ctx.input(5), mask, scale=scale)
        return [ctx.item(step, i) for i in range(min(3, ctx.num_outputs))]
    if ctx.num_outputs > 1 and any(ctx.node.output[1:]):
        raise FrontendError("present_key / present_value without past_key / past_value are not supported")
    if mask is None:
        return ctx.call("nn.attention", query, key, value, scale=scale)
    return ctx.call("nn.masked_attention", query, key, value, mask, scale=scale)


def _mask(ctx: NodeContext, query: Expr, key: Expr) -> Expr | None:
    """The additive mask: the given one (a boolean one as 0 / -inf), plus the causal one."""
    dtype = ctx.type_of(query).dtype
    mask = None
    if ctx.has_input(3):
        mask = ctx.input(3)
        if ctx.type_of(mask).dtype == "bool":
            mask = ctx.call("where", mask, ctx.const(0.0, dtype), ctx.const(-np.inf, dtype))
    if ctx.attr("is_causal", 0):
        rows = ctx.static_shape(query, "is_causal")[-2]
        cols = ctx.static_shape(key, "is_causal")[-2]
        causal = np.where(np.tril(np.ones((rows, cols), bool)), 0.0, -np.inf).astype(dtype)
        mask = ctx.const(causal) if mask is None else ctx.call("add", mask, ctx.const(causal))
    return mask
