"""Converter of ONNX `RotaryEmbedding` (opset 23) to `nn.rotary_embedding`.

Taken: 4-D input (batch, heads, sequence, head size), or 3-D (batch, sequence, hidden) with
`num_heads` (split into heads and back around the op); caches (batch, sequence, r/2), or
(positions, r/2) read at `position_ids` (a gather); `interleaved`; `rotary_embedding_dim` (0: the
whole head), which must be twice the caches' last axis.
"""

from __future__ import annotations

from ..expr import Expr
from .errors import FrontendError
from .import_context import NodeContext, converter


@converter("RotaryEmbedding")
def convert_rotary_embedding(ctx: NodeContext) -> Expr:
    data, cos, sin = (ctx.input(i) for i in range(3))
    shape = ctx.type_of(data).shape
    heads = ctx.attr("num_heads", 0)
    if len(shape) == 3:
        if not heads or not isinstance(shape[-1], int) or shape[-1] % heads:
            raise FrontendError(f"a 3-D input {tuple(shape)} needs num_heads dividing its static hidden size, "
                                f"got num_heads={heads}")
        data = ctx.call("transpose", ctx.call("reshape", data, newshape=[0, 0, heads, shape[-1] // heads]),
                        axes=[0, 2, 1, 3])
    elif len(shape) != 4:
        raise FrontendError(f"RotaryEmbedding takes a 3-D or 4-D input, got shape {tuple(shape)}")
    if ctx.has_input(3):
        ids = ctx.input(3)
        cos, sin = (ctx.call("take", t, ids, axis=0, mode="fast") for t in (cos, sin))
    half = ctx.type_of(cos).shape[-1]
    head = ctx.type_of(data).shape[-1]
    wanted = ctx.attr("rotary_embedding_dim", 0) or head
    if not isinstance(half, int) or 2 * half != wanted:
        raise FrontendError(f"the caches' last axis ({half}) must be half the rotary dimension ({wanted})")
    out = ctx.call("nn.rotary_embedding", data, cos, sin, interleaved=bool(ctx.attr("interleaved", 0)))
    if len(shape) == 3:
        out = ctx.call("reshape", ctx.call("transpose", out, axes=[0, 2, 1, 3]), newshape=[0, 0, -1])
    return out
