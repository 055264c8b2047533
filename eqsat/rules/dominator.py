"""Dominator patterns over an e-graph: the region between parent and child, found among every form.

`dominates(parent, path, child)` says two things about the graph below a matched child
(`ir.dataflow_pattern.match`): a *local* part, every input of the child and of each path node is
the one parent, a path node or a skipped leaf (a variable or constant), and at least one is not
skipped, and a *global* part, the child post-dominates the parent. The local part is decided by
`ir.dataflow_pattern.region.decide_region`, the same function the direct matcher calls; here a
class is a node whose forms are its e-nodes that match `path` (in the order they were made), so
the region is a least fixed point over all of them, deterministically (that module's docstring).
A *leaf* class holds a variable or constant e-node; one that is not the parent is skipped: never
a path class, never in the region. On an unsaturated e-graph (one e-node per class) the region
is exactly the direct matcher's.

The global part depends on which users end up in the program, so it cannot be decided per match
in an e-graph: a callback's result carries the region's classes as an extraction constraint (see
`callback`), and `find_matches` decides it in the lowered program. Sub-patterns that `parent` or
`path` share with the rest of the pattern are matched on their own (by their `PatternIndex`), not
joined with it, where the direct matcher's walk binds them once for the whole pattern.

`PatternIndex` answers "where does this sub-pattern match" for the parent and path patterns. It
runs the sub-pattern's queries on each new snapshot; egglog reports only matches that are new
since the last run, so the index accumulates them (classes only merge, so a match stays valid).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ir.dataflow_pattern import DFPattern, DominatorPattern
from ir.dataflow_pattern.region import Stop, decide_region

from ..egraph.egraph import EGraph
from ..egraph.query import QVar
from ..egraph.terms import Handle, Kind, Term
from .dfpattern import CompiledDFPattern, compile_dfpattern
from .install import install_rule

__all__ = ["SubMatch", "Region", "PatternIndex", "pattern_index", "node_inputs", "check_row", "find_region"]


@dataclass(frozen=True)
class SubMatch:
    """One accepted match of a (sub-)pattern: its variant, row values, e-nodes and dominator regions."""

    compiled: CompiledDFPattern
    vals: dict[str, Any]
    enodes: Mapping[QVar, Term]
    regions: tuple["Region", ...]

    @property
    def root(self) -> Term:
        """The e-node the pattern's root matched."""
        return self.enodes[self.compiled.root]

    def terms(self) -> set[Term]:
        """Every e-node of the match, dominator regions included."""
        out = set(self.enodes.values())
        for r in self.regions:
            out |= r.terms()
        return out


@dataclass(frozen=True)
class Region:
    """A dominator's region: the child's class, the parent class and its match, and the path classes
    with their witnesses in the order the direct matcher visits them."""

    pattern: DominatorPattern
    child: Handle
    parent: Handle
    parent_match: SubMatch
    path: tuple[tuple[Handle, Term], ...]

    def classes(self) -> set[Handle]:
        return {self.parent, *(c for c, _ in self.path)}

    def terms(self) -> set[Term]:
        return self.parent_match.terms() | {t for _, t in self.path}


def node_inputs(nodes: Mapping[Handle, tuple[Term, ...]], term: Term) -> tuple[Handle, ...]:
    """The classes whose values flow into e-node `term` (a call's arguments, a tuple's fields, ...),
    as `IndexedGraph.inputs` gives them for IR nodes; inner functions are atomic and have none."""
    if term.kind in (Kind.CALL, Kind.GETITEM, Kind.IF):
        return term.children
    if term.kind is Kind.LET:
        return term.children[2:]
    if term.kind in (Kind.TUPLE, Kind.APPLY):
        out: list[Handle] = []
        lst = term.children[-1]
        while True:
            cell = nodes[lst][0]
            if cell.kind is not Kind.CONS:
                return tuple(out)
            out.append(cell.children[0])
            lst = cell.children[1]
    return ()


class PatternIndex:
    """Where one pattern matches in one e-graph: class -> accepted matches, for the current snapshot."""

    def __init__(self, egraph: EGraph, pattern: DFPattern):
        self.pattern = pattern
        self.name = f"index {pattern!r}"
        self._compiled = compile_dfpattern(pattern, egraph)
        self._key, queries = install_rule(egraph, self)
        self._query_names = [q for q, _ in queries]
        self._rows: dict[tuple[int, tuple], None] = {}
        self._generation = -1
        self._matches: dict[Handle, list[SubMatch]] = {}

    def queries(self, egraph: EGraph) -> list[CompiledDFPattern]:
        return self._compiled

    def matches(self, egraph: EGraph, input_only: bool = False) -> Mapping[Handle, Sequence[SubMatch]]:
        """Canonical class -> the pattern's accepted matches rooted there (with `input_only`, only
        matches whose every e-node belongs to the lowered program)."""
        if self._generation != egraph.generation:
            self._update(egraph)
        if not input_only:
            return self._matches
        inputs = egraph.input_enodes()
        kept = {c: [m for m in ms if m.terms() <= inputs] for c, ms in self._matches.items()}
        return {c: ms for c, ms in kept.items() if ms}

    def _update(self, egraph: EGraph) -> None:
        frozen = egraph.run_queries(self._key, self._query_names)
        self._generation = egraph.generation
        for i, qname in enumerate(self._query_names):
            for row in sorted(frozen.matches[qname]):
                self._rows.setdefault((i, row), None)
        matches: dict[Handle, list[SubMatch]] = {}
        rejected = []
        for i, row in self._rows:
            compiled = self._compiled[i]
            vals = compiled.values(row)
            if not compiled.accepts(egraph, vals):
                rejected.append((i, row))  # attributes and types never change: drop it for good
                continue
            sub = check_row(egraph, compiled, vals, input_only=False)
            if sub is not None:
                matches.setdefault(egraph.canonical(vals[compiled.root.name]), []).append(sub)
        for key in rejected:
            del self._rows[key]
        self._matches = {c: matches[c] for c in sorted(matches)}


def pattern_index(egraph: EGraph, pattern: DFPattern) -> PatternIndex:
    """The e-graph's index of `pattern` (made on first use, then kept current)."""
    index = egraph.indexes.get(pattern)
    if index is None:
        index = egraph.indexes[pattern] = PatternIndex(egraph, pattern)
    return index  # type: ignore[return-value]


def check_row(egraph: EGraph, compiled: CompiledDFPattern, vals: dict[str, Any], input_only: bool) -> SubMatch | None:
    """The match of a row whose Python checks passed, once every dominator in it finds its region."""
    enodes = compiled.enodes(egraph, vals)
    if input_only and not set(enodes.values()) <= egraph.input_enodes():
        return None
    regions = []
    nodes = egraph.class_nodes()
    for p, var in compiled.dominators:
        child = enodes.get(var)
        candidates = [child] if child is not None else list(nodes.get(egraph.canonical(vals[var.name]), ()))
        if input_only:
            candidates = [t for t in candidates if t in egraph.input_enodes()]
        child_class = egraph.canonical(vals[var.name])
        region = next((r for t in candidates
                       if (r := find_region(egraph, p, child_class, t, input_only)) is not None), None)
        if region is None:
            return None
        regions.append(region)
    return SubMatch(compiled, vals, enodes, tuple(regions))


def find_region(egraph: EGraph, p: DominatorPattern, child_class: Handle, child: Term,
                input_only: bool = False) -> Region | None:
    """The region of `p` below e-node `child` (of class `child_class`), decided by `decide_region`."""
    inputs = node_inputs(egraph.class_nodes(), child)
    if not inputs:
        return None
    classes = _ClassRegion(egraph, p, input_only)
    decided = decide_region(inputs, classes)
    if isinstance(decided, Stop):
        return None
    assert decided.parent is not None
    return Region(p, child_class, decided.parent, classes.parents[decided.parent][0],
                  tuple((c, sub.root) for c, sub in decided.path))


class _ClassRegion:
    """An e-graph as a `RegionGraph`: classes with their e-nodes that match the path as forms, the
    parent and path patterns matched by their `PatternIndex` (with `input_only`, in the program)."""

    strict = False

    def __init__(self, egraph: EGraph, p: DominatorPattern, input_only: bool):
        self.nodes = egraph.class_nodes()
        self.parents = pattern_index(egraph, p.parent).matches(egraph, input_only)
        self.paths = pattern_index(egraph, p.path).matches(egraph, input_only)
        self.program = egraph.input_enodes() if input_only else None

    def is_parent(self, c: Handle) -> bool:
        return c in self.parents

    def is_leaf(self, c: Handle) -> bool:
        return any(t.kind in (Kind.VAR, Kind.CONST) and (self.program is None or t in self.program)
                   for t in self.nodes.get(c, ()))

    def path_forms(self, c: Handle) -> Sequence[SubMatch]:
        return self.paths.get(c, ())

    def inputs(self, form: SubMatch) -> tuple[Handle, ...]:
        return node_inputs(self.nodes, form.root)
