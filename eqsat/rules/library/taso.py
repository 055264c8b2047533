"""TASO's graph substitutions that are equalities: merges through concat and split, elementwise ops
moved across a concat, and re-association of matrix products where the shapes make one order cheaper.

Together with `merge.py` (two calls sharing an input become one wide call and a split) these let a
program built as branches be computed as one wide op: a concat of two convolutions of one input is
one convolution with concatenated weights; a concat of two ReLUs (bias adds) is one ReLU (bias add)
of a concat; a split of a concat gives back the concat's parts, and a concat of a split's parts
gives back the split's input. Every rule keeps its left side in the e-graph, so extraction keeps a
merge only where the target's cost model says it pays.

Termination: the concat rules match two-field concats and build one concat each; matmul
re-association fires only towards the order with fewer multiply-adds, so it never undoes itself.

Left out: enlarging a 1x1 (1x3, 3x1) kernel with zeros to merge it with a sibling 3x3
convolution. The zero taps multiply the input's neighbours, and 0 * inf is NaN: next to an
infinity or a NaN the enlarged branch gives NaN where the original gives a number, so it is not an
equality under the library's exactness policy (for the same reason `x * 0 -> 0` is no rule).
"""

from __future__ import annotations

import numpy as np

from ir import Expr, relay

from ..match import Match
from ..pattern import nn, ops, pvars, tuple_pat
from ..rule import rule, ruleset
from .merge import convs_mergeable, widened

__all__ = ["TASO"]

x, a, b, c, w1, w2, b1, b2 = pvars("x a b c w1 w2 b1 b2")


def _v(name: str, *shape: int) -> Expr:
    return relay.var(name, shape=shape)


def _axis(axis: int, ndim: int) -> int:
    return axis % ndim if ndim else axis


def _known(*sizes) -> bool:
    """True when every size is a concrete integer (not a symbolic dimension)."""
    return all(isinstance(d, (int, np.integer)) for d in sizes)


def _split_sizes(sections, size: int) -> list[int]:
    """The part sizes of `split` with `indices_or_sections` on an axis of `size`."""
    if isinstance(sections, int):
        return [size // sections] * sections
    bounds = [0, *sections, size]
    return [hi - lo for lo, hi in zip(bounds, bounds[1:])]


# -- a concat of two convolutions of one input -------------------------------------------------------------

def _convs_concatenable(m: Match) -> bool:
    return convs_mergeable(m) and _axis(m["cat"].axis, 4) == 1


def _two_convs(kernel: int) -> Expr:
    """A 3x3 convolution and a `kernel` x `kernel` one of the same input, both keeping its size."""
    data = _v("x", 1, 3, 6, 6)
    pad = kernel // 2
    return relay.concatenate([relay.nn.conv2d(data, _v("w1", 4, 3, 3, 3), padding=(1, 1)),
                              relay.nn.conv2d(data, _v("w2", 2, 3, kernel, kernel), padding=(pad, pad))], axis=1)


# -- split and concat cancel -------------------------------------------------------------------------------

def _split_undoes_concat(m: Match) -> bool:
    ndim = m.ndim("a")
    axis = _axis(m["cat"].axis, ndim)
    if _axis(m["sp"].axis, ndim) != axis:
        return False
    size_a, size_b = m.shape("a")[axis], m.shape("b")[axis]
    return (_known(size_a, size_b)
            and _split_sizes(m["sp"].indices_or_sections, size_a + size_b) == [size_a, size_b])


def _split_of_concat(index: int, at: int) -> Expr:
    joined = relay.concatenate([_v("a", 2, 3), _v("b", 2, 4)], axis=1)
    return relay.TupleGetItem(relay.split(joined, [at], axis=1), index)


def _concat_undoes_split(m: Match) -> bool:
    sp = m["sp"]
    ndim = m.ndim("x")
    size = m.shape("x")[_axis(sp.axis, ndim)]
    return (sp == m["sp2"] and _axis(sp.axis, ndim) == _axis(m["cat"].axis, ndim) and _known(size)
            and len(_split_sizes(sp.indices_or_sections, size)) == 2)


def _split_then_concat(first: int, second: int) -> Expr:
    parts = relay.split(_v("x", 4, 4), [2], axis=1)
    return relay.concatenate([relay.TupleGetItem(parts, first), relay.TupleGetItem(parts, second)], axis=1)


# -- elementwise ops across a concat -----------------------------------------------------------------------

def _bias_adds_concatenable(m: Match) -> bool:
    ndim = m.ndim("a")
    axis = _axis(m["cat"].axis, ndim)
    return (_axis(m["ba1"].axis, ndim) == axis == _axis(m["ba2"].axis, m.ndim("c"))
            and m.dtype("b1") == m.dtype("b2"))


def _two_bias_adds(axis: int) -> Expr:
    first = relay.nn.bias_add(_v("a", 1, 2, 3, 3), _v("b1", 2), axis=1)
    second = relay.nn.bias_add(_v("c", 1, 2 if axis == 2 else 3, 4 if axis == 2 else 3, 3), _v("b2", 2 if axis == 2 else 3),
                               axis=1)
    return relay.concatenate([first, second], axis=axis)


# -- matrix products ---------------------------------------------------------------------------------------

def _plain_matmul(attrs) -> bool:
    return not attrs.transpose_a and not attrs.transpose_b and not attrs.out_dtype


def _reassociation_pays(to_right: bool):
    """Guard: plain 2-D products, and the other order needs fewer multiply-adds."""
    def guard(m: Match) -> bool:
        shapes = [m.shape(n) for n in ("a", "b", "c")]
        if not (_plain_matmul(m["mm1"]) and _plain_matmul(m["mm2"]) and all(len(s) == 2 for s in shapes)):
            return False
        (rows, inner), (_, middle), (_, cols) = shapes
        if not _known(rows, inner, middle, cols):
            return False
        left = rows * inner * middle + rows * middle * cols      # (a @ b) @ c
        right = inner * middle * cols + rows * inner * cols      # a @ (b @ c)
        return right < left if to_right else left < right
    return guard


def _chain(shapes: tuple[tuple[int, int], ...], right: bool) -> Expr:
    ma, mb, mc = (_v(n, *s) for n, s in zip("abc", shapes))
    if right:
        return relay.nn.matmul(ma, relay.nn.matmul(mb, mc))
    return relay.nn.matmul(relay.nn.matmul(ma, mb), mc)


_TALL, _WIDE = ((8, 2), (2, 8), (8, 2)), ((2, 8), (8, 2), (2, 8))

TASO = ruleset("taso", [
    rule("concat-conv-merge",
         ops.concatenate(tuple_pat(nn.conv2d(x, w1, bind_attrs="c1"), nn.conv2d(x, w2, bind_attrs="c2")),
                         bind_attrs="cat"),
         nn.conv2d(x, ops.concatenate(tuple_pat(w1, w2), axis=0), attrs_from="c1", channels=widened("c1", "channels")),
         when=_convs_concatenable,
         example=lambda: _two_convs(3), near_miss=lambda: _two_convs(1)),       # 1x1 + 3x3: see above
    rule("split-concat-first", ops.split(ops.concatenate(tuple_pat(a, b), bind_attrs="cat"), bind_attrs="sp")[0], a,
         when=_split_undoes_concat,
         example=lambda: _split_of_concat(0, 3), near_miss=lambda: _split_of_concat(0, 2)),
    rule("split-concat-second", ops.split(ops.concatenate(tuple_pat(a, b), bind_attrs="cat"), bind_attrs="sp")[1], b,
         when=_split_undoes_concat,
         example=lambda: _split_of_concat(1, 3), near_miss=lambda: _split_of_concat(1, 4)),
    rule("concat-split", ops.concatenate(tuple_pat(ops.split(x, bind_attrs="sp")[0], ops.split(x, bind_attrs="sp2")[1]),
                                         bind_attrs="cat"), x, when=_concat_undoes_split,
         example=lambda: _split_then_concat(0, 1), near_miss=lambda: _split_then_concat(1, 0)),
    rule("concat-relu", ops.concatenate(tuple_pat(nn.relu(a), nn.relu(b))), nn.relu(ops.concatenate(tuple_pat(a, b))),
         example=lambda: relay.concatenate([relay.nn.relu(_v("a", 2, 3)), relay.nn.relu(_v("b", 2, 2))], axis=1),
         near_miss=lambda: relay.concatenate([relay.nn.relu(_v("a", 2, 3)), relay.sigmoid(_v("b", 2, 2))], axis=1)),
    rule("concat-bias-add",
         ops.concatenate(tuple_pat(nn.bias_add(a, b1, bind_attrs="ba1"), nn.bias_add(c, b2, bind_attrs="ba2")),
                         bind_attrs="cat"),
         nn.bias_add(ops.concatenate(tuple_pat(a, c)), ops.concatenate(tuple_pat(b1, b2), axis=0), attrs_from="ba1"),
         when=_bias_adds_concatenable,
         example=lambda: _two_bias_adds(1), near_miss=lambda: _two_bias_adds(2)),
    rule("matmul-reassociate-right", nn.matmul(nn.matmul(a, b, bind_attrs="mm1"), c, bind_attrs="mm2"),
         nn.matmul(a, nn.matmul(b, c, attrs_from="mm1"), attrs_from="mm2"),
         when=_reassociation_pays(to_right=True), dtypes="float", exact=False,
         example=lambda: _chain(_TALL, right=False), near_miss=lambda: _chain(_WIDE, right=False)),
    rule("matmul-reassociate-left", nn.matmul(a, nn.matmul(b, c, bind_attrs="mm1"), bind_attrs="mm2"),
         nn.matmul(nn.matmul(a, b, attrs_from="mm2"), c, attrs_from="mm1"),
         when=_reassociation_pays(to_right=False), dtypes="float", exact=False,
         example=lambda: _chain(_WIDE, right=True), near_miss=lambda: _chain(_TALL, right=True)),
])
"""exact except matmul re-association (float rounding); see the module docstring."""
