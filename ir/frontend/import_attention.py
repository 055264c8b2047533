"""Converter of ONNX `Attention` (opset 23) to `nn.attention` / `nn.masked_attention`.

Taken: 4-D query, key and value of one head count (batch, heads, sequence, head size), an
additive float mask or a boolean one (True attends), `is_causal`, `scale` (default 1/sqrt(head
size)). Refused with an error naming the attribute or input: 3-D inputs (packed heads), grouped
key/value heads, the key/value cache inputs and outputs, `softcap` and `qk_matmul_output_mode`.
"""

from __future__ import annotations

import math

import numpy as np

from ..expr import Expr
from .errors import FrontendError
from .import_context import NodeContext, converter

_RANK = 4
_CACHE_INPUTS = {4: "past_key", 5: "past_value", 6: "nonpad_kv_seqlen"}


def _refuse_unsupported(ctx: NodeContext) -> None:
    for index, name in _CACHE_INPUTS.items():
        if ctx.has_input(index):
            raise FrontendError(f"input {name!r} (a key/value cache) is not supported")
    if ctx.num_outputs > 1 and any(ctx.node.output[1:]):
        raise FrontendError("only the first output of Attention is supported (no key/value cache outputs)")
    for key in ("softcap", "qk_matmul_output_mode"):
        if ctx.attr(key, 0):
            raise ctx.unsupported(key, ctx.attr(key), "0 only")


@converter("Attention")
def convert_attention(ctx: NodeContext) -> Expr:
    _refuse_unsupported(ctx)
    query, key, value = (ctx.input(i) for i in range(3))
    shapes = [ctx.type_of(x).shape for x in (query, key, value)]
    if any(len(s) != _RANK for s in shapes):
        raise FrontendError(f"Attention takes 4-D (batch, heads, sequence, head size) inputs here, "
                            f"got shapes {[tuple(s) for s in shapes]}")
    if not shapes[0][1] == shapes[1][1] == shapes[2][1]:
        raise FrontendError(f"grouped key/value heads are not supported: query, key and value have "
                            f"{shapes[0][1]}, {shapes[1][1]} and {shapes[2][1]} heads")
    head_size = shapes[0][-1]
    if not isinstance(head_size, int) and not ctx.has_attr("scale"):
        raise FrontendError("the default scale needs a static head size; give the scale attribute")
    scale = ctx.attr("scale", 1 / math.sqrt(head_size) if isinstance(head_size, int) else 1.0)
    mask = _mask(ctx, query, key)
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
