"""Rotary position embedding (`nn.rotary_embedding`, ONNX Runtime's `RotaryEmbedding`) from the way
PyTorch models write it (`transformers`' `apply_rotary_pos_emb`), after import:

    t = cat(f, f)                                          f: (B or 1, S, h) angles, one per token and pair
    x * expand_dims(cos(t), 1) + cat(-x[..., h:], x[..., :h]) * expand_dims(sin(t), 1)
                                  -> nn.rotary_embedding(x, cos(f), sin(f))         x: (B, N, S, 2h)
    the halves as split(x, 2, -1)[1], [0] instead of slices: the same
    cos, sin as rows of constant caches: expand_dims(take(K, ids, axis=0), 1), K (M, 2h) with equal halves
                                  -> nn.rotary_embedding(x, take(K[:, :h], ids), take(L[:, :h], ids))
    cat(nn.rotary_embedding(q[..., :r], c, s), q[..., r:])
                                  -> nn.rotary_embedding(q, c, s)                   partial rotary (Phi-3)

GPT-J rotates interleaved pairs (`rotate_every_two`) of data laid out (B, S, N, r), before its heads
move ahead of the tokens, with each angle's table repeated per pair (`repeat_interleave`):

    x * P(c) + reshape(cat(expand_dims(-x[..., 1::2], 4), expand_dims(x[..., ::2], 4), -1), x's shape) * P(s)
        P(t) = reshape(tile(expand_dims(expand_dims(t, 2), 4), (1, 1, 1, 1, 2)), (..., r))    t: (B or 1, S, r/2)
                                  -> T(nn.rotary_embedding(T(x), c, s; interleaved))  T: transpose (0, 2, 1, 3)
    cat(T(nn.rotary_embedding(T(q[..., :r]), c, s)), q[..., r:])
                                  -> T(nn.rotary_embedding(T(q), c, s))             partial rotary (GPT-J)

and the transposes cancel against the one that moves the heads (`simplify`). Cohere and GLM rotate
interleaved pairs of data whose heads are already ahead (B, N, S, r), with no transposes:

    x * E(cos(P(f))) + every_two(x) * E(sin(P(f)))          Cohere: angles repeated per pair, E: head axis
    x * P(E(cos(cat(f, f)))[..., :r/2]) + every_two(x) * P(E(sin(cat(f, f)))[..., :r/2])     GLM
                                  -> nn.rotary_embedding(x, cos(f), sin(f); interleaved)

(P the per-pair repeat of the last axis; `fn(P(f))` is `P(fn(f))` element by element), their
tables cast as half-precision exports cast them (to float16, and in Cohere's back to float32).

`cos(cat(f, f))` is `cat(cos(f), cos(f))` element by element, so the op's per-token tables are
`cos(f)` and `sin(f)`, computed once for Q and K (and every layer) that share them; the angles `f`
stay the graph's (positions times the inverse frequencies, at any position). The rotation's
products and sum are the op's in the same order (the kernel may fuse a multiply-add: float
rounding). Not rewritten: tables whose halves are not one tensor (`cat(f, g)`: the kernel reads
one half-width row per pair), a scaled table (`cos(t) * a`, as long-context variants write), halves
split elsewhere than the middle, or a rotation of the other sign (`cat(x2, -x1)`); for GPT-J's
pairs, a table repeated as halves instead of per pair (tiled on another axis).
"""

from __future__ import annotations

import numpy as np

from ir import Expr, relay
from ir.op.registry import make_call
from ir.types import AnyDim

from ..match import Match
from ..pattern import call, const_pat, getitem, pvars, tuple_pat
from ..rule import UNDECIDED, rule, ruleset
from .exact import constant

__all__ = ["ROTARY"]

x, f, q, c, s, ids = pvars("x f q c s ids")
_TABLE = call("concatenate", tuple_pat(f, f), bind_attrs="tc")


def _table(fn: str, expand: str, cast: str | None = None):
    """`expand_dims(fn(cat(f, f)))`, with `cast` the attribute name of a cast between (half-precision
    models compute the angles in float32 and cast the tables to the data's dtype)."""
    table = call(fn, _TABLE)
    return call("expand_dims", call("cast", table, bind_attrs=cast) if cast else table, bind_attrs=expand)


_COS, _SIN = _table("cos", "ec"), _table("sin", "es")
_CAST_COS, _CAST_SIN = _table("cos", "ec", "kc"), _table("sin", "es", "ks")


def _last_axis(axis: int, ndim: int) -> bool:
    return axis % ndim == ndim - 1


def _slice_of_last_axis(attrs, ndim: int, size: int) -> tuple[int, int] | None:
    """(start, stop) of a unit-stride strided_slice of the last axis only (of length `size`), else None."""
    axes = list(range(len(attrs.begin))) if attrs.axes is None else list(attrs.axes)
    strides = list(attrs.strides or [1] * len(axes))
    if attrs.slice_mode != "end" or len(axes) != 1 or not _last_axis(axes[0], ndim) or strides != [1]:
        return None
    picked = range(size)[attrs.begin[0]:attrs.end[0]]
    return (picked.start, picked.stop) if len(picked) else None


def _fits(table: tuple, x_shape: tuple, half: int) -> bool:
    """A per-token table of shape (B or 1, S, half) for data (B, N, S, 2 half); a static length
    against a symbolic one (one table row broadcast over the tokens, say) is refused."""
    batch, seq = x_shape[0], x_shape[2]
    return (len(table) == 3 and table[-1] == half
            and (table[0] == 1 or table[0] == batch or not isinstance(batch, int))
            and (table[1] == seq or not (isinstance(seq, int) or isinstance(table[1], int))))


def _head_axis(m: Match) -> bool:
    return all(m[e].axis == 1 and m[e].num_newaxis == 1 for e in ("ec", "es"))


def _angle_tables(m: Match, x_shape: tuple, half: int) -> tuple[Expr, Expr] | None:
    """cos/sin read `cat(f, f)` on the last axis of f (B or 1, S, half), a head axis added at 1:
    the tables cos(f), sin(f), each cast as the match casts it (a cast of a concatenation is the
    concatenation of the casts)."""
    if not (_fits(m.shape("f"), x_shape, half) and _last_axis(m["tc"].axis, 3) and _head_axis(m)):
        return None
    angles = m.expr("f")
    tables = relay.cos(angles), relay.sin(angles)
    if "kc" in m.values:
        tables = tuple(relay.cast(t, m[k].dtype) for t, k in zip(tables, ("kc", "ks")))
    return tables


def _cache_tables(m: Match, x_shape: tuple, half: int) -> tuple[Expr, Expr] | None:
    """cos/sin gathered by `ids` from constant caches (M, 2 half) whose halves are equal: the tables
    gather the first halves."""
    if not _head_axis(m) or m["g1"] != m["g2"] or m["g1"].axis not in (0, -2) or m.ndim("ids") != 2:
        return None
    if not _fits((*m.shape("ids"), half), x_shape, half):
        return None
    tables = []
    for name in ("kc", "ks"):
        cache = m.const(name)
        if cache.ndim != 2 or cache.shape[1] != 2 * half or not np.array_equal(cache[:, :half], cache[:, half:]):
            return None
        tables.append(make_call("take", [constant(np.ascontiguousarray(cache[:, :half])), m.expr("ids")],
                                dict(m["g1"])))
    return tables[0], tables[1]


def _rotary(halves_ok, tables_of):
    """Builder of `nn.rotary_embedding` from a match of x's halves (`halves_ok`) and its tables."""
    def build(m: Match) -> Expr | None:
        shape = m.shape("x")
        head = shape[-1] if len(shape) == 4 else None
        if isinstance(head, AnyDim):
            return UNDECIDED  # the rewrites that type x may come later
        if not isinstance(head, int) or head % 2 or not _last_axis(m["rc"].axis, 4):
            return None
        half = head // 2
        tables = tables_of(m, shape, half) if halves_ok(m, half, head) else None
        if tables is None:
            return None
        return make_call("nn.rotary_embedding", [m.expr("x"), *tables], {"interleaved": False})
    return build


def _sliced_halves(m: Match, half: int, head: int) -> bool:
    return (_slice_of_last_axis(m["s1"], 4, head) == (0, half)
            and _slice_of_last_axis(m["s2"], 4, head) == (half, head))


def _split_halves(m: Match, half: int, head: int) -> bool:
    sections, axis = m["sp"].indices_or_sections, m["sp"].axis
    return _last_axis(axis, 4) and (sections == 2 or list(np.atleast_1d(sections)) == [half])


def _partial(m: Match) -> Expr | None:
    shape = m.shape("q")
    head = shape[-1] if len(shape) == 4 else None
    half = m.shape("c")[-1]
    r = 2 * half if isinstance(half, int) else None
    if not isinstance(head, int) or r is None or not _last_axis(m["cc"].axis, 4):
        return None
    if _slice_of_last_axis(m["sr"], 4, head) != (0, r) or _slice_of_last_axis(m["sp"], 4, head) != (r, head):
        return None
    return make_call("nn.rotary_embedding", [m.expr("q"), m.expr("c"), m.expr("s")], dict(m["re"]))


def _rope_example(split_at: int | None = None, second=None, sign: int = -1, scale: float | None = None,
                  partial: bool = False, split: bool = False, dtype: str = "float32") -> Expr:
    """transformers' `q * cos + rotate_half(q) * sin` on q (2, 3, 5, 8), angles (1, 5, 4); the
    keyword arguments make near misses: halves split elsewhere, other angles for the second half,
    the other sign, a scaled table; `partial`: only the first 4 of 8 features rotate; a `dtype`
    other than float32: q of that dtype, the float32 tables cast to it."""
    head = 4 if partial else 8
    half = head // 2
    data = relay.var("x", shape=(2, 3, 5, 8), dtype=dtype)
    xr = relay.strided_slice(data, [0], [head], axes=[3]) if partial else data
    angles = relay.var("f", shape=(1, 5, half))
    table = relay.concatenate([angles, angles if second is None else second], axis=-1)
    cos, sin = relay.cos(table), relay.sin(table)
    if dtype != "float32":
        cos, sin = relay.cast(cos, dtype), relay.cast(sin, dtype)
    if scale is not None:
        factor = relay.const(np.float32(scale))
        cos, sin = relay.multiply(cos, factor), relay.multiply(sin, factor)
    cut = half if split_at is None else split_at
    if split:
        parts = relay.split(xr, 2, axis=-1)
        first, last = relay.TupleGetItem(parts, 0), relay.TupleGetItem(parts, 1)
    else:
        first = relay.strided_slice(xr, [0], [cut], axes=[3])
        last = relay.strided_slice(xr, [cut], [2**63 - 1], axes=[3])
    rotated = (relay.concatenate([relay.negative(last), first], axis=-1) if sign < 0
               else relay.concatenate([last, relay.negative(first)], axis=-1))
    out = relay.add(relay.multiply(xr, relay.expand_dims(cos, 1)), relay.multiply(rotated, relay.expand_dims(sin, 1)))
    if partial:
        return relay.concatenate([out, relay.strided_slice(data, [head], [2**63 - 1], axes=[3])], axis=-1)
    return out


def _fused_partial(rest_from: int) -> Expr:
    """The first 4 of 8 features rotated, concatenated with the features from `rest_from` on."""
    data = relay.var("x", shape=(2, 3, 5, 8))
    tables = [relay.var(n, shape=(1, 5, 2)) for n in ("c", "s")]
    rotated = make_call("nn.rotary_embedding", [relay.strided_slice(data, [0], [4], axes=[3]), *tables],
                        {"interleaved": False})
    return relay.concatenate([rotated, relay.strided_slice(data, [rest_from], [8], axes=[3])], axis=-1)


def _rotate(cos, sin, split: bool = False):
    """x * cos + cat(-second half, first half) * sin, the halves sliced or split."""
    if split:
        halves = call("split", x, bind_attrs="sp")
        first, second = getitem(halves, 0), getitem(halves, 1)
    else:
        first, second = call("strided_slice", x, bind_attrs="s1"), call("strided_slice", x, bind_attrs="s2")
    rotated = call("concatenate", tuple_pat(call("negative", second), first), bind_attrs="rc")
    return call("add", call("multiply", x, cos), call("multiply", rotated, sin))


_CACHE_COS = call("expand_dims", call("take", const_pat("kc"), ids, bind_attrs="g1"), bind_attrs="ec")
_CACHE_SIN = call("expand_dims", call("take", const_pat("ks"), ids, bind_attrs="g2"), bind_attrs="es")


def _cache_example(equal_halves: bool = True) -> Expr:
    """The rotation of x (2, 3, 5, 8) by rows `ids` (1, 5) of constant caches (16, 8) (transformers'
    older `cos_cached[position_ids]`); `equal_halves=False`: caches whose halves differ."""
    angles = np.arange(16, dtype=np.float32)[:, None] * np.float32(0.3) ** np.arange(4, dtype=np.float32)
    table = np.concatenate([angles, angles if equal_halves else angles + 1], axis=-1)
    ids = relay.var("ids", shape=(1, 5), dtype="int64")
    data = relay.var("x", shape=(2, 3, 5, 8))
    cos, sin = (relay.expand_dims(relay.take(relay.const(fn(table)), ids, axis=0), 1) for fn in (np.cos, np.sin))
    rotated = relay.concatenate([relay.negative(relay.strided_slice(data, [4], [8], axes=[3])),
                                 relay.strided_slice(data, [0], [4], axes=[3])], axis=-1)
    return relay.add(relay.multiply(data, cos), relay.multiply(rotated, sin))

_HEADS_AHEAD = (0, 2, 1, 3)
"""(B, S, N, D) <-> (B, N, S, D): GPT-J rotates before its heads move ahead of the tokens."""


def _per_pair(table, name: str, tiled: bool):
    """`reshape(tile(expand_dims(table, -1), (1, .., 1, 2)), newshape)`: each value of `table` twice
    in a row (`repeat_interleave` of its last axis), attributes bound as `<name>1`, `<name>t`,
    `<name>r`; not `tiled`: the copies made by `where(True, ..., carrier)` (dynamo's expand) instead."""
    spread = call("expand_dims", table, bind_attrs=f"{name}1")
    copies = (call("tile", spread, bind_attrs=f"{name}t") if tiled
              else call("where", const_pat(f"{name}w"), spread, const_pat(f"{name}t")))
    return call("reshape", copies, bind_attrs=f"{name}r")


def _every_two():
    """`reshape(cat(expand_dims(-x[..., 1::2], 4), expand_dims(x[..., ::2], 4), -1), ...)` (`rotate_every_two`)."""
    odd = call("expand_dims", call("negative", call("strided_slice", x, bind_attrs="so")), bind_attrs="eo")
    even = call("expand_dims", call("strided_slice", x, bind_attrs="se"), bind_attrs="ee")
    return call("reshape", call("concatenate", tuple_pat(odd, even), bind_attrs="rc"), bind_attrs="rr")


def _strided(attrs, start: int, size: int) -> bool:
    """A stride-2 slice of the last axis (of length `size`) from `start` to the end."""
    axes = list(range(len(attrs.begin))) if attrs.axes is None else list(attrs.axes)
    if attrs.slice_mode != "end" or len(axes) != 1 or not _last_axis(axes[0], 4) or list(attrs.strides or []) != [2]:
        return False
    return range(size)[attrs.begin[0]:attrs.end[0]:2] == range(start, size, 2)


def _repeated_per_pair(m: Match, name: str, shape: tuple, dtype: str) -> bool:
    """`_per_pair`'s match `name` repeats each value of its table (`shape`, `dtype`) along its last
    axis: a new last axis of 2 merged into it."""
    rank = len(shape) + 1
    first = m[f"{name}1"]
    if (first.axis % rank, first.num_newaxis) != (rank - 1, 1):
        return False
    pair = (1,) * (rank - 1) + (2,)
    if f"{name}w" in m.constants:  # where(True, x, carrier): x broadcast to the carrier's (1, .., 1, 2)
        cond, carrier = m.const(f"{name}w"), m.const(f"{name}t")
        if cond.dtype != np.bool_ or not cond.all() or carrier.ndim > rank \
                or (1,) * (rank - carrier.ndim) + carrier.shape != pair:
            return False
    elif tuple(m[f"{name}t"].reps) != pair:
        return False
    merged = relay.op.get("reshape").relation([relay.TensorType((*shape, 2), dtype)], m[f"{name}r"])
    return tuple(merged.shape) == (*shape[:-1], 2 * shape[-1])


def _rotated_pairs(m: Match, shape: tuple) -> bool:
    """`_every_two`'s match rotates the interleaved pairs of data of `shape` (.., r) and restores its shape."""
    rotary = shape[-1]
    if not (_strided(m["so"], 1, rotary) and _strided(m["se"], 0, rotary) and _last_axis(m["rc"].axis, 5)):
        return False
    if any((m[e].axis % 5, m[e].num_newaxis) != (4, 1) for e in ("eo", "ee")):
        return False
    pairs = relay.op.get("reshape").relation([relay.TensorType((*shape[:3], rotary // 2, 2), m.dtype("x"))], m["rr"])
    return tuple(pairs.shape) == tuple(shape)


def _interleaved(m: Match) -> Expr | None:
    """GPT-J's: data (B, S, N, r), tables c, s (B or 1, S, r/2) with a head axis added, per pair."""
    shape = m.shape("x")
    rotary = shape[-1] if len(shape) == 4 else None
    if not isinstance(rotary, int) or rotary % 2:
        return None
    half = rotary // 2
    table = m.shape("c")
    heads_ahead = (shape[0], shape[2], shape[1], shape[3])
    if not _fits(table, heads_ahead, half) or m.shape("s") != table:
        return None
    if any((m[h].axis % 4, m[h].num_newaxis) != (2, 1) for h in ("hc", "hs")):
        return None
    spread = (*table[:2], 1, half)
    if not all(_repeated_per_pair(m, n, spread, m.dtype("c")) for n in ("pc", "ps")) or not _rotated_pairs(m, shape):
        return None
    ahead = make_call("transpose", [m.expr("x")], {"axes": list(_HEADS_AHEAD)})
    rotated = make_call("nn.rotary_embedding", [ahead, m.expr("c"), m.expr("s")], {"interleaved": True})
    return make_call("transpose", [rotated], {"axes": list(_HEADS_AHEAD)})


def _interleaved_ahead(m: Match) -> Expr | None:
    """Data (B, N, S, r) whose heads are already ahead, each table `fn(P(f))` (Cohere) or
    `P(fn(cat(f, f))[..., :r/2])` (GLM), with `P` the per-pair repeat, f the angles (B or 1, S, r/2)
    and `fn` cos or sin. Either is `P(fn(f))` element by element: the op's tables are cos(f), sin(f)."""
    shape = m.shape("x")
    rotary = shape[-1] if len(shape) == 4 else None
    if not isinstance(rotary, int) or rotary % 2 or not _head_axis(m):
        return None
    half = rotary // 2
    angles = m.shape("f")
    if not _fits(angles, shape, half):
        return None
    if "tc" in m.values:  # GLM's: the first half of the table, its head axis added, repeated
        halves = all(_slice_of_last_axis(m[h], 4, rotary) == (0, half) for h in ("hc", "hs"))
        if not (halves and _last_axis(m["tc"].axis, 3)):
            return None
        angles = (angles[0], 1, *angles[1:])
    if not all(_repeated_per_pair(m, n, angles, m.dtype("f")) for n in ("pc", "ps")) or not _rotated_pairs(m, shape):
        return None
    tables = []
    for table, k in ((relay.cos(m.expr("f")), "c"), (relay.sin(m.expr("f")), "s")):
        for cast in (f"c{k}", f"o{k}"):  # the match's casts, in its order
            table = relay.cast(table, m[cast].dtype) if cast in m.values else table
        tables.append(table)
    return make_call("nn.rotary_embedding", [m.expr("x"), *tables], {"interleaved": True})


def _ahead_tables(tiled: bool, halved: bool, casts: int = 0) -> tuple:
    """The cos and sin patterns of `_interleaved_ahead`: Cohere's, or GLM's (`halved`); with `casts`
    casts of the table, bound `c<k>` then `o<k>` (half-precision models compute it in float32, cast it
    to their dtype, and Cohere's rotates in float32: the table cast back)."""
    def cast(table, name: str, at: int):
        return call("cast", table, bind_attrs=name) if casts >= at else table
    if halved:
        return tuple(_per_pair(call("strided_slice", call("expand_dims", cast(call(fn, _TABLE), f"c{k}", 1),
                                                          bind_attrs=f"e{k}"), bind_attrs=f"h{k}"), f"p{k}", tiled)
                     for fn, k in (("cos", "c"), ("sin", "s")))
    return tuple(cast(call("expand_dims", cast(call(fn, _per_pair(f, f"p{k}", tiled)), f"c{k}", 1), bind_attrs=f"e{k}"),
                      f"o{k}", 2) for fn, k in (("cos", "c"), ("sin", "s")))


def _interleaved_rule(name: str, cos, sin, build, example, near_miss):
    """`x * cos + rotate_every_two(x) * sin` -> `build`."""
    return rule(name, call("add", call("multiply", x, cos), call("multiply", _every_two(), sin)), build,
                dtypes="float", exact=False, example=example, near_miss=near_miss)


def _rotated_ahead():
    """`nn.rotary_embedding(transpose(q[..., :r]), c, s)`: the rotated part moved by `_HEADS_AHEAD`."""
    ahead = call("transpose", call("strided_slice", q, bind_attrs="sr"), bind_attrs="ti")
    return call("nn.rotary_embedding", ahead, c, s, bind_attrs="re")


def _partial_behind(m: Match) -> Expr | None:
    """`_partial` with the rotation's data and result moved by `_HEADS_AHEAD` (GPT-J's layout)."""
    if any(tuple(m[t].axes or ()) != _HEADS_AHEAD for t in ("ti", "to")):
        return None
    shape = m.shape("q")
    head, half = shape[-1] if len(shape) == 4 else None, m.shape("c")[-1]
    if not isinstance(head, int) or not isinstance(half, int) or not _last_axis(m["cc"].axis, 4):
        return None
    rotary = 2 * half
    if _slice_of_last_axis(m["sr"], 4, head) != (0, rotary) or _slice_of_last_axis(m["sp"], 4, head) != (rotary, head):
        return None
    ahead = make_call("transpose", [m.expr("q")], {"axes": list(_HEADS_AHEAD)})
    rotated = make_call("nn.rotary_embedding", [ahead, m.expr("c"), m.expr("s")], dict(m["re"]))
    return make_call("transpose", [rotated], {"axes": list(_HEADS_AHEAD)})


def _repeat_example(table: Expr, pair_axis: int, tiled: bool, newshape: list[int], dtype: str = "float32") -> Expr:
    """`table` (of `dtype`) with a new axis of 2 at `pair_axis` (a tile, or a broadcast when not
    `tiled`), reshaped to `newshape`: each value repeated per pair when `pair_axis` is the last."""
    spread = relay.expand_dims(table, axis=pair_axis)
    reps = [1] * (len(newshape) + 1)
    reps[pair_axis] = 2
    copies = relay.tile(spread, reps=reps) if tiled else relay.where(
        relay.const(np.array(True)), spread, relay.const(np.zeros(reps, dtype)))
    return relay.reshape(copies, newshape=newshape)


def _every_two_example(data: Expr, newshape: list[int]) -> Expr:
    """`rotate_every_two` of (.., 8) data: pairs (x0, x1) -> (-x1, x0)."""
    odd = relay.expand_dims(relay.negative(relay.strided_slice(data, [1], [2**63 - 1], strides=[2], axes=[3])), axis=4)
    even = relay.expand_dims(relay.strided_slice(data, [0], [2**63 - 1], strides=[2], axes=[3]), axis=4)
    return relay.reshape(relay.concatenate([odd, even], axis=-1), newshape=newshape)


def _gptj_example(pair_axis: int = 4, tiled: bool = True) -> Expr:
    """GPT-J's rotation of x (2, 5, 3, 8) (batch, tokens, heads, features) by tables (1, 5, 4), each
    angle repeated per pair by a tile (`tiled`) or a broadcast; `pair_axis=3`: repeated as halves
    instead (a near miss)."""
    data = relay.var("x", shape=(2, 5, 3, 8))
    cos, sin = (_repeat_example(relay.expand_dims(relay.var(n, shape=(1, 5, 4)), axis=2), pair_axis, tiled,
                                [1, 5, 1, 8]) for n in ("c", "s"))
    return relay.add(relay.multiply(data, cos), relay.multiply(_every_two_example(data, [0, 0, 3, -1]), sin))


def _ahead_example(pair_axis: int | None = None, tiled: bool = True, halved: bool = False, casts: int = 0) -> Expr:
    """The rotation of x (2, 3, 5, 8) (batch, heads, tokens, features) by angles f (1, 5, 4) repeated
    per pair: before cos and sin (Cohere), or (`halved`) cos and sin of `cat(f, f)` given a head
    axis, their first halves repeated (GLM); `pair_axis` one before the last: repeated as halves
    instead (a near miss). `casts`: the tables cast to float16 (1), x float16 then; and back to
    float32 (2, Cohere's half-precision model rotating in float32)."""
    data = relay.var("x", shape=(2, 3, 5, 8), dtype="float16" if casts == 1 else "float32")
    angles = relay.var("f", shape=(1, 5, 4))

    def cast(table: Expr, at: int, dtype: str) -> Expr:
        return relay.cast(table, dtype) if casts >= at else table
    if halved:
        pair_axis = 4 if pair_axis is None else pair_axis + 1
        full = relay.concatenate([angles, angles], axis=-1)
        cos, sin = (_repeat_example(relay.strided_slice(relay.expand_dims(cast(fn(full), 1, "float16"), axis=1),
                                                        [0], [4], axes=[3]), pair_axis, tiled, [1, 1, -1, 8],
                                    "float16" if casts else "float32")
                    for fn in (relay.cos, relay.sin))
    else:
        table = _repeat_example(angles, 3 if pair_axis is None else pair_axis, tiled, [1, -1, 8])
        cos, sin = (cast(relay.expand_dims(cast(fn(table), 1, "float16"), axis=1), 2, "float32")
                    for fn in (relay.cos, relay.sin))
    return relay.add(relay.multiply(data, cos), relay.multiply(_every_two_example(data, [0, 3, 0, 8]), sin))


def _gptj_partial(rest_from: int) -> Expr:
    """The first 4 of 8 features of (2, 5, 3, 8) data rotated in the heads-ahead layout and moved back,
    concatenated with the features from `rest_from` on."""
    data = relay.var("x", shape=(2, 5, 3, 8))
    tables = [relay.var(n, shape=(1, 5, 2)) for n in ("c", "s")]
    ahead = relay.transpose(relay.strided_slice(data, [0], [4], axes=[3]), _HEADS_AHEAD)
    rotated = make_call("nn.rotary_embedding", [ahead, *tables], {"interleaved": True})
    rest = relay.strided_slice(data, [rest_from], [8], axes=[3])
    return relay.concatenate([relay.transpose(rotated, _HEADS_AHEAD), rest], axis=-1)


ROTARY = ruleset("rotary", [
    rule("rotary-embedding", _rotate(_COS, _SIN), _rotary(_sliced_halves, _angle_tables), dtypes="float", exact=False,
         example=_rope_example,
         near_miss=[lambda: _rope_example(second=relay.var("g", shape=(1, 5, 4))), lambda: _rope_example(sign=1),
                    lambda: _rope_example(split_at=3), lambda: _rope_example(scale=0.5)]),
    rule("rotary-embedding-cast", _rotate(_CAST_COS, _CAST_SIN), _rotary(_sliced_halves, _angle_tables),
         dtypes="float", exact=False, example=lambda: _rope_example(dtype="float16"),
         near_miss=lambda: _rope_example(dtype="float16", sign=1)),
    rule("rotary-embedding-split", _rotate(_COS, _SIN, split=True), _rotary(_split_halves, _angle_tables),
         dtypes="float", exact=False, example=lambda: _rope_example(split=True),
         near_miss=lambda: _rope_example(split=True, second=relay.var("g", shape=(1, 5, 4)))),
    rule("rotary-embedding-cache", _rotate(_CACHE_COS, _CACHE_SIN), _rotary(_sliced_halves, _cache_tables),
         dtypes="float", exact=False, example=_cache_example, near_miss=lambda: _cache_example(equal_halves=False)),
    rule("rotary-embedding-partial",
         call("concatenate", tuple_pat(call("nn.rotary_embedding", call("strided_slice", q, bind_attrs="sr"), c, s,
                                            bind_attrs="re"),
                                       call("strided_slice", q, bind_attrs="sp")), bind_attrs="cc"),
         _partial, dtypes="float", exact=False,
         example=lambda: _fused_partial(4), near_miss=lambda: _fused_partial(5)),
    *(_interleaved_rule(f"rotary-embedding-interleaved{'' if tiled else '-expanded'}",
                        *(_per_pair(call("expand_dims", t, bind_attrs=f"h{k}"), f"p{k}", tiled)
                          for t, k in ((c, "c"), (s, "s"))),
                        _interleaved, lambda t=tiled: _gptj_example(tiled=t),
                        lambda t=tiled: _gptj_example(pair_axis=3, tiled=t))
      for tiled in (True, False)),
    *(_interleaved_rule(f"rotary-embedding-interleaved-ahead{'-halved' if halved else ''}{'' if tiled else '-expanded'}"
                        f"{('', '-cast', '-cast-twice')[casts]}",
                        *_ahead_tables(tiled, halved, casts), _interleaved_ahead,
                        lambda t=tiled, h=halved, c=casts: _ahead_example(tiled=t, halved=h, casts=c),
                        lambda t=tiled, h=halved, c=casts: _ahead_example(pair_axis=2, tiled=t, halved=h, casts=c))
      for halved in (False, True) for tiled in (True, False) for casts in ((0, 1) if halved else (0, 1, 2))),
    rule("rotary-embedding-partial-behind",
         call("concatenate", tuple_pat(call("transpose", _rotated_ahead(), bind_attrs="to"),
                                       call("strided_slice", q, bind_attrs="sp")), bind_attrs="cc"),
         _partial_behind, dtypes="float", exact=False,
         example=lambda: _gptj_partial(4), near_miss=lambda: _gptj_partial(5)),
])
