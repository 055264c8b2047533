"""Grouped- and multi-query attention: the attention op takes K and V with their own (fewer) heads.

`transformers`' `repeat_kv` copies each KV head to its group of query heads before attention:

    reshape(broadcast(expand_dims(k, axis=-3), (..., Hkv, n, S, D)), (..., Hkv * n, S, D))

which the import writes `reshape(where(True, expand_dims(k, 2), zeros(1, 1, n, 1, 1)), ...)` (TorchScript,
and dynamo's run-time shapes once `shape_values` makes them static). Query head h then reads KV
head h // n, which is the op's own reading of K and V with fewer heads (`nn.attention`'s
relation), so

    nn.masked_attention(q, repeat(k, n), repeat(v, n), mask) -> nn.masked_attention(q, k, v, mask)

and the same without a mask. Both K and V must be repeated by the same n from the same number of
heads (a copy of one and not the other is left alone). The op computes the copy's values (a
gather of the head axis where a kernel has no grouped form), so the rule is exact.
"""

from __future__ import annotations

import numpy as np

from ir import Expr, relay
from ir.op.registry import make_call
from ir.op.shapes import known
from ir.types import AnyDim

from ..match import Match
from ..pattern import call, const_pat, pvars
from ..rule import UNDECIDED, rule, ruleset

__all__ = ["GROUPED_ATTENTION"]

q, k, v, mask = pvars("q k v mask")


def _repeat(data, name: str):
    """`reshape(where(True, expand_dims(data), carrier))`, attributes bound as `e<name>`, `r<name>`."""
    spread = call("where", const_pat(f"t{name}"), call("expand_dims", data, bind_attrs=f"e{name}"),
                  const_pat(f"c{name}"))
    return call("reshape", spread, bind_attrs=f"r{name}")


def _copies(m: Match, name: str) -> int | None:
    """How many times the repeat bound to `name` copies each head of its data (D), or None where it
    is not `repeat_kv`'s: an axis added before the sequence axis, broadcast to n by the carrier on
    that axis only, and the (..., H, n, S, D) result merged to (..., H * n, S, D)."""
    shape = m.shape(name)
    ndim = len(shape)
    added, cond, carrier = m[f"e{name}"], m.const(f"t{name}"), m.const(f"c{name}")
    if ndim < 3 or added.axis % (ndim + 1) != ndim - 2 or added.num_newaxis != 1:
        return None
    if cond.dtype != np.bool_ or not cond.all() or carrier.ndim > ndim + 1:
        return None
    padded = (1,) * (ndim + 1 - carrier.ndim) + carrier.shape
    copies = padded[ndim - 2]
    if copies < 2 or any(c != 1 for i, c in enumerate(padded) if i != ndim - 2):
        return None
    spread = (*shape[:-2], copies, *shape[-2:])
    try:
        merged = relay.op.get("reshape").relation([relay.TensorType(spread, m.dtype(name))], m[f"r{name}"]).shape
    except Exception:  # noqa: BLE001 - a target the spread value cannot take
        return None
    heads = shape[-3]
    want = (*shape[:-3], heads * copies if known(heads) else None, *shape[-2:])
    return copies if known(heads) and tuple(merged) == want else None


def _grouped(masked: bool):
    def build(m: Match):
        if any(isinstance(d, AnyDim) for n in ("q", "k", "v") for d in m.shape(n)[-3:-2]) or \
                any(isinstance(d, AnyDim) for n in ("k", "v") for d in m.shape(n)):
            return UNDECIDED  # the heads or the lengths may still be typed by later rewrites
        copies = _copies(m, "k")
        if copies is None or _copies(m, "v") != copies or m.shape("k")[-3] != m.shape("v")[-3]:
            return None
        if m.shape("q")[-3] != m.shape("k")[-3] * copies:
            return None
        args = [m.expr("q"), m.expr("k"), m.expr("v")] + ([m.expr("mask")] if masked else [])
        return make_call("nn.masked_attention" if masked else "nn.attention", args, dict(m["a"]))
    return build


def _example(masked: bool, copies_v: int = 2) -> Expr:
    """4 query heads over 2 KV heads, each KV head copied as `repeat_kv` does (`copies_v`: V's)."""
    query = relay.var("q", shape=(2, 4, 5, 8))
    kv = [relay.var(n, shape=(2, 2, 6, 8)) for n in "kv"]
    copied = []
    for data, copies in zip(kv, (2, copies_v)):
        carrier = relay.const(np.zeros((1, 1, copies, 1, 1), np.float32))
        spread = relay.where(relay.const(np.array(True)), relay.expand_dims(data, axis=2), carrier)
        copied.append(relay.reshape(spread, newshape=[0, 2 * copies, -1, 8]))
    if not masked:
        return relay.nn.attention(query, *copied, scale=0.25)
    return relay.nn.masked_attention(query, *copied, relay.var("mask", shape=(2, 1, 5, 6)), scale=0.25,
                                     nan_rows="zero")


def _near_miss(masked: bool) -> Expr:
    """V's copies added before its head axis: query head h reads V head h % 2 (tiled, not grouped)."""
    query = relay.var("q", shape=(2, 4, 5, 8))
    key, value = (relay.var(n, shape=(2, 2, 6, 8)) for n in "kv")
    true = relay.const(np.array(True))
    spread_k = relay.where(true, relay.expand_dims(key, axis=2), relay.const(np.zeros((1, 1, 2, 1, 1), np.float32)))
    spread_v = relay.where(true, relay.expand_dims(value, axis=1), relay.const(np.zeros((1, 2, 1, 1, 1), np.float32)))
    args = [query, relay.reshape(spread_k, newshape=[0, 4, -1, 8]), relay.reshape(spread_v, newshape=[0, 4, -1, 8])]
    if not masked:
        return relay.nn.attention(*args, scale=0.25)
    return relay.nn.masked_attention(*args, relay.var("mask", shape=(2, 1, 5, 6)), scale=0.25)


GROUPED_ATTENTION = ruleset("grouped-attention", [
    rule(f"grouped-{op.split('.')[1].replace('_', '-')}",
         call(op, q, _repeat(k, "k"), _repeat(v, "v"), *([mask] if masked else []), bind_attrs="a"),
         _grouped(masked), dtypes="float",
         example=lambda s=masked: _example(s), near_miss=lambda s=masked: _near_miss(s))
    for op, masked in (("nn.attention", False), ("nn.masked_attention", True))
])
