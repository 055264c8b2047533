"""Shrinking an extraction problem without losing its optimum: what the ILP extractor solves.

Reductions and analyses, each keeping at least one optimal program:

- **unusable nodes**: infinite cost, a node that is its own child, a child class with no candidate
  left, or a lower bound on any program using it above a budget (a known program's cost);
- **dominated nodes**: node n is dropped when a node m of the same class costs no more and needs a
  subset of n's child classes (ties: the lower id stays). Swapping n for m in any program keeps it
  closed, acyclic (m's edges are some of n's) and no dearer, and breaks no closed-region
  constraint as long as m carries none of its own, so such an m never dominates;
- **mandatory classes**: a class that every program of the roots contains (the roots, and what
  every candidate of a mandatory class needs); its choice is an equality, and with one candidate
  left that node is fixed;
- **single-use classes** (`sharing`): classes that at most one chosen node can read, found by
  counting graph inputs; the ILP bounds all their users together;
- **one dominator per dropped node** is recorded, so a program using dropped nodes (the greedy
  warm start) maps to one of no greater cost that uses candidates only (`repair`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Mapping, Sequence

from ..egraph.view import ClassId, EGraphView, NodeId
from ..errors import ExtractionError
from .base import reachable_choice
from .sharing import single_use_classes

__all__ = ["Reduced", "reduce_problem", "lower_bounds"]

_ENUMERATE_SUBSETS = 6
"""nodes with at most this many distinct child classes look their subsets up; wider ones scan."""


@dataclass(frozen=True)
class Reduced:
    """Candidate nodes per class reachable from the roots, and what the reductions did."""

    candidates: dict[ClassId, list[NodeId]]
    mandatory: frozenset[ClassId]
    """classes every program of the roots contains."""
    dominator: Mapping[NodeId, NodeId]
    """a dropped dominated node -> a candidate of its class that is no dearer and needs a subset."""
    nodes_before: int
    """nodes of the reachable classes before any reduction."""
    unusable: int
    dominated: int
    single_use: frozenset[ClassId] = frozenset()
    """classes at most one chosen node can read (`sharing.single_use_classes`)."""

    @property
    def nodes_after(self) -> int:
        return sum(len(ns) for ns in self.candidates.values())

    @property
    def fixed(self) -> list[NodeId]:
        """Nodes every program of the roots uses: the one candidate of a mandatory class."""
        return sorted(ns[0] for c, ns in self.candidates.items() if c in self.mandatory and len(ns) == 1)

    def repair(self, view: EGraphView, node_of: Mapping[ClassId, NodeId],
               roots: Sequence[ClassId]) -> dict[ClassId, NodeId]:
        """`node_of` with every dropped dominated node replaced by its dominator, restricted to the
        classes the result reaches (never dearer; acyclic when `node_of` is)."""
        swapped = {}
        for c, n in node_of.items():
            while n in self.dominator:
                n = self.dominator[n]
            swapped[c] = n
        return {c: swapped[c] for c in reachable_choice(view, swapped, roots)}


def reduce_problem(view: EGraphView, roots: Sequence[ClassId], costs: Sequence[float],
                   budget: float = math.inf) -> Reduced:
    """The reductions above, for programs of `roots` no dearer than `budget`."""
    classes = view.reachable(roots)
    before = sum(len(view.classes[c]) for c in classes)
    cand = {c: [n for n in view.classes[c] if costs[n] < math.inf and c not in view.nodes[n].children]
            for c in classes}
    bound = lower_bounds(view, cand, costs, _children_first(view, cand, roots))
    cand = {c: [n for n in ns if bound[n] <= budget] for c, ns in cand.items()}
    _drop_unbuildable(view, cand)
    unusable = before - sum(len(ns) for ns in cand.values())
    dominator = _drop_dominated(view, cand, costs)
    for r in roots:
        if not cand[r]:
            raise ExtractionError(f"root e-class {r} has no finite-cost acyclic program")
    return Reduced(cand, _mandatory(view, cand, roots), dominator, before, unusable, len(dominator),
                   single_use_classes(view, cand, roots))


def _drop_unbuildable(view: EGraphView, cand: dict[ClassId, list[NodeId]]) -> None:
    """Drop nodes with a child class that has no candidate, until none is left."""
    changed = True
    while changed:
        changed = False
        for c, ns in cand.items():
            keep = [n for n in ns if all(cand.get(k) for k in view.nodes[n].children)]
            if len(keep) != len(ns):
                cand[c], changed = keep, True


def _drop_dominated(view: EGraphView, cand: dict[ClassId, list[NodeId]],
                    costs: Sequence[float]) -> dict[NodeId, NodeId]:
    """Drop every dominated candidate; returns dropped node -> a surviving dominator."""
    constrained = {x.node for x in view.closed_regions}
    dominator: dict[NodeId, NodeId] = {}
    for c, ns in cand.items():
        if len(ns) < 2:
            continue
        kids = {n: frozenset(view.nodes[n].children) for n in ns}
        best: dict[frozenset[ClassId], NodeId] = {}  # child set -> cheapest free node (lowest id on ties)
        ns = sorted(ns)
        for n in ns:
            if n not in constrained and (kids[n] not in best or costs[n] < costs[best[kids[n]]]):
                best[kids[n]] = n
        keep = []
        for n in ns:
            m = _cheapest_subset_node(kids[n], best, costs)
            if m is not None and m != n and costs[m] <= costs[n]:
                dominator[n] = m
            else:
                keep.append(n)
        cand[c] = keep
    return dominator


def _cheapest_subset_node(children: frozenset[ClassId], best: Mapping[frozenset[ClassId], NodeId],
                          costs: Sequence[float]) -> NodeId | None:
    """The cheapest node of `best` whose child set is a subset of `children` (ties: the lower id).

    Free nodes are thereby ordered by (cost, id), so domination has no cycles and every dropped
    node's dominator chain ends at a candidate."""
    if len(children) <= _ENUMERATE_SUBSETS:
        subsets = (frozenset(s) for k in range(len(children) + 1) for s in combinations(sorted(children), k))
        found = [best[s] for s in subsets if s in best]
    else:
        found = [m for s, m in best.items() if s <= children]
    return min(found, key=lambda m: (costs[m], m), default=None)


def _mandatory(view: EGraphView, cand: Mapping[ClassId, list[NodeId]], roots: Sequence[ClassId]) -> frozenset[ClassId]:
    """Classes in every program of `roots`: the least sets with need(c) = {c} + the classes that every
    candidate of c needs through its children (a least fixed point, so sound on cyclic e-graphs too)."""
    order = sorted(cand)
    bit = {c: 1 << i for i, c in enumerate(order)}
    need = dict(bit)
    changed = True
    while changed:
        changed = False
        for c in _children_first(view, cand, roots):
            common = -1
            for n in cand[c]:
                union = 0
                for k in view.nodes[n].children:
                    union |= need[k]
                common &= union
            updated = need[c] | (common if cand[c] else 0)
            if updated != need[c]:
                need[c], changed = updated, True
    required = 0
    for r in roots:
        required |= need[r]
    return frozenset(c for c in order if required & bit[c])


def _children_first(view: EGraphView, cand: Mapping[ClassId, list[NodeId]], roots: Sequence[ClassId]) -> list[ClassId]:
    """Classes reachable through candidates, children before parents where the graph is acyclic."""
    order: list[ClassId] = []
    seen: set[ClassId] = set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(sorted({k for n in cand[root] for k in view.nodes[n].children})))]
        while stack:
            c, kids = stack[-1]
            k = next(kids, None)
            if k is None:
                stack.pop()
                order.append(c)
            elif k not in seen:
                seen.add(k)
                stack.append((k, iter(sorted({j for n in cand[k] for j in view.nodes[n].children}))))
    return order


def lower_bounds(view: EGraphView, cand: Mapping[ClassId, list[NodeId]], costs: Sequence[float],
                 order: Sequence[ClassId] | None = None, passes: int = 64) -> dict[NodeId, float]:
    """A lower bound on the DAG cost of any acyclic program that uses each candidate node: its own
    cost plus the largest bound among its child classes (a class's bound is its cheapest node's).

    Bounds start at each node's own cost and only grow, so they are valid after any number of
    passes; on an acyclic class graph visited in `order` children first, two passes reach the exact
    fixed point (any order gets there in more).
    """
    node_bound = {n: costs[n] for ns in cand.values() for n in ns}
    class_bound = {c: min((node_bound[n] for n in ns), default=math.inf) for c, ns in cand.items()}
    for _ in range(passes):
        changed = False
        for c in cand if order is None else order:
            ns = cand[c]
            for n in ns:
                kids = view.nodes[n].children
                b = costs[n] + max((class_bound.get(k, math.inf) for k in kids), default=0.0)
                if b > node_bound[n]:
                    node_bound[n], changed = b, True
            best = min((node_bound[n] for n in ns), default=math.inf)
            if best > class_bound[c]:
                class_bound[c], changed = best, True
        if not changed:
            break
    return node_bound
