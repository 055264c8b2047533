"""Shape values known in the e-graph: `dyn.reshape` / `dyn.expand` whose target is computed from
tensors' shapes become static `reshape` / `where(True, x, zeros)` (an expand of static axes only).

Exporters compute a target shape from `Shape` of a value whose type, at import, had unknown
dimensions (`Any`); once the rules type that value (a fused op's relation says more than the
spelled-out ops did), some e-node of the target's class reads the shape of a typed tensor:

    concatenate((reshape(take(shape_of(y), 0), [1]), [2], [2], expand_dims(take(shape_of(y), 1), 0), [16]))
        = (batch, 2, 2, seq, 16)                            y: Tensor[(batch, seq, ...)]

`shape_value` evaluates such a class over the symbolic dimensions (shape_of, take, reshape,
expand_dims, concatenate, strided_slice, cast, add (a cache's past plus the new length), and
TorchScript's `where(x == -1, 1, x)`), trying each e-node of a class. A target that evaluates is
a static one:

    dyn.reshape(x, t) -> reshape(x, newshape)    each entry an int, a copy (0) of x's same symbolic
                                                 dimension at that position, or one inferred (-1)
    dyn.expand(x, t)  -> where(True, x, zeros(c)) where t only grows axes of x of length 1 to a
                                                 static length c (x itself where it grows none)
    dyn.reshape(transpose(dyn.reshape(x, (-1, S, D)), (0, 2, 1)), (A, B, D, S))
                      -> transpose(x, (0, 1, 3, 2))  x (A, B, S, D): dynamo's K^T of a 4-D product

A class keeps the type it was made with, so the shape of x is the most precise one its e-nodes'
relations give over their operands' (`precise_shape`: a fused op may know what the spelled-out
ops did not; a concatenation reads its tuple's fields so, a tuple item its tuple's, and
`arange(0, n, 1)` is n long). Where the target or the shape does not evaluate yet, the rule
answers `UNDECIDED` and the runner asks again after the next change (the rewrites that type it
may come later).

At run time a symbolic entry has the size it names; only a zero-length dimension read by a
`dyn.reshape` without `allowzero` (which copies the input's dimension there) differs, in the
shape of an empty result. Values: each rule is a relayout (exact, any dtype).
"""

from __future__ import annotations

from typing import Any as AnyValue

import numpy as np

from ir import Expr, relay
from ir.dtype_info import numpy_dtype
from ir.op.registry import make_call
from ir.op.shapes import known
from ir.types import Any, AnyDim, TensorType, TupleType

from ...egraph.egraph import EGraph
from ...egraph.terms import Handle, Kind
from ..match import Match
from ..pattern import call, pvars
from ..rule import UNDECIDED, rule, ruleset
from .exact import constant

__all__ = ["SHAPE_VALUES", "precise_shape", "shape_value"]

x, t, t2 = pvars("x t t2")
_DEPTH = 16


def _list(egraph: EGraph, nodes, handle: Handle) -> list[Handle] | None:
    """The handles of a cons list class."""
    out: list[Handle] = []
    for _ in range(64):
        terms = nodes.get(egraph.canonical(handle), ())
        term = next((n for n in terms if n.kind in (Kind.CONS, Kind.NIL)), None)
        if term is None:
            return None
        if term.kind is Kind.NIL:
            return out
        out.append(term.children[0])
        handle = term.children[1]
    return None


def _equal(a, b) -> bool | None:
    """Whether two entries are equal: None where it depends on a size's run-time value."""
    if known(a) and known(b):
        return int(a) == int(b)
    if a == b:
        return True
    other = b if known(b) else a if known(a) else None
    return False if other is not None and int(other) < 0 else None  # a size is never negative


def _call_value(egraph: EGraph, nodes, op: str, attrs, args: tuple[Handle, ...], depth: int) -> np.ndarray | None:
    if op == "shape_of":
        shape = _class_shape(egraph, nodes, args[0])
        if shape is None or any(isinstance(d, AnyDim) for d in shape):
            return None
        return np.array(list(shape) + [None], dtype=object)[:-1]
    values = [_value(egraph, nodes, a, depth - 1) for a in args if op != "concatenate"]
    if op != "concatenate" and any(v is None for v in values):
        return None
    if op == "cast" and attrs.dtype in ("int64", "int32"):
        return values[0]
    if op == "take" and attrs.axis in (0, None) and values[1].ndim == 0 and known(values[1].item()):
        data = values[0].reshape(-1) if attrs.axis is None else values[0]
        if values[0].ndim != 1:
            return None
        out = np.empty((), dtype=object)
        out[()] = data[int(values[1].item())]
        return out
    if op == "reshape" and values[0].ndim <= 1 and list(attrs.newshape) in ([values[0].size], [-1]):
        return values[0].reshape(-1)
    if op == "expand_dims" and values[0].ndim == 0 and attrs.axis in (0, -1) and attrs.num_newaxis == 1:
        return values[0].reshape(1)
    if op == "strided_slice" and values[0].ndim == 1 and list(attrs.axes or [0]) == [0] and attrs.slice_mode == "end":
        return values[0][slice(attrs.begin[0], attrs.end[0], (attrs.strides or [1])[0])]
    if op == "add" and all(v.dtype == object for v in values):  # sizes summed (a past and a new length)
        total = np.empty(np.broadcast_shapes(*(v.shape for v in values)), dtype=object)
        total[...] = values[0] + values[1]  # a 0-d sum is the size itself, not an array
        return total
    if op == "equal":
        a, b = np.broadcast_arrays(*values)
        out = [_equal(p, q) for p, q in zip(a.reshape(-1), b.reshape(-1))]
        return None if None in out else np.array(out, dtype=object).reshape(a.shape)
    if op == "where":
        cond, a, b = np.broadcast_arrays(*values)
        return np.where(cond.astype(bool), a, b)
    if op == "concatenate" and attrs.axis == 0:
        tuples = [n for n in nodes.get(egraph.canonical(args[0]), ()) if n.kind is Kind.TUPLE]
        fields = _list(egraph, nodes, tuples[0].children[0]) if tuples else None
        parts = [_value(egraph, nodes, f, depth - 1) for f in fields or ()]
        if fields is None or any(p is None or p.ndim != 1 for p in parts):
            return None
        return np.concatenate(parts)
    return None


def _value(egraph: EGraph, nodes, handle: Handle, depth: int, path: frozenset = frozenset()) -> np.ndarray | None:
    """The value of a class: the first of its e-nodes that evaluates, never through a class on
    `path` (a class holds e-nodes that read itself, e.g. `reshape(c, [-1])` of a 1-D `c`)."""
    handle = egraph.canonical(handle)
    if depth <= 0 or handle in _PATH:
        return None
    _PATH.add(handle)
    try:
        return _first_value(egraph, nodes, handle, depth)
    finally:
        _PATH.discard(handle)


_PATH: set[Handle] = set()
"""the classes being evaluated (one evaluation at a time: rules fire in one thread)."""


def _first_value(egraph: EGraph, nodes, handle: Handle, depth: int) -> np.ndarray | None:
    for term in nodes.get(handle, ()):
        if term.kind is Kind.CONST:
            data = np.asarray(egraph.constants[term.payload[0]].data)
            if data.dtype.kind in "iub" and data.ndim <= 1:
                return data.astype(object) if data.dtype.kind != "b" else data
        elif term.kind is Kind.CALL:
            op, key = term.payload
            try:
                value = _call_value(egraph, nodes, op, egraph.attrs[key], term.children, depth)
            except (AttributeError, IndexError, TypeError, ValueError):  # an operand this does not evaluate
                value = None
            if value is not None:
                return value
    return None


def precise_shape(m: Match, name: str) -> tuple:
    """The shape of the class bound to `name` with as few `Any` dimensions as its e-nodes tell."""
    shape = _class_shape(m.egraph, m.egraph.class_nodes(), m[name])
    return m.shape(name) if shape is None else shape


def _class_shape(egraph: EGraph, nodes, handle: Handle, depth: int = _DEPTH) -> tuple | None:
    """A class keeps the type it was made with, while an e-node a rule added (a fused op) may type
    its value more precisely from its operands (every e-node of a class computes the same value):
    the shape with the fewest `Any` dimensions among its e-nodes' relations, applied to their
    operands' shapes found the same way (`depth` classes down; memoized per snapshot)."""
    handle = egraph.canonical(handle)
    ty = egraph.type_of(handle)
    if not isinstance(ty, TensorType):
        return None
    best = tuple(ty.shape)
    if not any(isinstance(d, AnyDim) for d in best) or depth <= 0 or handle in _SHAPE_PATH:
        return best
    cache = egraph.snapshot_cache.setdefault("precise-shapes", {})
    if handle in cache:
        return cache[handle]
    _SHAPE_PATH.add(handle)
    try:
        for out in _term_types(egraph, nodes, handle, depth):
            if isinstance(out, TensorType) and len(out.shape) == len(best) and _fewer_any(out.shape, best):
                best = tuple(out.shape)
    finally:
        _SHAPE_PATH.discard(handle)
    cache[handle] = best
    return best


_SHAPE_PATH: set[Handle] = set()


def _term_types(egraph: EGraph, nodes, handle: Handle, depth: int):
    """The type each call or tuple item of the class gives its value from its operands' precise types."""
    for term in nodes.get(handle, ()):
        if term.kind is Kind.GETITEM:
            whole = _precise_type(egraph, nodes, term.children[0], depth - 1)
            if isinstance(whole, TupleType):
                yield whole.fields[term.payload[0]]
        elif term.kind is Kind.CALL:
            op, key = term.payload
            types = [_precise_type(egraph, nodes, c, depth - 1) for c in term.children]
            try:
                yield _counted(egraph, nodes, term.children) if op == "arange" else \
                    relay.op.get(op).relation(types, egraph.attrs[key])
            except Exception:  # noqa: BLE001 - an operand type the relation refuses: no information
                continue


def _counted(egraph: EGraph, nodes, bounds: tuple[Handle, ...]) -> TensorType | None:
    """The type of `arange(0, n, 1)` where n evaluates to a size: (n,), positions 0 ... n - 1 (the
    relation types every arange (?,): its bounds are tensors)."""
    start, stop, step = (_value(egraph, nodes, b, _DEPTH) for b in bounds)
    if start is None or stop is None or step is None or stop.ndim or (start.item(), step.item()) != (0, 1):
        return None
    return TensorType([stop.item()], egraph.type_of(bounds[0]).dtype)


def _precise_type(egraph: EGraph, nodes, handle: Handle, depth: int):
    """The class's type with its shape as precise as `_class_shape` finds; a tuple's fields each so
    (a tuple's, or the relation's of a call that makes one: the operands of a `concatenate`, the
    parts of a `split`)."""
    handle = egraph.canonical(handle)
    ty = egraph.type_of(handle)
    if isinstance(ty, TensorType):
        shape = _class_shape(egraph, nodes, handle, depth)
        return ty if shape is None else TensorType(shape, ty.dtype)
    if not isinstance(ty, TupleType) or depth <= 0 or handle in _SHAPE_PATH:
        return ty
    tuples = [n for n in nodes.get(handle, ()) if n.kind is Kind.TUPLE]
    fields = _list(egraph, nodes, tuples[0].children[0]) if tuples else None
    if fields is not None and len(fields) == len(ty.fields):
        return TupleType([_precise_type(egraph, nodes, f, depth) for f in fields])
    _SHAPE_PATH.add(handle)
    try:
        made = [t for t in _term_types(egraph, nodes, handle, depth) if isinstance(t, TupleType)
                and len(t.fields) == len(ty.fields)]
    finally:
        _SHAPE_PATH.discard(handle)
    return min([ty, *made], key=_unknown_dims)


def _unknown_dims(ty: TupleType) -> int:
    return sum(isinstance(d, AnyDim) for f in ty.fields for d in getattr(f, "shape", ()))


def _fewer_any(a: tuple, b: tuple) -> bool:
    return sum(isinstance(d, AnyDim) for d in a) < sum(isinstance(d, AnyDim) for d in b)


def shape_value(m: Match, name: str) -> tuple[AnyValue, ...] | None:
    """The 1-D integer class bound to `name` as ints and symbolic sizes, where it evaluates."""
    value = _value(m.egraph, m.egraph.class_nodes(), m[name], _DEPTH)
    if value is None or value.ndim != 1 or any(isinstance(v, (bool, np.bool_)) for v in value):
        return None
    return tuple(int(v) if known(v) else v for v in value)


def _undecided(target, shape) -> bool:
    """The target does not evaluate or the data's shape has `Any` dimensions: rewrites may still
    tell (`UNDECIDED`: the runner asks again after the next change)."""
    return target is None or any(isinstance(d, AnyDim) for d in shape)


def _static_reshape(m: Match):
    target, shape = shape_value(m, "t"), precise_shape(m, "x")
    if _undecided(target, shape):
        return UNDECIDED
    newshape: list[int] = []
    for i, d in enumerate(target):
        if known(d):
            if d < -1 or d == 0 and m["r"].allowzero:
                return None  # not a size, or a literal 0 (the static op's 0 copies)
            newshape.append(d)
        else:
            newshape.append(0 if i < len(shape) and shape[i] == d else -1)
    if newshape.count(-1) > 1:
        return None
    out = make_call("reshape", [m.expr("x")], {"newshape": newshape})
    try:
        relation = relay.op.get("reshape").relation([TensorType(shape, m.dtype("x"))], out.attrs)
    except Exception:  # noqa: BLE001 - a target the static op cannot take
        return None
    want = tuple(shape[i] if d == 0 else d for i, d in enumerate(target))
    return out if all(w == -1 or w == r for w, r in zip(want, relation.shape)) and len(want) == len(relation.shape) \
        else None


def _static_expand(m: Match):
    target, shape = shape_value(m, "t"), precise_shape(m, "x")
    if _undecided(target, shape):
        return UNDECIDED
    if len(target) < len(shape):
        return None
    padded = (1,) * (len(target) - len(shape)) + tuple(shape)
    carrier = []
    for have, want in zip(padded, target):
        if known(want) and want == 1 or want == have:
            carrier.append(1)
        elif known(have) and have == 1 and known(want) and want > 1:
            carrier.append(want)
        else:
            return None
    if len(target) == len(shape) and all(c == 1 for c in carrier):
        return m.expr("x")
    zeros = constant(np.zeros(carrier, dtype=numpy_dtype(m.dtype("x"))))
    return make_call("where", [constant(np.array(True)), m.expr("x"), zeros])


def _heads_round_trip(m: Match):
    """`dyn.reshape(transpose(dyn.reshape(x, (-1, S, D)), (0, 2, 1)), (A, B, D, S))` of x (A, B, S, D):
    the last two axes of x swapped (the leading two merged and split again around a transpose that
    does not move them), as dynamo writes K^T for a 4-D product."""
    first, second, shape = shape_value(m, "t"), shape_value(m, "t2"), precise_shape(m, "x")
    if _undecided(first, shape) or second is None:
        return UNDECIDED
    if len(shape) != 4 or tuple(m["p"].axes or ()) != (0, 2, 1) or m["r1"].allowzero and 0 in first:
        return None
    a, b, rows, cols = shape
    if len(first) != 3 or first[0] not in (-1, a * b) or tuple(first[1:]) != (rows, cols):
        return None
    if tuple(second) != (a, b, cols, rows):
        return None
    return make_call("transpose", [m.expr("x")], {"axes": [0, 1, 3, 2]})


def _round_trip_example(order: tuple = (0, 2, 1)) -> Expr:
    """(2, 3, 4, 5) merged to (6, 4, 5), transposed by `order`, split to (2, 3, 5, 4)."""
    data = relay.var("x", shape=(2, 3, 4, 5))
    dims = relay.shape_of(data)
    merged = relay.dyn.reshape(data, relay.const(np.array([-1, 4, 5], np.int64)))
    split = relay.concatenate([relay.strided_slice(dims, [0], [2], axes=[0]), relay.const(np.array([5, 4], np.int64))],
                              axis=0)
    return relay.dyn.reshape(relay.transpose(merged, order), split)


def _example_reshape(unknown: bool = False) -> Expr:
    """(4, 6) data reshaped to (4, 2, 3), the target read from its shape (`unknown`: the shape of a
    tensor whose first dimension is `Any`)."""
    data = relay.var("x", shape=(4, 6))
    source = relay.var("y", shape=(Any, 6)) if unknown else data
    batch = relay.reshape(relay.take(relay.shape_of(source), relay.const(np.int64(0)), axis=0), [1])
    target = relay.concatenate([batch, relay.const(np.array([2, 3], np.int64))], axis=0)
    return relay.dyn.reshape(data, target)


def _example_expand(wrong: bool = False) -> Expr:
    """(2, 1, 4) data expanded to (2, 3, 4) by a target read from its shape (`wrong`: 5 for 4)."""
    data = relay.var("x", shape=(2, 1, 4))
    batch = relay.reshape(relay.take(relay.shape_of(data), relay.const(np.int64(0)), axis=0), [1])
    rest = relay.const(np.array([3, 4] if not wrong else [3, 5], np.int64))
    return relay.dyn.expand(data, relay.concatenate([batch, rest], axis=0))


SHAPE_VALUES = ruleset("shape-values", [
    rule("dyn-reshape-static", call("dyn.reshape", x, t, bind_attrs="r"), _static_reshape,
         example=_example_reshape, near_miss=lambda: _example_reshape(unknown=True)),
    rule("dyn-heads-round-trip",
         call("dyn.reshape", call("transpose", call("dyn.reshape", x, t, bind_attrs="r1"), bind_attrs="p"), t2),
         _heads_round_trip, example=_round_trip_example, near_miss=lambda: _round_trip_example((1, 0, 2))),
    rule("dyn-expand-static", call("dyn.expand", x, t), _static_expand,
         example=_example_expand, near_miss=lambda: _example_expand(wrong=True)),
])
