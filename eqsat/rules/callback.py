"""`DFPatternCallback` objects as saturating rules, and e-matching of single patterns.

What a callback sees for one match:

- `pre` (and `post`, the same expression: an e-graph has no "before" and "after" of a rewrite) is
  the match rebuilt as IR from the e-nodes that matched, whichever form of their classes they
  are; a dominator's parent and path come from the region found among every form (see
  `dominator`). A class at a pattern leaf becomes its constant when the class holds one, else its
  graph variable when it holds one, else a typed placeholder variable (its inputs are not rebuilt).
- `node_map` maps each pattern node to the expressions it bound, as the direct matcher's does
  (a dominator's path node lists every path node, in the direct matcher's visiting order).

The callback's result is merged into the root's class. The classes of the match's inner nodes,
and of a dominator's parent and path (not the leaves its paths skip, which may have other users,
as a shared weight does), go with it as a closed region (`ClosedRegion`): if the result is extracted, no
node outside the region may use them (TVM's `rewrite` rejects matches whose inner nodes escape,
and requires the child to post-dominate the parent; here the e-graph keeps both programs and
extraction decides, since which users remain depends on what is extracted).

`rewrite_once=True` (TVM: the callback retires after its first pass that changed the graph)
makes the callback see only the input program: it fires on matches whose e-nodes (dominator
regions included) all come from the lowered program, never on e-nodes that its own results or
other rules created, so it cannot rewrite its own output. Leaf classes may hold any form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import ir
from ir import Expr, Var
from ir.dataflow_pattern import DFPattern, DFPatternCallback
from ir.dataflow_pattern.indexed_graph import IndexedGraph
from ir.visitor import post_order_from

from ..egraph.egraph import EGraph, build_node
from ..egraph.query import QVar
from ..egraph.terms import Handle, Kind, Term
from ..errors import RuleError
from .dfpattern import CompiledDFPattern, compile_dfpattern
from .dominator import Region, SubMatch, check_row, pattern_index
from .match import Match
from .rule import RETRY_LATER, Result, Rule

__all__ = ["DFMatch", "DFQuery", "CallbackRule", "find_matches"]


@dataclass
class DFMatch(Match):
    """A match of a dataflow pattern, rebuilt as IR (`pre`) with the pattern's `node_map`."""

    pre: Expr | None = None
    node_map: dict[DFPattern, list[Expr]] = field(default_factory=dict)
    interior: frozenset[Handle] = frozenset()
    variant: int = 0
    """index of the pattern alternative that matched, in the order TVM's matcher tries them."""


class _Builder:
    """IR for one match: its e-nodes as matched, dominator regions from their witnesses, leaf classes
    as constants, variables or placeholders (one IR node per class)."""

    def __init__(self, egraph: EGraph):
        self.egraph = egraph
        self.nodes = egraph.class_nodes()
        self.leaves: dict[int, Handle] = {}
        """id of every leaf handed out -> the class it stands for."""
        self.built: dict[Handle, Any] = {}
        self.witness: dict[Handle, Term] = {}

    def leaf(self, handle: Handle) -> Expr:
        """The class's constant, else its variable, else a typed placeholder."""
        forms = self.nodes.get(handle, ())
        term = next((t for t in forms if t.kind is Kind.CONST), None) or next(
            (t for t in forms if t.kind is Kind.VAR), None)
        if term is None:
            expr: Expr = Var(f"?{handle}", self.egraph.type_of(handle))
        elif term.kind is Kind.CONST:
            expr = self.egraph.constants[term.payload[0]]
        else:
            expr = self.egraph.variables[term.payload[0]]
        self.leaves[id(expr)] = handle
        return expr

    def cls(self, handle: Handle) -> Any:
        """IR of a class: its region witness when it has one (lists structurally), else a leaf."""
        stack = [(handle, False)]
        while stack:
            h, expanded = stack.pop()
            if h in self.built:
                continue
            term = self.witness.get(h)
            forms = self.nodes.get(h, ())
            if term is None and forms and forms[0].kind in (Kind.NIL, Kind.CONS):
                term = forms[0]
            if term is None:
                self.built[h] = self.leaf(h)
            elif not expanded:
                stack.append((h, True))
                stack.extend((k, False) for k in term.children if k not in self.built)
            else:
                self.built[h] = _node(self.egraph, term.kind, term.payload, [self.built[k] for k in term.children])
        return self.built[handle]

    def match(self, sub: SubMatch, node_map: dict[DFPattern, list[Expr]]) -> dict[QVar, Any]:
        """IR for every variable of a match (regions first); its bindings are added to `node_map`."""
        for region in sub.regions:
            self.region(region, node_map)
        c = sub.compiled
        defining = {a.out: a for a in c.query.atoms}
        exprs: dict[QVar, Any] = {}
        for var in _children_first(defining):
            term, atom_children = sub.enodes[var], defining[var].children
            kids = [exprs[k] if k in exprs else self.cls(self.egraph.canonical(sub.vals[k.name]))
                    for k in atom_children]
            exprs[var] = _node(self.egraph, term.kind, term.payload, kids)
        for p, var in c.bound:
            node_map.setdefault(p, []).append(exprs[var] if var in exprs
                                              else self.cls(self.egraph.canonical(sub.vals[var.name])))
        return exprs

    def region(self, region: Region, node_map: dict[DFPattern, list[Expr]]) -> None:
        parent = self.match(region.parent_match, node_map)[region.parent_match.compiled.root]
        self.built.setdefault(region.parent, parent)
        self.witness.update(region.path)
        node_map[region.pattern.path] = [self.cls(c) for c, _ in region.path]


def _children_first(defining: Mapping[QVar, Any]) -> list[QVar]:
    """The atoms' output variables, each after the atom variables its e-node uses."""
    return list(post_order_from(defining, lambda var: [k for k in defining[var].children if k in defining]))


def _node(egraph: EGraph, kind: Kind, payload: tuple, kids: list) -> Any:
    """The IR node of an e-node whose children are built (a call's payload holds its attrs key)."""
    if kind is Kind.CALL:
        payload = (payload[0], egraph.attrs[payload[1]])
    return build_node(egraph, kind, payload, kids)


@dataclass(frozen=True)
class DFQuery:
    """A compiled pattern variant whose rows decode to `DFMatch`es (only the input program's e-nodes
    when `input_only`)."""

    compiled: CompiledDFPattern
    variant: int = 0
    input_only: bool = False

    @property
    def query(self):
        return self.compiled.query

    def decode(self, egraph: EGraph, row: tuple) -> DFMatch | None | object:
        c = self.compiled
        vals = c.values(row)
        if not c.accepts(egraph, vals):
            return None
        sub = check_row(egraph, c, vals, self.input_only)
        if sub is None:  # a dominator region may complete once its classes gain forms
            return RETRY_LATER if c.dominators else None
        builder = _Builder(egraph)
        node_map: dict[DFPattern, list[Expr]] = {}
        root = builder.match(sub, node_map)[c.root]
        try:
            ir.infer_type(root)
        except ir.IRError:  # e.g. a placeholder standing for a whole tuple the pattern indexes into
            return None
        m = DFMatch(egraph, (vals[c.root.name],), variant=self.variant)
        m.placeholders.update(builder.leaves)
        m.pre = root
        m.node_map = node_map
        interior = c.interior(egraph, vals)
        for region in _regions(sub):
            interior |= region.classes()
        m.interior = frozenset(interior)
        return m


def _regions(sub: SubMatch) -> list[Region]:
    """Every dominator region of a match, nested ones (inside a parent's match) included."""
    out: list[Region] = []
    stack = list(sub.regions)
    while stack:
        region = stack.pop()
        out.append(region)
        stack.extend(region.parent_match.regions)
    return out


class CallbackRule(Rule):
    """A `DFPatternCallback` as a saturating rule (see the module docstring)."""

    def __init__(self, callback: DFPatternCallback, name: str | None = None):
        if not isinstance(callback, DFPatternCallback) or not isinstance(callback.pattern, DFPattern):
            raise RuleError(f"expected a DFPatternCallback with a pattern, got {callback!r}")
        self.callback = callback
        self.name = name or type(callback).__name__

    def queries(self, egraph: EGraph) -> list[DFQuery]:
        return [DFQuery(c, i, bool(self.callback.rewrite_once))
                for i, c in enumerate(compile_dfpattern(self.callback.pattern, egraph))]

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


def _post_dominated(egraph: EGraph, region: Region) -> bool:
    """Whether, in some lowered program, a node of the child's class post-dominates one of the parent's."""
    for i, (root, by_class) in enumerate(egraph.program_nodes()):
        children, parents = by_class.get(region.child, ()), by_class.get(region.parent, ())
        if not children or not parents:
            continue
        graph = egraph.indexes.get(("program-graph", i))
        if graph is None:
            graph = egraph.indexes[("program-graph", i)] = IndexedGraph(root)
        if any(graph.dominates(c, p) for c in children for p in parents):  # type: ignore[attr-defined]
            return True
    return False


def find_matches(pattern: DFPattern, egraph: EGraph) -> list[Handle]:
    """Classes (canonical handles, sorted) where `pattern` matches some form of the class.

    Dominators: the local part is decided over every form (see `dominator`), the post-dominance
    part in the lowered program, between the IR nodes lowered into the child's and the parent's
    classes (a class no program node was lowered into never passes). On an unsaturated e-graph
    this gives the classes of the direct matcher's `find_matches` on the lowered program.
    """
    if not isinstance(pattern, DFPattern):
        compile_dfpattern(pattern, egraph)  # raises the error that names what was given
    egraph.refresh()
    matches = pattern_index(egraph, pattern).matches(egraph)
    return sorted(c for c, subs in matches.items()
                  if any(all(_post_dominated(egraph, r) for r in _regions(sub)) for sub in subs))
