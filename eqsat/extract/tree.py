"""Tree extraction: each class takes the node with the cheapest tree cost (shared terms counted per use).

Tree costs double with every diamond of a DAG, so on deep graphs they pass the largest float;
they saturate there (as egglog's own extractor saturates at the largest u64), and such ties are
broken by class and node id like any other.
"""

from __future__ import annotations

import sys
from typing import ClassVar, Literal, Sequence

from ..egraph.view import ClassId, EGraphView
from .base import Choice, CostModel
from .bottom_up import extract_bottom_up, with_closed_regions
from .cost import resolve_costs

__all__ = ["TreeExtractor"]

_SATURATED = sys.float_info.max


class TreeExtractor:
    """Optimal for tree cost; what egglog's own extractor computes, in Python over the view."""

    name: ClassVar[str] = "tree"
    optimal_for: ClassVar[Literal["tree", "dag", "none"]] = "tree"

    def extract(self, view: EGraphView, roots: Sequence[ClassId], cost: CostModel | Sequence[float]) -> Choice:
        costs = resolve_costs(view, cost)

        def once(node_costs: list[float]) -> Choice:
            def evaluate(n: int, final: dict) -> tuple[float, None]:
                total = node_costs[n] + sum(final[k].value for k in view.nodes[n].children)
                return min(total, _SATURATED), None
            return extract_bottom_up(view, roots, node_costs, evaluate)

        return with_closed_regions(view, costs, once)
