"""The local part of `dominates(parent, path, child)`: the region between the parent and the child.

One function, `decide_region`, decides it for both matchers over a `RegionGraph`: the direct
matcher's graph, where a node is its own one form (`semantics._dominator`), and an e-graph, whose
classes hold many equivalent e-nodes (`eqsat.rules.dominator.find_region`). The global part (the
child post-dominates the parent) stays with each caller: the graph's `escape` for the direct
matcher, the lowered program for the e-graph.

1. search: depth first from the child's inputs, in order. A node met is tried as the parent
   until one matches, which is the parent; a leaf (a variable or constant) is skipped; any other
   node is a path candidate, met once, and the search goes on through the inputs of each of its
   forms that match `path`, form after form;
2. an input *counts* when it is the parent or not a leaf; a path node needs a form that matches
   `path` and has an input that counts, every such input being the parent or a path node (that
   form is its witness); the child needs an input that counts, each being the parent or a path
   node. The path is listed in search order.

What still differs between the two, and why:

* `strict` (one form per node) decides rule 2 during the search, as the direct matcher always
  has: a node that matches no path form stops it, and so does a node (the child included) none
  of whose inputs counts, once its inputs are done. So the matcher binds sub-patterns in the same
  order and the explainer reports the same first failure (it counts what matched on the way). A
  node met again counts as leading back: exact on an acyclic graph; the explainer over an e-graph
  view (`eqsat.egraph.pattern_graph`, which follows the first e-node's inputs) thereby accepts a
  cycle inside the region, as it always has.
* With several forms, a class that matches no path form, or leads nowhere, may be avoided through
  another form of its user, so the search only collects candidates and rule 2 is a least fixed
  point over them: a cycle that never reaches the parent does not count. On a graph with one form
  per node and no cycle this is the strict outcome.
* The graphs, not this function, say what matching means: the direct matcher's walk binds the
  parent (a sub-pattern shared with the rest of the pattern must meet the same node) and takes
  the parent from that binding; the e-graph matches `parent` and `path` on their own (its
  `PatternIndex`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Hashable, Iterator, Protocol, Sequence, TypeVar

__all__ = ["RegionGraph", "Region", "Stop", "decide_region"]

N = TypeVar("N", bound=Hashable)
F = TypeVar("F")


class RegionGraph(Protocol[N, F]):
    """What deciding a region needs to know of a graph whose nodes `N` have forms `F`."""

    strict: bool
    """whether each node has one form, so a failure is decided where it is met (module docstring)."""

    def is_parent(self, node: N) -> bool:
        """Whether `node` matches the parent pattern; asked in search order until one does."""

    def is_leaf(self, node: N) -> bool:
        """Whether `node` is a variable or constant, which a path skips."""

    def path_forms(self, node: N) -> Sequence[F]:
        """The forms of `node` that match the path pattern, in a fixed order."""

    def inputs(self, form: F) -> Sequence[N]:
        """The nodes a path follows from `form` (a call's arguments, never its callee)."""


@dataclass(frozen=True)
class Region(Generic[N, F]):
    """A decided region: the parent (None only when `strict` and none was met) and the path nodes
    with their witness forms, in search order."""

    parent: N | None
    path: tuple[tuple[N, F], ...]


@dataclass(frozen=True)
class Stop(Generic[N]):
    """Why no region: `path` (`node` matches no path form), `dead_end` (none of the inputs of
    `node`, None for the child, counts), `parent` (none met) or `unreached` (the child's inputs
    that count are not all the parent or path nodes)."""

    cause: str
    node: N | None = None


def _counted(inputs: Sequence[N], parent: N | None, graph: RegionGraph[N, F]) -> list[N]:
    """The inputs a path does not skip: the parent, and any node that is not a leaf."""
    return [k for k in inputs if k == parent or not graph.is_leaf(k)]


def decide_region(inputs: Sequence[N], graph: RegionGraph[N, F]) -> Region[N, F] | Stop[N]:
    """The region below a child whose inputs are `inputs` (module docstring), or why there is none."""
    found = _search(inputs, graph)
    if isinstance(found, Stop):
        return found
    parent, met = found
    if graph.strict:
        return Region(parent, tuple((n, forms[0]) for n, forms in met.items()))
    if parent is None:
        return Stop("parent")
    return _least_region(inputs, parent, met, graph)


def _search(inputs: Sequence[N], graph: RegionGraph[N, F]) -> tuple[N | None, dict[N, Sequence[F]]] | Stop[N]:
    """Rule 1: the parent and the path candidates with their path forms, in search order."""
    parent: N | None = None
    met: dict[N, Sequence[F]] = {}
    stack: list[tuple[N | None, Iterator[N], list[bool]]] = [(None, iter(inputs), [False])]
    while stack:
        node, pending, leads = stack[-1]
        n = next(pending, None)
        if n is None:
            if graph.strict and not leads[0]:
                return Stop("dead_end", node)
            stack.pop()
            continue
        if parent is None and graph.is_parent(n):
            parent = n
        if n == parent or n in met:
            leads[0] = True
            continue
        if graph.is_leaf(n):
            continue
        forms = graph.path_forms(n)
        if graph.strict and not forms:
            return Stop("path", n)
        leads[0] = True
        met[n] = forms
        stack.append((n, (k for f in forms for k in graph.inputs(f)), [False]))
    return parent, met


def _least_region(inputs: Sequence[N], parent: N, met: dict[N, Sequence[F]],
                  graph: RegionGraph[N, F]) -> Region[N, F] | Stop[N]:
    """Rule 2 as a least fixed point over the candidates, then the path from the child."""
    witness: dict[N, F | None] = {parent: None}
    changed = True
    while changed:
        changed = False
        for c in reversed(met):
            if c in witness:
                continue
            for form in met[c]:
                ins = _counted(graph.inputs(form), parent, graph)
                if ins and all(k in witness for k in ins):
                    witness[c] = form
                    changed = True
                    break
    child_inputs = _counted(inputs, parent, graph)
    if not child_inputs or not all(k in witness for k in child_inputs):
        return Stop("unreached")
    path: list[tuple[N, F]] = []
    visited: set[N] = {parent}
    stack = list(reversed(child_inputs))
    while stack:
        c = stack.pop()
        if c in visited:
            continue
        visited.add(c)
        form = witness[c]
        assert form is not None
        path.append((c, form))
        stack.extend(reversed(_counted(graph.inputs(form), parent, graph)))
    return Region(parent, tuple(path))
