"""Bottom-up extraction in Knuth's order, shared by the tree and greedy DAG extractors.

A node becomes a candidate once all of its child classes are final; the cheapest candidate of
all is made final next (ties by class id, then node id). Children are always final before their
parents, so the choice is acyclic by construction, and costs that never decrease along an edge
make the result optimal for tree cost.

An extractor may keep a payload per final class (the greedy DAG extractor keeps the set of
classes the choice needs). A payload is dropped as soon as every node that could read it has
been valued, so at any time only the payloads of the frontier between final and open classes
are alive.
"""

from __future__ import annotations

import heapq
import math
from typing import Callable, Generic, Mapping, Sequence, TypeVar

from ..egraph.view import ClassId, EGraphView, NodeId
from ..errors import ExtractionError
from .base import Choice

__all__ = ["Final", "extract_bottom_up", "with_closed_regions"]

P = TypeVar("P")


class Final(Generic[P]):
    """What is known about a class once it is final: chosen node, value, position, extractor payload."""

    __slots__ = ("node", "value", "position", "payload")

    def __init__(self, node: NodeId, value: float, position: int, payload: P | None):
        self.node, self.value, self.position, self.payload = node, value, position, payload


Evaluate = Callable[[NodeId, Mapping[ClassId, Final]], "tuple[float, P]"]
"""(node, final classes so far) -> the node's value and a payload, read once all its children are final."""
Settle = Callable[[ClassId, NodeId, "P", int], "P"]
"""(class, chosen node, its candidate payload, the class's position in finalization order) -> kept payload."""


def extract_bottom_up(view: EGraphView, roots: Sequence[ClassId], costs: Sequence[float],
                      evaluate: Evaluate, settle: Settle | None = None) -> Choice:
    """Choose a node per class reachable from `roots`; `evaluate(node, final)` values a candidate and
    `settle` (optional) turns the chosen candidate's payload into the one its parents will read."""
    relevant = set(view.reachable(roots))
    missing: dict[NodeId, int] = {}     # candidate node -> child classes not final yet; -1 once it is dead
    readers: dict[ClassId, int] = {}    # class -> candidate nodes that will still read its payload
    heap: list[tuple[float, ClassId, NodeId]] = []
    payloads: dict[NodeId, object] = {}
    final: dict[ClassId, Final] = {}

    def done_reading(n: NodeId) -> None:
        for k in dict.fromkeys(view.nodes[n].children):
            readers[k] -= 1
            if readers[k] == 0 and k in final:
                final[k].payload = None

    def offer(n: NodeId) -> None:
        value, payload = evaluate(n, final)
        done_reading(n)
        if value < math.inf:
            payloads[n] = payload
            heapq.heappush(heap, (value, view.nodes[n].eclass, n))

    for c in sorted(relevant):
        for n in view.classes[c]:
            if costs[n] < math.inf:
                kids = dict.fromkeys(view.nodes[n].children)
                missing[n] = len(kids)
                for k in kids:
                    readers[k] = readers.get(k, 0) + 1
    for n, count in list(missing.items()):
        if count == 0:
            offer(n)
    while heap:
        value, c, n = heapq.heappop(heap)
        if c in final:
            continue
        payload = payloads.pop(n)
        if settle is not None:
            payload = settle(c, n, payload, len(final))
        final[c] = Final(n, value, len(final), payload if readers.get(c, 0) else None)
        for other in view.classes[c]:  # the class is decided: its other candidates will never be valued
            if missing.get(other, -1) > 0:
                missing[other] = -1
                done_reading(other)
            payloads.pop(other, None)
        for p in view.parents[c]:
            if missing.get(p, -1) > 0:
                missing[p] -= 1
                if missing[p] == 0:
                    offer(p)
    unreached = [r for r in roots if r not in final]
    if unreached:
        c = unreached[0]
        ops = sorted({view.nodes[n].label() for n in view.classes[c]})
        raise ExtractionError(f"e-class {c} (nodes: {', '.join(ops)}) has no finite-cost program: "
                              "every node is illegal for the cost model or depends on a cycle")
    return Choice(tuple(roots), {c: f.node for c, f in sorted(final.items())})


def with_closed_regions(view: EGraphView, costs: Sequence[float], extract: Callable[[list[float]], Choice]) -> Choice:
    """Re-extract with violating nodes banned until every closed-region constraint holds."""
    costs = list(costs)
    banned: list[NodeId] = []
    while True:
        choice = extract(costs)
        violated = choice.open_regions(view)
        if not violated:
            return Choice(choice.roots, choice.node_of, {**choice.info, "banned_nodes": len(banned)})
        for x in violated:
            costs[x.node] = math.inf
            banned.append(x.node)
