"""What every program holding a class must also hold: rows that keep the ILP's relaxation honest.

Group the candidate classes into the strongly connected components of "a candidate of c reads k".
On a layout-grown e-graph a typical component is one value in two layouts, each class holding a
layout change of the other. An acyclic program that holds a class of a component S also holds an
**exit** of S, a chosen node that reads no class of S: follow chosen nodes from the class while they
stay in S; the walk cannot come back to a class, so it leaves S. Every exit of S reads its own
children, so S **requires** the components that every exit reaches:

    R(S) = the intersection over the exits n of S of the union over n's children k of {comp(k)} + R(comp(k))

computed children first (an exit reads other components only, so the graph of components is
acyclic). For a class a of S and a component T of R(S), a program holding a holds an exit of T:

    (candidates of a) <= (exits of T)

A component T that a single class U of R(S) requires gets no row of its own: a's row for U and U's
row for T (the candidates of U are its exits) say it already.

The per-user rows of the ILP say only that a class's direct users take no more than it, and a
half-chosen class may then be served half by its own nodes and half by a layout change of its
twin, whose other half it serves in turn: on ResNet-50's e-graph (default + layout rules) the
relaxation's bound was 7% of the optimum. With these rows it is 80%. On the zoo's six layout-grown
e-graphs (`bench_extract`), HiGHS left gaps of 54-81% after 60 s without them; with them it proves
the optimum of five in 4-22 s and leaves 0.6% on the largest (Inception-v3, 11k e-nodes), where
what the rows cannot say is that two alternatives (the program in one layout or the other) each
need their own copy of a shared value.
"""

from __future__ import annotations

from typing import Mapping

from ..egraph.view import ClassId, EGraphView, NodeId

__all__ = ["MAX_REQUIREMENTS", "strongly_connected", "Requirement", "requirements"]

MAX_REQUIREMENTS = 1_000_000
"""(class, required component) pairs above which no requirement is reported (the rows would be too many)."""

Requirement = tuple[ClassId, list[NodeId]]
"""a class a, and the exits of a component that every program holding a holds one of."""


def strongly_connected(graph: Mapping[ClassId, list[ClassId]]) -> list[list[ClassId]]:
    """The strongly connected components of `graph` (every successor a key), each one's successors'
    components before it (iterative Tarjan)."""
    index: dict[ClassId, int] = {}
    low: dict[ClassId, int] = {}
    on_stack: set[ClassId] = set()
    stack: list[ClassId] = []
    components: list[list[ClassId]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            succ = graph[v]
            if i < len(succ):
                work.append((v, i + 1))
                w = succ[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                components.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return components


def requirements(view: EGraphView, cand: Mapping[ClassId, list[NodeId]]) -> list[Requirement]:
    """Each class of `cand` with the exits of every component it requires (module docstring), except
    what other rows already say (a component of one class that every candidate of the class reads
    directly, which the ILP's per-user rows cover, or one required through a required single
    class); empty when there would be more than `MAX_REQUIREMENTS` (class, component) pairs."""
    kids = {n: frozenset(view.nodes[n].children) for ns in cand.values() for n in ns}
    components = strongly_connected({c: sorted({k for n in ns for k in kids[n]}) for c, ns in sorted(cand.items())})
    comp = {c: i for i, classes in enumerate(components) for c in classes}
    exits = [[n for c in classes for n in cand[c] if all(comp[k] != i for k in kids[n])]
             for i, classes in enumerate(components)]
    required: list[frozenset[int]] = []  # component -> the components it requires
    pairs = 0
    for i, classes in enumerate(components):
        common: set[int] | None = None
        for n in exits[i]:
            reached = set()
            for k in kids[n]:
                reached.add(comp[k])
                reached.update(required[comp[k]])
            common = reached if common is None else common & reached
            if not common:
                break
        required.append(frozenset(common or ()))
        pairs += len(classes) * len(required[i])
        if pairs > MAX_REQUIREMENTS:
            return []
    out: list[Requirement] = []
    for i, classes in enumerate(components):
        implied = set()  # required through a required single class: its own rows chain to them exactly
        for u in required[i]:
            if len(components[u]) == 1:
                implied.update(required[u])
        for t in sorted(required[i] - implied):
            for a in classes:
                if len(components[t]) == 1 and all(components[t][0] in kids[n] for n in cand[a]):
                    continue
                out.append((a, exits[t]))
    return out
