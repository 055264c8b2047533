"""Shape values known in the e-graph: `dyn.reshape` / `dyn.expand` whose target is computed from
tensors' shapes become static `reshape` / `where(True, x, zeros)` (an expand of static axes only).

Exporters compute a target shape from `Shape` of a value whose type, at import, had unknown
dimensions (`Any`); once the rules type that value (a fused op's relation says more than the
spelled-out ops did), some e-node of the target's class reads the shape of a typed tensor:

    concatenate((reshape(take(shape_of(y), 0), [1]), [2], [2], expand_dims(take(shape_of(y), 1), 0), [16]))
        = (batch, 2, 2, seq, 16)                            y: Tensor[(batch, seq, ...)]

`shape_value` evaluates such a class over the symbolic dimensions (`egraph.class_values`: shape_of,
take, reshape, expand_dims, concatenate, strided_slice, cast, add (a cache's past plus the new
length), and TorchScript's `where(x == -1, 1, x)`), trying each e-node of a class. A target that
evaluates is a static one:

    dyn.reshape(x, t) -> reshape(x, newshape)    each entry an int, a copy (0) of x's same symbolic
                                                 dimension at that position, or one inferred (-1)
    dyn.expand(x, t)  -> where(True, x, zeros(c)) where t only grows axes of x of length 1 to a
                                                 static length c (x itself where it grows none)
    dyn.reshape(transpose(dyn.reshape(x, (-1, S, D)), (0, 2, 1)), (A, B, D, S))
                      -> transpose(x, (0, 1, 3, 2))  x (A, B, S, D): dynamo's K^T of a 4-D product

The shape of x is its class's type, which refines as rules add e-nodes whose relations say more
(`egraph.class_values.refine_types`: a fused op may know what the spelled-out ops did not, and a
static reshape types the layers after it). Where the target or the shape does not evaluate yet,
the rule answers `UNDECIDED` and the runner asks again after the next change (the rewrites that
type it may come later).

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
from ir.types import Any, AnyDim, TensorType

from ...egraph.class_values import class_value
from ..match import Match
from ..pattern import call, pvars
from ..rule import UNDECIDED, rule, ruleset
from .exact import constant

__all__ = ["SHAPE_VALUES", "shape_value"]

x, t, t2, w, b = pvars("x t t2 w b")


def shape_value(m: Match, name: str) -> tuple[AnyValue, ...] | None:
    """The 1-D integer class bound to `name` as ints and symbolic sizes, where it evaluates."""
    value = class_value(m.egraph, m[name])
    if value is None or value.ndim != 1 or any(isinstance(v, (bool, np.bool_)) for v in value):
        return None
    return tuple(int(v) if known(v) else v for v in value)


def _undecided(target, shape) -> bool:
    """The target does not evaluate or the data's shape has `Any` dimensions: rewrites may still
    tell (`UNDECIDED`: the runner asks again after the next change)."""
    return target is None or any(isinstance(d, AnyDim) for d in shape)


def _static_reshape(m: Match):
    target, shape = shape_value(m, "t"), m.shape("x")
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
    if len(want) != len(relation.shape) or not all(w == -1 or w == r for w, r in zip(want, relation.shape)):
        return None
    inferred = newshape.index(-1) if -1 in newshape else None
    if inferred is not None and known(relation.shape[inferred]):  # the length -1 stands for, written out, so
        newshape[inferred] = int(relation.shape[inferred])          # that types read without the e-graph know it
        out = make_call("reshape", [m.expr("x")], {"newshape": newshape})
    return out


def _static_expand(m: Match):
    target, shape = shape_value(m, "t"), m.shape("x")
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
    first, second, shape = shape_value(m, "t"), shape_value(m, "t2"), m.shape("x")
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


def _rows_restored(m: Match):
    """`dyn.reshape(dense(reshape(x, [-1, K]), w) (+ bias), t)` where t is x's leading dimensions
    and the dense's units: the dense over x's rows in place (TorchScript's `Conv1D` and `addmm`), its
    bias added (broadcast over the last axis, as `bias_add` on it)."""
    target, shape = shape_value(m, "t"), m.shape("x")
    if _undecided(target, shape):
        return UNDECIDED
    units = m.shape("w")[0]
    if len(shape) < 3 or list(m["f"].newshape) != [-1, shape[-1]] or tuple(target) != (*shape[:-1], units):
        return None
    out = make_call("nn.dense", [m.expr("x"), m.expr("w")], dict(m["d"]))
    if "b" not in m.classes:
        return out
    if "ba" in m.values and m["ba"].axis not in (1, -1) or m.shape("b") != (units,):
        return None  # a bias over the units only: the same added to every row, whatever the rows' axes
    return make_call("add", [out, m.expr("b")])


def _rows_example(order: tuple = (0, 1), bias: str | None = "bias_add") -> Expr:
    """(2, 3, 4) data flattened to rows, a dense of 5 units (plus a bias by `bias_add` or `add`), its
    rows reshaped back by a target read from the data's shape (`order`: its leading dimensions in
    this order)."""
    data = relay.var("x", shape=(2, 3, 4))
    dense = relay.nn.dense(relay.reshape(data, [-1, 4]), relay.var("w", shape=(5, 4)))
    if bias is not None:
        dense = (relay.nn.bias_add if bias == "bias_add" else relay.add)(dense, relay.var("b", shape=(5,)))
    dims = relay.shape_of(data)
    lead = [relay.strided_slice(dims, [i], [i + 1], axes=[0]) for i in order]
    return relay.dyn.reshape(dense, relay.concatenate([*lead, relay.const(np.array([5], np.int64))], axis=0))


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


_FLAT = call("reshape", x, bind_attrs="f")
_ROWS = call("nn.dense", _FLAT, w, bind_attrs="d")

SHAPE_VALUES = ruleset("shape-values", [
    rule("dyn-dense-rows-restored", call("dyn.reshape", call("nn.bias_add", _ROWS, b, bind_attrs="ba"), t),
         _rows_restored, example=_rows_example, near_miss=lambda: _rows_example((1, 0))),
    rule("dyn-dense-rows-restored-added", call("dyn.reshape", call("add", _ROWS, b), t), _rows_restored,
         example=lambda: _rows_example(bias="add"), near_miss=lambda: _rows_example((1, 0), bias="add")),
    rule("dyn-dense-rows-restored-unbiased", call("dyn.reshape", _ROWS, t), _rows_restored,
         example=lambda: _rows_example(bias=None), near_miss=lambda: _rows_example((1, 0), bias=None)),
    rule("dyn-reshape-static", call("dyn.reshape", x, t, bind_attrs="r"), _static_reshape,
         example=_example_reshape, near_miss=lambda: _example_reshape(unknown=True)),
    rule("dyn-heads-round-trip",
         call("dyn.reshape", call("transpose", call("dyn.reshape", x, t, bind_attrs="r1"), bind_attrs="p"), t2),
         _heads_round_trip, example=_round_trip_example, near_miss=lambda: _round_trip_example((1, 0, 2))),
    rule("dyn-expand-static", call("dyn.expand", x, t), _static_expand,
         example=_example_expand, near_miss=lambda: _example_expand(wrong=True)),
])
