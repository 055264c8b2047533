"""A decode step's attention over its key/value cache (`nn.cached_attention`, ONNX `Attention` with
`past_key`/`past_value` and `present_key`/`present_value`).

A decoder exported with a cache (`transformers`' `DynamicCache`) concatenates each layer's past
keys and values with the new tokens' on the sequence axis, attends over the result, and returns
the concatenations as the present cache:

    nn.masked_attention(q, K, V, mask)   K = concatenate((pk, k), -2), V = concatenate((pv, v), -2)
        -> cached_attention(q, k, v, pk, pv, mask)[0]
    K -> cached_attention(...)[1],  V -> cached_attention(...)[2]

a multi-pattern rule whose three roots (the attention and both concatenations) become the op's
three outputs, so the present cache a graph returns is the kernel's. Grouped-query K/V (fewer
heads) stay as they are (`grouped_attention` folds `repeat_kv`'s copies of the concatenations
first). The rotary embedding of q and k reads the positions the export computes (the past length
plus the token's index), outside the op. The op is the spelled-out concatenations and attention
(its reference kernel computes exactly them), so the rule is exact in every float dtype.
Not rewritten: a concatenation on another axis than the sequence (heads, head size), or attention
without a mask (no export writes it with a cache).

TorchScript's export reads each past key through a concatenation of it alone, `concatenate((pk,))`,
which is the tensor itself (a copy): `single-concatenation` removes it so the cache is the op's input.
"""

from __future__ import annotations

from ir import Expr, relay
from ir.op.registry import make_call

from ..match import Match
from ..pattern import call, pvars, tuple_pat
from ..rule import rule, ruleset

__all__ = ["KV_CACHE"]

q, k, v, pk, pv, mask, x = pvars("q k v pk pv mask x")
_KEYS = call("concatenate", tuple_pat(pk, k), bind_attrs="ck")
_VALUES = call("concatenate", tuple_pat(pv, v), bind_attrs="cv")


def _on_sequence_axis(m: Match) -> bool:
    """Both concatenations run along the second-to-last axis, and the roots are those in the attention."""
    ndim = m.ndim("k")
    return all(m[a].axis % ndim == ndim - 2 and m[a] == m[f"{a}2"] for a in ("ck", "cv"))


def _cached(m: Match) -> tuple[Expr, Expr, Expr]:
    args = [m.expr(n) for n in ("q", "k", "v", "pk", "pv", "mask")]
    fused = make_call("nn.cached_attention", args, dict(m["a"]))
    return fused[0], fused[1], fused[2]


def _decode_step(axis: int = -2) -> Expr:
    """4 query heads over caches grown along `axis`: the sequence (-2: 3 new tokens after 5 cached, 2
    KV heads), or the heads (1: 2 + 2 heads of 3 tokens, a near miss)."""
    cached = 5 if axis == -2 else 3
    caches = [relay.concatenate([relay.var(f"p{n}", shape=(2, 2, cached, 8)), relay.var(n, shape=(2, 2, 3, 8))],
                                axis=axis) for n in "kv"]
    length = cached + 3 if axis == -2 else 3
    attended = relay.nn.masked_attention(relay.var("q", shape=(2, 4, 3, 8)), *caches,
                                         relay.var("mask", shape=(2, 1, 3, length)), scale=0.25, nan_rows="zero")
    return relay.Tuple([attended, *caches])


def _single(fields: int = 1) -> Expr:
    """A concatenation of `fields` copies of one (2, 3) tensor on its first axis."""
    data = relay.var("x", shape=(2, 3))
    return relay.concatenate([data] * fields, axis=0)


KV_CACHE = ruleset("kv-cache", [
    rule("single-concatenation", call("concatenate", tuple_pat(x)), x, example=_single,
         near_miss=lambda: _single(2)),
    rule("cached-attention",
         (call("nn.masked_attention", q, _KEYS, _VALUES, mask, bind_attrs="a"),
          call("concatenate", tuple_pat(pk, k), bind_attrs="ck2"),
          call("concatenate", tuple_pat(pv, v), bind_attrs="cv2")),
         _cached, when=_on_sequence_axis, dtypes="float",
         example=_decode_step, near_miss=lambda: _decode_step(axis=1)),
])
