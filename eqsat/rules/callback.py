"""`DFPatternCallback` objects as saturating rules, and e-matching of single patterns.

Each match is rebuilt as IR for the callback: the matched nodes become real IR nodes, and the
classes at the pattern's leaves become their constant or graph variable when the class was
lowered from one, otherwise a typed placeholder variable. `pre` and `post` are the same
expression (an e-graph has no "before"), `node_map` maps each pattern node to its one match.
The callback's result is merged into the root's class; the classes of the match's inner nodes
go with it as an escaping-intermediate constraint, which extraction enforces (TVM's `rewrite`
rejects such matches outright; here the e-graph keeps both and extraction decides).
`rewrite_once` has no effect: applying a rewrite again to an e-graph adds nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import ir
from ir import Call, Expr, If, Let, Tuple, TupleGetItem, Var, get_op
from ir.dataflow_pattern import DFPattern, DFPatternCallback

from ..egraph.egraph import EGraph
from ..egraph.query import Atom, QVar
from ..egraph.terms import Handle, Kind
from ..errors import RuleError
from .dfpattern import CompiledDFPattern, compile_dfpattern
from .match import Match
from .rule import Result, Rule

__all__ = ["DFMatch", "DFQuery", "CallbackRule", "find_matches"]


@dataclass
class DFMatch(Match):
    """A match of a dataflow pattern, rebuilt as IR (`pre`) with the pattern's `node_map`."""

    pre: Expr | None = None
    node_map: dict[DFPattern, list[Expr]] = field(default_factory=dict)
    interior: frozenset[Handle] = frozenset()
    variant: int = 0
    """index of the pattern alternative that matched, in the order TVM's matcher tries them."""


def _leaf(egraph: EGraph, handle: Handle) -> Expr:
    """A class at a pattern leaf: its constant or variable when lowered from one, else a placeholder."""
    term = egraph.representative_term(handle)
    if term.kind is Kind.CONST:
        return egraph.constants[term.payload[0]]
    if term.kind is Kind.VAR:
        return egraph.variables[term.payload[0]]
    return Var(f"?{egraph.canonical(handle)}", egraph.type_of(handle))


@dataclass(frozen=True)
class DFQuery:
    """A compiled pattern variant whose rows decode to `DFMatch`es."""

    compiled: CompiledDFPattern
    variant: int = 0

    @property
    def query(self):
        return self.compiled.query

    def decode(self, egraph: EGraph, row: tuple) -> DFMatch | None:
        c = self.compiled
        vals = c.values(row)
        if not c.accepts(egraph, vals):
            return None
        exprs, leaves = _rebuild(egraph, c.query.atoms, vals)
        root = exprs[c.root]
        try:
            ir.infer_type(root)
        except ir.IRError:  # e.g. a placeholder standing for a whole tuple the pattern indexes into
            return None
        m = DFMatch(egraph, (vals[c.root.name],), variant=self.variant)
        m.placeholders.update(leaves)
        m.pre = root
        m.node_map = {p: [exprs[var]] for p, var in c.bound if var in exprs}
        m.interior = frozenset(c.interior(egraph, vals))
        return m


def _rebuild(egraph: EGraph, atoms: Sequence[Atom], vals: dict[str, Any]) -> tuple[dict[QVar, Any], dict[int, Handle]]:
    """IR for every query variable of a match; leaves recorded as id -> class."""
    defining = {a.out: a for a in atoms}
    exprs: dict[QVar, Any] = {}
    leaves: dict[int, Handle] = {}

    def value(arg: Any) -> Any:
        return vals[arg.name] if isinstance(arg, QVar) else arg

    def build(var: QVar) -> Any:
        stack = [(var, False)]
        while stack:
            v, expanded = stack.pop()
            if v in exprs:
                continue
            atom = defining.get(v)
            if atom is None:
                leaf = _leaf(egraph, vals[v.name])
                exprs[v] = leaf
                leaves[id(leaf)] = vals[v.name]
                continue
            if not expanded:
                stack.append((v, True))
                stack.extend((k, False) for k in atom.children if k not in exprs)
                continue
            kids = [exprs[k] for k in atom.children]
            exprs[v] = _node(egraph, atom, [value(p) for p in atom.payload], kids, vals[v.name], leaves,
                             [k not in defining for k in atom.children])
        return exprs[var]

    for a in atoms:
        build(a.out)
    return exprs, leaves


def _node(egraph: EGraph, atom: Atom, payload: list, kids: list, handle: Handle, leaves: dict[int, Handle],
          open_child: list[bool]) -> Any:
    kind = atom.kind
    if kind is Kind.CALL:
        return Call(get_op(payload[0]), kids, egraph.attrs[payload[1]])
    if kind in (Kind.TUPLE, Kind.APPLY) and open_child[-1]:
        leaf = Var(f"?{egraph.canonical(handle)}", egraph.type_of(handle))  # fields not matched: keep it whole
        leaves[id(leaf)] = handle
        return leaf
    if kind is Kind.APPLY:
        return Call(kids[0], kids[1])
    if kind is Kind.TUPLE:
        return Tuple(kids[0])
    if kind is Kind.NIL:
        return ()
    if kind is Kind.CONS:
        return (kids[0], *kids[1])
    if kind is Kind.GETITEM:
        return TupleGetItem(kids[0], payload[0])
    if kind is Kind.VAR:
        return egraph.variables[payload[0]]
    if kind is Kind.CONST:
        return egraph.constants[payload[0]]
    if kind is Kind.FUNC:
        return egraph.functions[payload[0]]
    if kind is Kind.IF:
        return If(*kids)
    return Let(*kids)


def _queries(pattern: DFPattern, egraph: EGraph) -> list[DFQuery]:
    return [DFQuery(c, i) for i, c in enumerate(compile_dfpattern(pattern, egraph))]


class CallbackRule(Rule):
    """A `DFPatternCallback` as a saturating rule (see the module docstring)."""

    def __init__(self, callback: DFPatternCallback, name: str | None = None):
        if not isinstance(callback, DFPatternCallback) or not isinstance(callback.pattern, DFPattern):
            raise RuleError(f"expected a DFPatternCallback with a pattern, got {callback!r}")
        self.callback = callback
        self.name = name or type(callback).__name__

    def queries(self, egraph: EGraph) -> list[DFQuery]:
        return _queries(self.callback.pattern, egraph)

    def select(self, matches: list[Match]) -> list[Match]:
        """Per root class, only matches of the first alternative that matched it, as TVM's ordered
        alternatives (and its argument swap for add/multiply, tried second) would give."""
        first: dict[Handle, int] = {}
        for m in matches:
            root = m.egraph.canonical(m.roots[0])
            first[root] = min(first.get(root, m.variant), m.variant)  # type: ignore[attr-defined]
        return [m for m in matches if m.variant == first[m.egraph.canonical(m.roots[0])]]  # type: ignore

    def fire(self, m: Match) -> list[Result]:
        assert isinstance(m, DFMatch)
        out = self.callback.callback(m.pre, m.pre, m.node_map)
        if not isinstance(out, Expr):
            raise RuleError(f"callback {self.name} returned {type(out).__name__} {out!r}; it must return an IR "
                            "expression")
        if out is m.pre:
            return []
        return [Result(m.roots[0], out, m.interior)]


class _PatternProbe(Rule):
    """A rule that only finds matches (used by `find_matches`)."""

    def __init__(self, pattern: DFPattern):
        self.pattern = pattern
        self.name = f"match {pattern!r}"

    def queries(self, egraph: EGraph) -> list[DFQuery]:
        return _queries(self.pattern, egraph)

    def fire(self, m: Match) -> list[Result]:
        return []


def find_matches(pattern: DFPattern, egraph: EGraph) -> list[Handle]:
    """Classes (canonical handles, sorted) where `pattern` matches by e-matching plus its checks."""
    probe = _PatternProbe(pattern)
    key, queries = egraph.register_rule(probe)
    egraph.backend.search([key])
    frozen = egraph.refresh([q for q, _ in queries])
    egraph.backend.clear_matches([key])
    roots = set()
    for qname, mq in queries:
        for row in frozen.matches[qname]:
            vals = mq.compiled.values(row)
            if mq.compiled.accepts(egraph, vals):
                roots.add(egraph.canonical(vals[mq.compiled.root.name]))
    return sorted(roots)
