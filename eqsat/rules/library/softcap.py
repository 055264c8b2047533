"""Attention with soft-capped scores (Gemma-2's `attn_logit_softcapping`; ONNX Attention's `softcap`):

    matmul(softmax(tanh(matmul(q, kT) * s / c) * c [+ mask]), v)
        -> nn.masked_attention(q, k, v, mask; scale=s, softcap=c)      (nn.attention without a mask)

as `transformers`' eager attention writes it: the scaled scores divided by the cap, `tanh`, times
the cap, then the mask. The op computes those steps in that order and dtype (its reference kernel:
`tanh(scores / c) * c`), bit for bit in float16, float32 and float64; ONNX Runtime's `Attention`
caps before it adds the mask too, but with its own tanh and products, whose last bits differ
from the spelled-out ops', so the rule is declared inexact (as the other attention rules are, for
the same reason), and programs using it are verified within tolerance. bfloat16 is left out: the host executor's bfloat16
product of Q and K rounds otherwise than the op's reference kernel does, which the cap's tanh
carries to the output bits, and no target runs bfloat16 attention (ONNX Runtime has no such kernel).
Not rewritten: a cap and a factor that differ (`tanh(s / c) * d`), a cap that is not a positive
finite scalar, or a mask added before the cap (a -inf position would be capped to -c: not hidden).
"""

from __future__ import annotations

import math

from ir import Expr, relay
from ir.op.registry import make_call

from ..match import Match
from ..pattern import call, const_pat, pvars
from ..rule import rule, ruleset

__all__ = ["SOFTCAP"]

q, kt, v, mask = pvars("q kt v mask")


def _capped_pattern(masked: bool):
    scores = call("multiply", call("nn.matmul", q, kt, bind_attrs="qk"), const_pat("s"))
    capped = call("multiply", call("tanh", call("divide", scores, const_pat("c"))), const_pat("c2"))
    weights = call("nn.softmax", call("add", capped, mask) if masked else capped, bind_attrs="sm")
    return call("nn.matmul", weights, v, bind_attrs="pv")


def _capped(masked: bool):
    def build(m: Match) -> Expr | None:
        qk, pv, ndim = m["qk"], m["pv"], m.ndim("q")
        scale, cap, factor = m.scalar("s"), m.scalar("c"), m.scalar("c2")
        if (ndim < 3 or qk.transpose_a or qk.transpose_b or qk.out_dtype or pv.transpose_a or pv.transpose_b
                or pv.out_dtype or m["sm"].axis % ndim != ndim - 1 or not m.ndim("kt") == m.ndim("v") == ndim):
            return None
        if m.dtype("q") == "bfloat16" or scale is None or cap is None or cap != factor \
                or not (cap > 0 and math.isfinite(cap)):
            return None
        key = make_call("transpose", [m.expr("kt")], {"axes": [*range(ndim - 2), ndim - 1, ndim - 2]})
        args = [m.expr("q"), key, m.expr("v")] + ([m.expr("mask")] if masked else [])
        return make_call("nn.masked_attention" if masked else "nn.attention", args, {"scale": scale, "softcap": cap})
    return build


def _gemma2(masked: bool, factor: float = 50.0) -> Expr:
    """5 queries over 6 keys in 3 heads of 4, scores scaled by 0.5 and capped at 50 (`factor`: the
    multiplier after tanh), a causal mask."""
    query, key, value = (relay.var(n, shape=(2, 3, 5 if n == "q" else 6, 4)) for n in "qkv")
    scores = relay.multiply(relay.nn.matmul(query, relay.transpose(key, (0, 1, 3, 2))), relay.const(0.5))
    capped = relay.multiply(relay.tanh(relay.divide(scores, relay.const(50.0))), relay.const(factor))
    if masked:
        capped = relay.add(capped, relay.var("mask", shape=(1, 1, 5, 6)))
    return relay.nn.matmul(relay.nn.softmax(capped, axis=-1), value)


SOFTCAP = ruleset("softcap", [
    rule(f"attention-softcapped{'-masked' if masked else ''}", _capped_pattern(masked), _capped(masked),
         dtypes="float", exact=False, example=lambda s=masked: _gemma2(s),
         near_miss=lambda s=masked: _gemma2(s, factor=30.0))
    for masked in (False, True)
])
