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

Bottom-up choice cannot see a saving that pays only when shared: a wide matmul that replaces two
parallel ones (read through a `split` by both) costs more than either alone, so neither user picks
it. A local search (`refine`) follows: it tries switching one class to another of its nodes, and
switching together every class of the program that can read one class the program lacks (the
split of a merged call) to such a node; classes a move newly needs take their bottom-up choice,
classes no longer used leave, and a move is kept when the program's DAG cost falls and it stays
acyclic and keeps every closed-region constraint. Passes repeat until none improves, at
most `REFINE_PASSES`, and the search stops once its moves have visited `REFINE_WORK` classes per
e-node in all (work bounds, not a clock: the result is deterministic).

Guarantee: the returned choice's DAG cost is at most the tree extractor's (both are computed and
the cheaper kept, ties to greedy) and refinement (on by default; `GreedyDagExtractor(refine=False)`
leaves it out) only lowers it. It is not optimal for DAG cost;
`IlpExtractor` is.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable, ClassVar, Literal, Mapping, Sequence

import numpy as np

from ..egraph.view import ClassId, EGraphView, NodeId
from .base import Choice, CostModel, _find_cycle
from .bottom_up import Final, extract_bottom_up, with_closed_regions
from .cost import resolve_costs
from .tree import TreeExtractor

__all__ = ["GreedyDagExtractor", "refine"]

_FEW_BITS = 48
"""sets with at most this many new classes are summed bit by bit; larger ones through numpy."""
REFINE_PASSES = 4
"""passes of the local search over every move at most."""
REFINE_WORK = 64
"""classes the local search's moves may visit in all, per e-node of the view."""


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


@dataclass(frozen=True)
class GreedyDagExtractor:
    """Counts shared classes once while choosing bottom-up; fast, never worse than tree, not optimal."""

    refine: bool = True
    """run the local search (`refine`) on the bottom-up program (`refine=False`: bottom-up choice only)."""
    name: ClassVar[str] = "greedy"
    optimal_for: ClassVar[Literal["tree", "dag", "none"]] = "none"

    def extract(self, view: EGraphView, roots: Sequence[ClassId], cost: CostModel | Sequence[float]) -> Choice:
        costs = resolve_costs(view, cost)
        greedy = with_closed_regions(view, costs, lambda node_costs: self._once(view, roots, node_costs))
        tree = TreeExtractor().extract(view, roots, costs)
        greedy_cost, tree_cost = greedy.dag_cost(view, costs), tree.dag_cost(view, costs)
        if tree_cost < greedy_cost:
            best = Choice(tree.roots, tree.node_of, {**tree.info, "source": "tree", "greedy_cost": greedy_cost})
        else:
            best = Choice(greedy.roots, greedy.node_of, {**greedy.info, "source": "greedy", "tree_cost": tree_cost})
        return refine(view, best, costs, greedy.node_of) if self.refine else best

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


def refine(view: EGraphView, choice: Choice, costs: Sequence[float], fill: Mapping[ClassId, NodeId]) -> Choice:
    """`choice` improved by the local search of the module docstring; a class a move newly needs
    takes its node in `fill` (moves that need a class without one are skipped)."""
    search = _LocalSearch(view, choice, costs, fill)
    start = search.cost
    for _ in range(REFINE_PASSES):
        if not search.one_pass() or search.work > search.budget:
            break
    return Choice(choice.roots, search.program(), {**choice.info, "refined_from": start, "refine_moves": search.moves})


class _LocalSearch:
    """A program as chosen nodes with use counts, and moves evaluated by what they add and remove."""

    def __init__(self, view: EGraphView, choice: Choice, costs: Sequence[float], fill: Mapping[ClassId, NodeId]):
        self.view, self.costs, self.fill, self.roots = view, costs, fill, choice.roots
        self.node_of: dict[ClassId, NodeId] = {c: choice.node_of[c] for c in choice.classes(view)}
        self.uses: Counter[ClassId] = Counter(choice.roots)
        for n in self.node_of.values():
            self.uses.update(set(view.nodes[n].children))
        self.cost = sum(costs[n] for n in self.node_of.values())
        self.moves = 0
        self.work = 0
        """classes visited by the moves tried so far."""
        self.budget = REFINE_WORK * len(view.nodes)

    def program(self) -> dict[ClassId, NodeId]:
        return dict(sorted(self.node_of.items()))

    def one_pass(self) -> bool:
        """Try every single and shared move once, keeping those that lower the cost; True if any did."""
        improved = False
        for c in sorted(self.node_of):
            for n in self.view.classes[c]:
                if c in self.node_of and n != self.node_of[c] and self.costs[n] < math.inf:
                    improved |= self.attempt({c: n})
        readers: dict[ClassId, dict[ClassId, NodeId]] = {}  # class outside the program -> program class -> node
        for c in sorted(self.node_of):
            for n in self.view.classes[c]:
                if self.costs[n] < math.inf:
                    for k in self.view.nodes[n].children:
                        if k not in self.node_of:
                            best = readers.setdefault(k, {}).get(c)
                            if best is None or (self.costs[n], n) < (self.costs[best], best):
                                readers[k][c] = n
        for k, switches in sorted(readers.items()):
            if len(switches) > 1 and all(c in self.node_of for c in switches):
                improved |= self.attempt(switches)
        return improved

    def attempt(self, switches: Mapping[ClassId, NodeId]) -> bool:
        """Apply `switches` if the program gets cheaper and stays valid; True when applied (False,
        without trying, once the work budget is spent)."""
        if self.work > self.budget:
            return False
        view, costs = self.view, self.costs
        changed: dict[ClassId, NodeId | None] = {}
        uses: Counter[ClassId] = Counter()
        delta = 0.0

        def node(c: ClassId) -> NodeId | None:
            return changed[c] if c in changed else self.node_of.get(c)

        def walk(n: NodeId, visit: Callable[[ClassId], NodeId | None | bool]) -> bool:
            """Visit each use of a class by `n`'s children, and by the children of every node a visit
            returns (one that enters or leaves the program); False once a visit returns False."""
            stack = list(dict.fromkeys(view.nodes[n].children))
            while stack:
                k = stack.pop()
                self.work += 1
                more = visit(k)
                if more is False:
                    return False
                if more is not None:
                    stack.extend(dict.fromkeys(view.nodes[more].children))
            return True

        def add_use(k: ClassId) -> NodeId | None | bool:
            """A new use of `k`: a class outside the program enters with its node in `fill`."""
            nonlocal delta
            uses[k] += 1
            if node(k) is not None:
                return None
            if k not in self.fill:
                return False
            changed[k] = self.fill[k]
            delta += costs[self.fill[k]]
            return self.fill[k]

        def drop_use(k: ClassId) -> NodeId | None:
            """One use of `k` fewer: a class no longer used leaves the program."""
            nonlocal delta
            uses[k] -= 1
            if self.uses[k] + uses[k]:
                return None
            gone = node(k)
            changed[k] = None
            delta -= costs[gone]
            return gone

        old = {c: self.node_of[c] for c in switches}
        for c, n in switches.items():
            changed[c] = n
            delta += costs[n] - costs[old[c]]
            if not walk(n, add_use):
                return False
        for c in switches:
            walk(old[c], drop_use)
        if delta >= -1e-9 * max(abs(self.cost), 1.0):
            return False
        program = {c: n for c, n in {**self.node_of, **changed}.items() if n is not None}
        trial = Choice(self.roots, program)
        classes = trial.classes(view)
        self.work += len(classes)
        if len(classes) != len(program) or _find_cycle(view, program, classes) or trial.open_regions(view, classes):
            return False
        self.node_of = program
        self.uses.update(uses)
        self.cost += delta
        self.moves += 1
        return True
