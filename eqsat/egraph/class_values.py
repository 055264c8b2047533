"""What the e-graph knows about a class's value beyond the type it was made with.

**Types refine.** A class keeps the type of the node that made it, but every e-node of a class
computes the same value, so each e-node's type relation, applied to its operands' types, also
types the class. A fused op or a static reshape that a rule adds often knows what the spelled-out
ops did not (exporters compute shapes at run time, so after the first `Reshape` of a layer its
values are `Any` at import):

    class 7: dyn.reshape(x, t)          made with  (?, ?, ?, ?)
             reshape(x, [0, 0, 4, 16])  relation   (batch, seq, 4, 16)   -> the class's type

`refine_types` runs at every refresh: each class whose type has `Any` dimensions takes, dimension
by dimension, what its e-nodes' relations say, and its users are looked at again until nothing
changes (an e-class analysis whose join fills `Any` dimensions). A refined dimension is what the
relations prove, so every rule reads the most precise shape as the class's own type, through any
number of layers.

**Values.** `class_value` evaluates a 1-D integer class over symbolic sizes (shape_of, take,
reshape, expand_dims, squeeze, concatenate, strided_slice, cast, add, equal, where), trying each e-node of a
class: how the shape-value rules turn run-time shapes into static ones, and how `arange(0, n, 1)`
gets its length.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from ir import relay
from ir.errors import ShapeError
from ir.op.shapes import broadcast_shapes, known, normalize_axis
from ir.op.transform import TO_THE_END
from ir.type_infer import types_compatible
from ir.types import Any, AnyDim, TensorType, TupleType, Type, dim_min

from .terms import Handle, Kind

if TYPE_CHECKING:
    from .egraph import EGraph

__all__ = ["class_value", "has_any", "refine_types"]

_DEPTH = 16
"""how many classes down a value is evaluated."""


def _list(egraph: "EGraph", nodes, handle: Handle) -> list[Handle] | None:
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


def _call_value(egraph: "EGraph", nodes, op: str, attrs, args: tuple[Handle, ...], depth: int) -> np.ndarray | None:
    if op == "shape_of":
        ty = egraph.type_of(args[0])
        if not isinstance(ty, TensorType) or any(isinstance(d, AnyDim) for d in ty.shape):
            return None
        return np.array(list(ty.shape) + [None], dtype=object)[:-1]
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
    if op == "squeeze" and values[0].shape == (1,) and list(attrs.axis or [0]) in ([0], [-1]):
        return values[0].reshape(())
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


_PATH: set[Handle] = set()
"""the classes being evaluated (one evaluation at a time: rules fire in one thread)."""


def _value(egraph: "EGraph", nodes, handle: Handle, depth: int) -> np.ndarray | None:
    """The value of a class: the first of its e-nodes that evaluates, never through a class on
    the path (a class holds e-nodes that read itself, e.g. `reshape(c, [-1])` of a 1-D `c`)."""
    handle = egraph.canonical(handle)
    if depth <= 0 or handle in _PATH:
        return None
    _PATH.add(handle)
    try:
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
    finally:
        _PATH.discard(handle)


def class_value(egraph: "EGraph", handle: Handle) -> np.ndarray | None:
    """The value of an integer (or boolean) class of rank 0 or 1 as an object array of ints and
    symbolic sizes, where its e-nodes evaluate (`_DEPTH` classes down); else None."""
    return _value(egraph, egraph.class_nodes(), handle, _DEPTH)


# -- types that refine -----------------------------------------------------------------------------

def _unknown(ty: Type) -> int:
    if isinstance(ty, TensorType):
        return sum(isinstance(d, AnyDim) for d in ty.shape)
    if isinstance(ty, TupleType):
        return sum(_unknown(f) for f in ty.fields)
    return 0


def has_any(ty: Type) -> bool:
    """Whether a type has an `Any` dimension (in a field, for a tuple)."""
    return _unknown(ty) > 0


def _join(have: Type, told: Type | None) -> Type:
    """`have` with each `Any` dimension filled from `told` (of the same structure), else `have`."""
    if isinstance(have, TensorType) and isinstance(told, TensorType):
        if told.dtype != have.dtype or told.ndim != have.ndim or not types_compatible(have, told):
            return have
        shape = [t if isinstance(h, AnyDim) else h for h, t in zip(have.shape, told.shape)]
        return have if shape == list(have.shape) else TensorType(shape, have.dtype)
    if isinstance(have, TupleType) and isinstance(told, TupleType) and len(have.fields) == len(told.fields):
        fields = [_join(h, t) for h, t in zip(have.fields, told.fields)]
        return have if all(f is h for f, h in zip(fields, have.fields)) else TupleType(fields)
    return have


def _arange_type(egraph: "EGraph", nodes, bounds: tuple[Handle, ...]) -> TensorType | None:
    """`arange(0, n, 1)` where n evaluates to a size is (n,) long (the relation types every
    arange (?,): its bounds are tensors)."""
    start, stop, step = (_value(egraph, nodes, b, _DEPTH) for b in bounds)
    if start is None or stop is None or step is None or stop.ndim or (start.item(), step.item()) != (0, 1):
        return None
    return TensorType([stop.item()], egraph.type_of(bounds[0]).dtype)


def _sliced_length(size, begin, end, step):
    """How long a unit-step slice from `begin` to `end` (ints or sizes) of an axis of length `size` is,
    as ONNX Slice clamps its bounds; `Any` where that is not a dimension (a bound that may count from
    the end: negative, or a size expression that may be)."""
    if not known(step) or step != 1 or not known(begin) or begin < 0:
        return Any
    if known(end) and end < 0:
        return len(range(size)[begin:end]) if known(size) else Any
    try:
        if not end >= 0:
            return Any
        stop = size if known(end) and end >= TO_THE_END else dim_min(size, end)
        return stop - begin if stop >= begin else Any
    except TypeError:  # which is larger depends on the sizes
        return Any


def _dynamic_type(egraph: "EGraph", nodes, op: str, attrs, args: tuple[Handle, ...]) -> TensorType | None:
    """The type of a `dyn.strided_slice` or `dyn.expand` whose bounds or target evaluate to ints and
    sizes (its relation, which sees only their types, gives `Any` there)."""
    data = egraph.type_of(args[0])
    values = [_value(egraph, nodes, a, _DEPTH) for a in args[1:]]
    if not isinstance(data, TensorType) or any(v is None or v.ndim != 1 for v in values):
        return None
    if op == "dyn.expand":
        target = tuple(values[0])
        if any(known(d) and d < 0 for d in target):
            return None
        return TensorType(broadcast_shapes(data.shape, target), data.dtype)
    shape = list(data.shape)
    for axis, begin, end, step in zip(attrs.axes, *values):
        axis = normalize_axis(axis, data.ndim)
        shape[axis] = _sliced_length(shape[axis], begin, end, step)
    return TensorType(shape, data.dtype)


def _told(egraph: "EGraph", nodes, term) -> Type | None:
    """The type an e-node's relation gives its value from its operands' current types."""
    if term.kind is Kind.GETITEM:
        whole = egraph.type_of(term.children[0])
        return whole.fields[term.payload[0]] if isinstance(whole, TupleType) else None
    if term.kind is Kind.TUPLE:
        fields = _list(egraph, nodes, term.children[0])
        return None if fields is None else TupleType([egraph.type_of(f) for f in fields])
    if term.kind is not Kind.CALL:
        return None
    op, key = term.payload
    if op == "arange":
        return _arange_type(egraph, nodes, term.children)
    if op in ("dyn.strided_slice", "dyn.expand"):
        try:
            return _dynamic_type(egraph, nodes, op, egraph.attrs[key], term.children)
        except (ShapeError, TypeError, ValueError):  # bounds or a target that do not fit: no information
            return None
    try:
        return relay.op.get(op).relation([egraph.type_of(c) for c in term.children], egraph.attrs[key])
    except Exception:  # noqa: BLE001 - an operand type the relation refuses: no information
        return None


def refine_types(egraph: "EGraph") -> int:
    """Fill the `Any` dimensions of every class's type from its e-nodes' relations, to a fixed
    point (a class that refines has its users looked at again); the number of classes refined."""
    egraph.imprecise = {h for h in egraph.imprecise if has_any(egraph.type_of(h))}
    if not egraph.imprecise:
        return 0
    nodes = egraph.class_nodes()
    work = deque(sorted({egraph.canonical(h) for h in egraph.imprecise}))  # operands are mostly older
    users: dict[Handle, set[Handle]] = {}
    for c, terms in nodes.items():
        for term in terms:
            for child in term.children:
                users.setdefault(child, set()).add(c)
    pending, refined = set(work), set()
    while work:
        c = work.popleft()
        pending.discard(c)
        have = egraph.type_of(c)
        if not _unknown(have):
            continue
        for term in nodes[c]:
            have = _join(have, _told(egraph, nodes, term))
            if not _unknown(have):
                break
        if _unknown(have) < _unknown(egraph.type_of(c)):
            egraph.refine_type(c, have)
            refined.add(c)
            for user in sorted(users.get(c, ())):
                if user not in pending and _unknown(egraph.type_of(user)):
                    pending.add(user)
                    work.append(user)
    return len(refined)
