"""Multi-pattern rules: two ops that share an input become one wider op and a split (TASO/TENSAT).

Convolutions, dense layers, and their fused forms with bias and activation (weights and biases
concatenated) merge when their attributes agree but for the output width (`channels`, `units`,
which the merged call sums).

Termination: a rule here merges two calls only when each weight's e-class holds a leaf (a
constant or a graph variable). The merged call's weight is a `concatenate`, whose class holds no
leaf, so a merged call never takes part in another merge. Each rule therefore adds at most one
wide call (plus its concatenate, split and two projections) per unordered pair of calls that
share an input and have leaf weights, and saturates on its own; it never builds three-way or
deeper merges.
"""

from __future__ import annotations

from typing import Callable

from ir import Attrs, Expr, relay

from ...egraph.terms import Kind
from ..match import Match
from ..pattern import Pat, PVar, nn, ops, pvars, tuple_pat
from ..rule import rule, ruleset

__all__ = ["MERGE", "convs_mergeable", "same_but_width", "widened"]

x, w1, w2, b1, b2 = pvars("x w1 w2 b1 b2")

_LEAF_KINDS = (Kind.CONST, Kind.VAR)


def _holds_leaf(m: Match, name: str) -> bool:
    """True when the class bound to `name` holds a constant or a graph variable."""
    return m.holds(m[name], *_LEAF_KINDS)


def _mergeable_pair(m: Match) -> bool:
    """Two different roots, each unordered pair once, both weights leaves (so merges never nest)."""
    a, b = (m.egraph.canonical(r) for r in m.roots)
    return a < b and m.dtype("w1") == m.dtype("w2") and _holds_leaf(m, "w1") and _holds_leaf(m, "w2")


def same_but_width(a1: Attrs, a2: Attrs, width: str) -> bool:
    """True when two calls' attributes agree except for the output width `width` (e.g. "channels")."""
    return {k: v for k, v in a1.items() if k != width} == {k: v for k, v in a2.items() if k != width}


def widened(name: str, width: str) -> Callable[[Match], int | None]:
    """A template attribute: the output width `width` of the call bound to `name`, as the output sizes of
    weights `w1` and `w2` summed (unset when it is unset)."""
    return lambda m: None if getattr(m[name], width) is None else m.shape("w1")[0] + m.shape("w2")[0]


def _weights(*names: str) -> Pat:
    return ops.concatenate(tuple_pat(*(PVar(n) for n in names)), axis=0)


def _split(wide: Pat, axis: int) -> tuple[Pat, Pat]:
    """The two parts of `wide` along `axis`: the first as wide as weight `w1`'s output."""
    parts = ops.split(wide, indices_or_sections=lambda m: [m.shape("w1")[0]], axis=axis)
    return parts[0], parts[1]


def convs_mergeable(m: Match) -> bool:
    """Two plain NCHW/OIHW convolutions (groups 1) alike but for their output channels."""
    c1 = m["c1"]
    return (same_but_width(c1, m["c2"], "channels") and c1.groups == 1
            and c1.data_layout == "NCHW" and c1.kernel_layout == "OIHW"
            and m.shape("w1")[1:] == m.shape("w2")[1:] and m.dtype("w1") == m.dtype("w2"))


def _convs_mergeable(m: Match) -> bool:
    return convs_mergeable(m) and _mergeable_pair(m)


def _denses_mergeable(m: Match) -> bool:
    return same_but_width(m["d1"], m["d2"], "units") and _mergeable_pair(m)


def _fused_mergeable(same_calls):
    """Guard of a fused pair (conv or dense with bias and activation): alike as `same_calls` says,
    a mergeable pair, and leaf biases of one dtype."""
    def guard(m: Match) -> bool:
        return (same_calls(m) and _mergeable_pair(m) and m.dtype("b1") == m.dtype("b2")
                and _holds_leaf(m, "b1") and _holds_leaf(m, "b2"))
    return guard


def _fused_pair(op: str, activation: str) -> Expr:
    """Two fused calls of one input, the second with `activation`."""
    if op == "conv":
        x = relay.var("x", shape=(1, 3, 6, 6))
        return relay.Tuple([relay.nn.conv2d_bias_act(x, relay.var("w1", shape=(4, 3, 3, 3)), relay.var("b1", shape=(4,)),
                                                     padding=(1, 1), activation="relu"),
                            relay.nn.conv2d_bias_act(x, relay.var("w2", shape=(2, 3, 3, 3)), relay.var("b2", shape=(2,)),
                                                     padding=(1, 1), activation=activation)])
    x = relay.var("x", shape=(2, 5))
    return relay.Tuple([relay.nn.dense_bias_act(x, relay.var("w1", shape=(3, 5)), relay.var("b1", shape=(3,)),
                                                activation="relu"),
                        relay.nn.dense_bias_act(x, relay.var("w2", shape=(4, 5)), relay.var("b2", shape=(4,)),
                                                activation=activation)])


def _merge_example(op: str) -> Expr:
    """Two convolutions (summed) or two dense layers (a tuple) of one input."""
    if op == "conv":
        x = relay.var("x", shape=(1, 3, 6, 6))
        return relay.add(relay.nn.conv2d(x, relay.var("w1", shape=(4, 3, 3, 3)), padding=(1, 1)),
                         relay.nn.conv2d(x, relay.var("w2", shape=(4, 3, 3, 3)), padding=(1, 1)))
    x = relay.var("x", shape=(2, 5))
    return relay.Tuple([relay.nn.dense(x, relay.var("w1", shape=(3, 5))),
                        relay.nn.dense(x, relay.var("w2", shape=(4, 5)))])


def _two_convs(padding: int) -> Expr:
    x = relay.var("x", shape=(1, 3, 6, 6))
    return relay.Tuple([relay.nn.conv2d(x, relay.var("w1", shape=(4, 3, 3, 3)), padding=(1, 1)),
                        relay.nn.conv2d(x, relay.var("w2", shape=(2, 3, 3, 3)), padding=(padding, padding))])


def _dense_of_computed_weight() -> Expr:
    x = relay.var("x", shape=(2, 5))
    return relay.Tuple([relay.nn.dense(x, relay.nn.relu(relay.var("w1", shape=(3, 5)))),
                        relay.nn.dense(x, relay.var("w2", shape=(4, 5)))])


MERGE = ruleset("merge", [
    rule("merge-parallel-conv", (nn.conv2d(x, w1, bind_attrs="c1"), nn.conv2d(x, w2, bind_attrs="c2")),
         _split(nn.conv2d(x, _weights("w1", "w2"), attrs_from="c1", channels=widened("c1", "channels")), axis=1),
         when=_convs_mergeable, example=lambda: _merge_example("conv"),
         near_miss=lambda: _two_convs(0)),
    rule("merge-parallel-dense", (nn.dense(x, w1, bind_attrs="d1"), nn.dense(x, w2, bind_attrs="d2")),
         _split(nn.dense(x, _weights("w1", "w2"), attrs_from="d1", units=widened("d1", "units")), axis=-1),
         when=_denses_mergeable, example=lambda: _merge_example("dense"),
         near_miss=_dense_of_computed_weight),
    rule("merge-parallel-conv-bias-act",
         (nn.conv2d_bias_act(x, w1, b1, bind_attrs="c1"), nn.conv2d_bias_act(x, w2, b2, bind_attrs="c2")),
         _split(nn.conv2d_bias_act(x, _weights("w1", "w2"), _weights("b1", "b2"), attrs_from="c1",
                                   channels=widened("c1", "channels")), axis=1),
         when=_fused_mergeable(convs_mergeable),
         example=lambda: _fused_pair("conv", "relu"), near_miss=lambda: _fused_pair("conv", "sigmoid")),
    rule("merge-parallel-dense-bias-act",
         (nn.dense_bias_act(x, w1, b1, bind_attrs="c1"), nn.dense_bias_act(x, w2, b2, bind_attrs="c2")),
         _split(nn.dense_bias_act(x, _weights("w1", "w2"), _weights("b1", "b2"), attrs_from="c1",
                                  units=widened("c1", "units")), axis=-1),
         when=_fused_mergeable(lambda m: same_but_width(m["c1"], m["c2"], "units")),
         example=lambda: _fused_pair("dense", "relu"), near_miss=lambda: _fused_pair("dense", "tanh")),
])
