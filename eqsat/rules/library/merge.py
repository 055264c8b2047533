"""Multi-pattern rules: two ops that share an input become one wider op and a split (TASO/TENSAT).

Convolutions, dense layers, and their fused forms with bias and activation (weights and biases
concatenated) merge when their attributes agree but for the output width (`channels`, `units`,
which the merged call sums).

Three biased dense layers of one input (an attention's Q, K and V projections: BERT's, Qwen2's) also
merge into one, split in three: one GEMM where the pairwise merges leave two, the extractor choosing
between them. Plain dense layers do not: NasRNN's eight parallel ones made 336 triples beside 168
pairs, among which the greedy extractor no longer found the ILP's program.

Termination: a rule here merges calls only when each weight's e-class holds a leaf (a constant or
a graph variable). The merged call's weight is a `concatenate`, whose class holds no leaf, so a
merged call never takes part in another merge. Each rule therefore adds at most one wide call
(plus its concatenate, split and projections) per unordered pair (or triple) of calls that share
an input and have leaf weights, and saturates on its own; it never builds deeper merges.
"""

from __future__ import annotations

from typing import Callable

from ir import Attrs, Expr, relay

from ...egraph.terms import Kind
from ..match import Match
from ..pattern import Pat, PVar, nn, ops, pvars, tuple_pat
from ..rule import rule, ruleset

__all__ = ["MERGE", "convs_mergeable", "same_but_width", "widened"]

x, w1, w2, w3, b1, b2, b3 = pvars("x w1 w2 w3 b1 b2 b3")

_LEAF_KINDS = (Kind.CONST, Kind.VAR)


def _holds_leaf(m: Match, name: str) -> bool:
    """True when the class bound to `name` holds a constant or a graph variable."""
    return m.holds(m[name], *_LEAF_KINDS)


def _mergeable_pair(m: Match) -> bool:
    """Different roots, each unordered pair (or triple) once, every weight a leaf of one dtype (so
    merges never nest)."""
    roots = [m.egraph.canonical(r) for r in m.roots]
    weights = [f"w{i + 1}" for i in range(len(roots))]
    return (all(a < b for a, b in zip(roots, roots[1:])) and len({m.dtype(w) for w in weights}) == 1
            and all(_holds_leaf(m, w) for w in weights))


def same_but_width(a1: Attrs, a2: Attrs, width: str) -> bool:
    """True when two calls' attributes agree except for the output width `width` (e.g. "channels")."""
    return {k: v for k, v in a1.items() if k != width} == {k: v for k, v in a2.items() if k != width}


def widened(name: str, width: str, weights: tuple[str, ...] = ("w1", "w2")) -> Callable[[Match], int | None]:
    """A template attribute: the output width `width` of the call bound to `name`, as the output sizes of
    `weights` summed (unset when it is unset)."""
    return lambda m: None if getattr(m[name], width) is None else sum(m.shape(w)[0] for w in weights)


def _weights(*names: str) -> Pat:
    return ops.concatenate(tuple_pat(*(PVar(n) for n in names)), axis=0)


def _split(wide: Pat, axis: int, parts: int = 2) -> tuple[Pat, ...]:
    """The `parts` parts of `wide` along `axis`, each as wide as its weight's (`w1`, `w2`, ...) output."""
    def bounds(m: Match) -> list[int]:
        widths = [m.shape(f"w{i + 1}")[0] for i in range(parts - 1)]
        return [sum(widths[:i + 1]) for i in range(parts - 1)]
    split = ops.split(wide, indices_or_sections=bounds, axis=axis)
    return tuple(split[i] for i in range(parts))


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
    """Guard of fused calls (conv or dense with bias and activation): alike as `same_calls` says,
    mergeable (`_mergeable_pair`), and leaf biases of one dtype."""
    def guard(m: Match) -> bool:
        biases = [f"b{i + 1}" for i in range(len(m.roots))]
        return (same_calls(m) and _mergeable_pair(m) and len({m.dtype(b) for b in biases}) == 1
                and all(_holds_leaf(m, b) for b in biases))
    return guard


def _fused_denses_alike(m: Match) -> bool:
    calls = [m[f"c{i + 1}"] for i in range(len(m.roots))]
    return all(same_but_width(calls[0], c, "units") for c in calls[1:])


def _three_denses(computed: bool = False) -> Expr:
    """Biased Q, K and V projections of one input, V narrower (grouped heads); with `computed`, V's
    weight computed (a near miss: no leaf)."""
    x = relay.var("x", shape=(2, 5))
    weights = [relay.var(f"w{i}", shape=(n, 5)) for i, n in ((1, 4), (2, 4), (3, 2))]
    if computed:
        weights[2] = relay.nn.relu(weights[2])
    return relay.Tuple([relay.nn.dense_bias_act(x, w, relay.var(f"b{i}", shape=(n,)))
                        for i, (w, n) in enumerate(zip(weights, (4, 4, 2)), 1)])


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
         when=_fused_mergeable(_fused_denses_alike),
         example=lambda: _fused_pair("dense", "relu"), near_miss=lambda: _fused_pair("dense", "tanh")),
    rule("merge-three-parallel-dense-bias-act",
         (nn.dense_bias_act(x, w1, b1, bind_attrs="c1"), nn.dense_bias_act(x, w2, b2, bind_attrs="c2"),
          nn.dense_bias_act(x, w3, b3, bind_attrs="c3")),
         _split(nn.dense_bias_act(x, _weights("w1", "w2", "w3"), _weights("b1", "b2", "b3"), attrs_from="c1",
                                  units=widened("c1", "units", ("w1", "w2", "w3"))), axis=-1, parts=3),
         when=_fused_mergeable(_fused_denses_alike), example=_three_denses,
         near_miss=lambda: _three_denses(computed=True)),
])
