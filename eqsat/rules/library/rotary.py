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

and the transposes cancel against the one that moves the heads (`simplify`).

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
    """`reshape(tile(expand_dims(expand_dims(table, 2), 4), reps), newshape)`: each angle's value
    twice in a row (`repeat_interleave`), attributes bound as `<name>1`, `<name>2`, `<name>t`, `<name>r`;
    not `tiled`: the copies made by `where(True, ..., carrier)` (dynamo's expand) instead."""
    spread = call("expand_dims", call("expand_dims", table, bind_attrs=f"{name}1"), bind_attrs=f"{name}2")
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


def _repeated_per_pair(m: Match, name: str, table: str, shape: tuple) -> bool:
    """The table `table` (B or 1, S, h) spread per pair over (.., S, 1 head axis, 2h) by its `_per_pair` match."""
    first, second = m[f"{name}1"], m[f"{name}2"]
    if (first.axis, first.num_newaxis, second.axis % 5, second.num_newaxis) != (2, 1, 4, 1):
        return False
    if f"{name}w" in m.constants:  # where(True, x, carrier): x broadcast to the carrier's (1, 1, 1, 1, 2)
        cond, carrier = m.const(f"{name}w"), m.const(f"{name}t")
        if cond.dtype != np.bool_ or not cond.all() or carrier.ndim > 5 \
                or (1,) * (5 - carrier.ndim) + carrier.shape != (1, 1, 1, 1, 2):
            return False
    elif list(m[f"{name}t"].reps) != [1, 1, 1, 1, 2]:
        return False
    spread = (*shape[:2], 1, shape[2], 2)
    merged = relay.op.get("reshape").relation([relay.TensorType(spread, m.dtype(table))], m[f"{name}r"])
    return tuple(merged.shape) == (*shape[:2], 1, 2 * shape[2])


def _interleaved(m: Match) -> Expr | None:
    shape = m.shape("x")
    rotary = shape[-1] if len(shape) == 4 else None
    if not isinstance(rotary, int) or rotary % 2:
        return None
    half = rotary // 2
    tables = [m.shape(n) for n in ("c", "s")]
    heads_ahead = (shape[0], shape[2], shape[1], shape[3])
    if not all(_fits(t, heads_ahead, half) for t in tables) or tables[0] != tables[1]:
        return None
    if not (_repeated_per_pair(m, "pc", "c", tables[0]) and _repeated_per_pair(m, "ps", "s", tables[1])):
        return None
    if not (_strided(m["so"], 1, rotary) and _strided(m["se"], 0, rotary) and _last_axis(m["rc"].axis, 5)):
        return None
    if any((m[e].axis % 5, m[e].num_newaxis) != (4, 1) for e in ("eo", "ee")):
        return None
    pairs = relay.op.get("reshape").relation([relay.TensorType((*shape[:3], half, 2), m.dtype("x"))], m["rr"])
    if tuple(pairs.shape) != tuple(shape):
        return None
    ahead = make_call("transpose", [m.expr("x")], {"axes": list(_HEADS_AHEAD)})
    rotated = make_call("nn.rotary_embedding", [ahead, m.expr("c"), m.expr("s")], {"interleaved": True})
    return make_call("transpose", [rotated], {"axes": list(_HEADS_AHEAD)})


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


def _gptj_example(pair_axis: int = 4, tiled: bool = True) -> Expr:
    """GPT-J's rotation of x (2, 5, 3, 8) (batch, tokens, heads, features) by tables (1, 5, 4), each
    angle repeated per pair by a tile (`tiled`) or a broadcast; `pair_axis=3`: repeated as halves
    instead (a near miss)."""
    data = relay.var("x", shape=(2, 5, 3, 8))

    def per_pair(table):
        spread = relay.expand_dims(relay.expand_dims(table, axis=2), axis=pair_axis)
        reps = [1, 1, 1, 1, 1]
        reps[pair_axis] = 2
        copies = relay.tile(spread, reps=reps) if tiled else relay.where(
            relay.const(np.array(True)), spread, relay.const(np.zeros(reps, np.float32)))
        return relay.reshape(copies, newshape=[1, 5, 1, 8])

    cos, sin = (per_pair(relay.var(n, shape=(1, 5, 4))) for n in ("c", "s"))
    odd = relay.expand_dims(relay.negative(relay.strided_slice(data, [1], [2**63 - 1], strides=[2], axes=[3])), axis=4)
    even = relay.expand_dims(relay.strided_slice(data, [0], [2**63 - 1], strides=[2], axes=[3]), axis=4)
    rotated = relay.reshape(relay.concatenate([odd, even], axis=-1), newshape=[0, 0, 3, -1])
    return relay.add(relay.multiply(data, cos), relay.multiply(rotated, sin))


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
    *(rule(f"rotary-embedding-interleaved{'' if tiled else '-expanded'}",
           call("add", call("multiply", x, _per_pair(c, "pc", tiled)),
                call("multiply", _every_two(), _per_pair(s, "ps", tiled))),
           _interleaved, dtypes="float", exact=False, example=lambda t=tiled: _gptj_example(tiled=t),
           near_miss=lambda t=tiled: _gptj_example(pair_axis=3, tiled=t))
      for tiled in (True, False)),
    rule("rotary-embedding-partial-behind",
         call("concatenate", tuple_pat(call("transpose", _rotated_ahead(), bind_attrs="to"),
                                       call("strided_slice", q, bind_attrs="sp")), bind_attrs="cc"),
         _partial_behind, dtypes="float", exact=False,
         example=lambda: _gptj_partial(4), near_miss=lambda: _gptj_partial(5)),
])
