"""Tree extraction: each class takes the node with the cheapest tree cost (shared terms counted per use)."""

from __future__ import annotations

from typing import ClassVar, Literal, Sequence

from ..egraph.view import ClassId, EGraphView
from .base import Choice, CostModel
from .bottom_up import extract_bottom_up, with_exclusions
from .cost import resolve_costs

__all__ = ["TreeExtractor"]


class TreeExtractor:
    """Optimal for tree cost; what egglog's own extractor computes, in Python over the view."""

    name: ClassVar[str] = "tree"
    optimal_for: ClassVar[Literal["tree", "dag", "none"]] = "tree"

    def extract(self, view: EGraphView, roots: Sequence[ClassId], cost: CostModel | Sequence[float]) -> Choice:
        costs = resolve_costs(view, cost)

        def once(node_costs: list[float]) -> Choice:
            def evaluate(n: int, final: dict) -> tuple[float, None]:
                return node_costs[n] + sum(final[k].value for k in view.nodes[n].children), None
            return extract_bottom_up(view, roots, node_costs, evaluate)[0]

        return with_exclusions(view, costs, once)
