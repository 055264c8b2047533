"""Greedy DAG extraction: each class takes the node whose set of needed nodes costs least.

A candidate's value is the summed cost of the union of its children's node sets plus itself,
so a sub-term shared by two children counts once. Only nodes with a positive cost enter the
sets (zero-cost nodes cannot change a sum), which keeps them small.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Sequence

from ..egraph.view import ClassId, EGraphView
from .base import Choice, CostModel
from .bottom_up import extract_bottom_up, with_exclusions
from .cost import resolve_costs

__all__ = ["GreedyDagExtractor"]


class GreedyDagExtractor:
    """Counts shared nodes once while choosing bottom-up; good, fast, but not optimal for DAG cost."""

    name: ClassVar[str] = "greedy"
    optimal_for: ClassVar[Literal["tree", "dag", "none"]] = "none"

    def extract(self, view: EGraphView, roots: Sequence[ClassId], cost: CostModel | Sequence[float]) -> Choice:
        costs = resolve_costs(view, cost)

        def once(node_costs: list[float]) -> Choice:
            def evaluate(n: int, final: dict) -> tuple[float, frozenset[int]]:
                kids = [final[k] for k in dict.fromkeys(view.nodes[n].children)]
                own = frozenset((n,)) if node_costs[n] > 0 else frozenset()
                if not kids:
                    return node_costs[n], own
                base = max(kids, key=lambda f: len(f.payload))
                extra = frozenset().union(*(f.payload for f in kids if f is not base)) - base.payload
                value = base.value + node_costs[n] + sum(node_costs[m] for m in extra)
                return value, base.payload | extra | own
            return extract_bottom_up(view, roots, node_costs, evaluate)[0]

        return with_exclusions(view, costs, once)
