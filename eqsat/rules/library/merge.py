"""Multi-pattern rules: two ops that share an input become one wider op and a split (TASO/TENSAT).

Termination: a rule here merges two calls only when each weight's e-class holds a leaf (a
constant or a graph variable). The merged call's weight is a `concatenate`, whose class holds no
leaf, so a merged call never takes part in another merge. Each rule therefore adds at most one
wide call (plus its concatenate, split and two projections) per unordered pair of calls that
share an input and have leaf weights, and saturates on its own; it never builds three-way or
deeper merges.
"""

from __future__ import annotations

from ir import Expr
from ir.op.registry import make_call

from ...egraph.terms import Kind
from ..match import Match
from ..pattern import call, pvars
from ..rule import rule, ruleset

__all__ = ["MERGE"]

x, w1, w2 = pvars("x w1 w2")

_LEAF_KINDS = (Kind.CONST, Kind.VAR)


def _holds_leaf(m: Match, name: str) -> bool:
    """True when the class bound to `name` holds a constant or a graph variable."""
    terms = m.egraph.class_nodes().get(m.egraph.canonical(m[name]), ())
    return any(t.kind in _LEAF_KINDS for t in terms)


def _mergeable_pair(m: Match) -> bool:
    """Two different roots, each unordered pair once, both weights leaves (so merges never nest)."""
    a, b = (m.egraph.canonical(r) for r in m.roots)
    return a < b and m.dtype("w1") == m.dtype("w2") and _holds_leaf(m, "w1") and _holds_leaf(m, "w2")


def _convs_mergeable(m: Match) -> bool:
    c1, c2 = m["c1"], m["c2"]
    return (c1 == c2 and c1.groups == 1 and c1.channels is None
            and c1.data_layout == "NCHW" and c1.kernel_layout == "OIHW"
            and m.shape("w1")[1:] == m.shape("w2")[1:] and _mergeable_pair(m))


def _merged_convs(m: Match) -> tuple[Expr, Expr]:
    weights = make_call("concatenate", [[m.expr("w1"), m.expr("w2")]], {"axis": 0})
    wide = make_call("nn.conv2d", [m.expr("x"), weights], dict(m["c1"]))
    parts = make_call("split", [wide], {"indices_or_sections": [m.shape("w1")[0]], "axis": 1})
    return parts[0], parts[1]


def _denses_mergeable(m: Match) -> bool:
    d1, d2 = m["d1"], m["d2"]
    return d1 == d2 and d1.units is None and _mergeable_pair(m)


def _merged_denses(m: Match) -> tuple[Expr, Expr]:
    weights = make_call("concatenate", [[m.expr("w1"), m.expr("w2")]], {"axis": 0})
    wide = make_call("nn.dense", [m.expr("x"), weights], dict(m["d1"]))
    parts = make_call("split", [wide], {"indices_or_sections": [m.shape("w1")[0]], "axis": -1})
    return parts[0], parts[1]


MERGE = ruleset("merge", [
    rule("merge-parallel-conv", (call("nn.conv2d", x, w1, bind_attrs="c1"), call("nn.conv2d", x, w2, bind_attrs="c2")),
         _merged_convs, when=_convs_mergeable),
    rule("merge-parallel-dense", (call("nn.dense", x, w1, bind_attrs="d1"), call("nn.dense", x, w2, bind_attrs="d2")),
         _merged_denses, when=_denses_mergeable),
])
