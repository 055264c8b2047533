"""Bottom-up extraction in Knuth's order, shared by the tree and greedy DAG extractors.

A node becomes a candidate once all of its child classes are final; the cheapest candidate of
all is made final next (ties by class id, then node id). Children are always final before their
parents, so the choice is acyclic by construction, and costs that never decrease along an edge
make the result optimal for tree cost.
"""

from __future__ import annotations

import heapq
import math
from typing import Callable, Generic, Sequence, TypeVar

from ..egraph.view import ClassId, EGraphView, NodeId
from ..errors import ExtractionError
from .base import Choice

__all__ = ["extract_bottom_up", "with_exclusions"]

P = TypeVar("P")


class Final(Generic[P]):
    """What is known about a class once it is final: chosen node, value, extractor payload."""

    __slots__ = ("node", "value", "payload")

    def __init__(self, node: NodeId, value: float, payload: P):
        self.node, self.value, self.payload = node, value, payload


Evaluate = Callable[[NodeId, dict], "tuple[float, P]"]


def extract_bottom_up(view: EGraphView, roots: Sequence[ClassId], costs: Sequence[float],
                      evaluate: Evaluate) -> tuple[Choice, dict[ClassId, Final]]:
    """Choose a node per class reachable from `roots`; `evaluate(node, final)` values a candidate."""
    relevant = set(view.reachable(roots))
    missing: dict[NodeId, int] = {}
    heap: list[tuple[float, ClassId, NodeId]] = []
    payloads: dict[NodeId, object] = {}
    final: dict[ClassId, Final] = {}

    def offer(n: NodeId) -> None:
        value, payload = evaluate(n, final)
        if value < math.inf:
            payloads[n] = payload
            heapq.heappush(heap, (value, view.nodes[n].eclass, n))

    for c in sorted(relevant):
        for n in view.classes[c]:
            if costs[n] < math.inf:
                missing[n] = len(set(view.nodes[n].children))
                if missing[n] == 0:
                    offer(n)
    while heap:
        value, c, n = heapq.heappop(heap)
        if c in final:
            continue
        final[c] = Final(n, value, payloads.pop(n))
        for p in view.parents[c]:
            if p in missing:
                missing[p] -= 1
                if missing[p] == 0 and view.nodes[p].eclass not in final:
                    offer(p)
    unreached = [r for r in roots if r not in final]
    if unreached:
        c = unreached[0]
        ops = sorted({view.nodes[n].label() for n in view.classes[c]})
        raise ExtractionError(f"e-class {c} (nodes: {', '.join(ops)}) has no finite-cost program: "
                              "every node is illegal for the cost model or depends on a cycle")
    return Choice(tuple(roots), {c: f.node for c, f in sorted(final.items())}), final


def with_exclusions(view: EGraphView, costs: Sequence[float], extract: Callable[[list[float]], Choice]) -> Choice:
    """Re-extract with violating nodes banned until every escaping-intermediate constraint holds."""
    costs = list(costs)
    banned: list[NodeId] = []
    while True:
        choice = extract(costs)
        violated = choice.violated_exclusions(view)
        if not violated:
            return Choice(choice.roots, choice.node_of, {**choice.info, "banned_nodes": len(banned)})
        for x in violated:
            costs[x.node] = math.inf
            banned.append(x.node)
