"""Greedy DAG extraction: each class takes the node whose needed sub-program costs least, shared
sub-terms counted once; the result is never worse than tree extraction's.

Bottom up (see `bottom_up`), a candidate node is valued at its own cost plus the cost of the
union of the sub-programs its children need, so a class reached along two paths counts once.
Those sub-programs are sets of final classes held as integer bitsets, bit k standing for the
k-th class made final (its chosen node is fixed from then on): a union is one `|`, and a set
never holds a bit above its own class's position, so early classes keep small sets. A set is
dropped once every node that reads it has been valued (only the frontier's sets are alive), so
memory stays bounded on deep graphs where sets of frozen node ids grew with the square of the
depth. Costs of the classes one child adds to the largest child's set are summed bit by bit when
there are few, and with numpy over the set's bytes otherwise.

Guarantee: the returned choice's DAG cost is at most the tree extractor's (both are computed and
the cheaper kept, ties to greedy). It is not optimal for DAG cost; `IlpExtractor` is.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Mapping, Sequence

import numpy as np

from ..egraph.view import ClassId, EGraphView
from .base import Choice, CostModel
from .bottom_up import Final, extract_bottom_up, with_closed_regions
from .cost import resolve_costs
from .tree import TreeExtractor

__all__ = ["GreedyDagExtractor"]

_FEW_BITS = 48
"""sets with at most this many new classes are summed bit by bit; larger ones through numpy."""


class _BitCosts:
    """The cost of each final class's chosen node, indexed by finalization position."""

    def __init__(self, n_classes: int):
        self.costs = np.zeros(max(n_classes, 1), dtype=np.float64)

    def total(self, bits: int) -> float:
        """Summed cost of the classes whose bits are set in `bits`."""
        if bits.bit_count() <= _FEW_BITS:
            total = 0.0
            while bits:
                low = bits & -bits
                total += self.costs[low.bit_length() - 1]
                bits ^= low
            return float(total)
        raw = np.frombuffer(bits.to_bytes((bits.bit_length() + 7) // 8, "little"), dtype=np.uint8)
        mask = np.unpackbits(raw, bitorder="little").astype(bool)
        return float(self.costs[:len(mask)][mask].sum())


class GreedyDagExtractor:
    """Counts shared classes once while choosing bottom-up; fast, never worse than tree, not optimal."""

    name: ClassVar[str] = "greedy"
    optimal_for: ClassVar[Literal["tree", "dag", "none"]] = "none"

    def extract(self, view: EGraphView, roots: Sequence[ClassId], cost: CostModel | Sequence[float]) -> Choice:
        costs = resolve_costs(view, cost)
        greedy = with_closed_regions(view, costs, lambda node_costs: self._once(view, roots, node_costs))
        tree = TreeExtractor().extract(view, roots, costs)
        greedy_cost, tree_cost = greedy.dag_cost(view, costs), tree.dag_cost(view, costs)
        if tree_cost < greedy_cost:
            return Choice(tree.roots, tree.node_of, {**tree.info, "source": "tree", "greedy_cost": greedy_cost})
        return Choice(greedy.roots, greedy.node_of, {**greedy.info, "source": "greedy", "tree_cost": tree_cost})

    @staticmethod
    def _once(view: EGraphView, roots: Sequence[ClassId], node_costs: list[float]) -> Choice:
        bit_costs = _BitCosts(len(view.classes))

        def evaluate(n: int, final: Mapping[ClassId, Final]) -> tuple[float, int]:
            kids = [final[k] for k in dict.fromkeys(view.nodes[n].children)]
            if not kids:
                return node_costs[n], 0
            base = max(kids, key=lambda f: (f.value, f.position))
            needed = base.payload
            for f in kids:
                if f is not base:
                    needed |= f.payload
            value = base.value + node_costs[n] + bit_costs.total(needed & ~base.payload)
            return value, needed

        def settle(c: ClassId, n: int, needed: int, position: int) -> int:
            if node_costs[n] > 0:  # zero-cost classes cannot change a sum: they get no bit
                bit_costs.costs[position] = node_costs[n]
                return needed | (1 << position)
            return needed

        return extract_bottom_up(view, roots, node_costs, evaluate, settle)
