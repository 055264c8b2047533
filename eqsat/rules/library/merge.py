"""Multi-pattern rules: two ops that share an input become one wider op and a split (TASO/TENSAT)."""

from __future__ import annotations

from ir import Expr
from ir.op.registry import make_call

from ..match import Match
from ..pattern import call, pvars
from ..rule import rule, ruleset

__all__ = ["MERGE"]

x, w1, w2 = pvars("x w1 w2")


def _distinct_and_ordered(m: Match) -> bool:
    """Two different roots, each unordered pair once."""
    a, b = (m.egraph.canonical(r) for r in m.roots)
    return a < b


def _convs_mergeable(m: Match) -> bool:
    c1, c2 = m["c1"], m["c2"]
    return (_distinct_and_ordered(m) and c1 == c2 and c1.groups == 1 and c1.channels is None
            and c1.data_layout == "NCHW" and c1.kernel_layout == "OIHW"
            and m.shape("w1")[1:] == m.shape("w2")[1:] and m.dtype("w1") == m.dtype("w2"))


def _merged_convs(m: Match) -> tuple[Expr, Expr]:
    weights = make_call("concatenate", [[m.expr("w1"), m.expr("w2")]], {"axis": 0})
    wide = make_call("nn.conv2d", [m.expr("x"), weights], dict(m["c1"]))
    parts = make_call("split", [wide], {"indices_or_sections": [m.shape("w1")[0]], "axis": 1})
    return parts[0], parts[1]


def _denses_mergeable(m: Match) -> bool:
    d1, d2 = m["d1"], m["d2"]
    return _distinct_and_ordered(m) and d1 == d2 and d1.units is None and m.dtype("w1") == m.dtype("w2")


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
