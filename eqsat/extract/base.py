"""The extraction interface: a cost model per e-node, a `Choice` of one node per class, checks.

Extractors differ only in how they choose; every `Choice` is measured with the same ruler
(`dag_cost`: each chosen e-node counted once) and validated with the same `check`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Mapping, Protocol, Sequence

from ir import Attrs
from ir.types import Type
from ir.visitor import post_order_from

from ..egraph.view import ClassId, EGraphView, NodeId
from ..errors import ExtractionError

__all__ = ["CostModel", "OpCount", "Choice", "Extractor", "reachable_choice"]


class CostModel(Protocol):
    """Cost of one op call given its op name, attributes and input/output types.

    Costs must be non-negative; `math.inf` marks a node that is illegal on the target (it is never
    extracted). `strategies.CostModel(target)` implements this protocol (microseconds).
    """

    def node_cost(self, op_name: str, attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> float: ...


@dataclass(frozen=True)
class OpCount:
    """Every op call costs 1 (structural nodes such as tuples and constants cost 0)."""

    def node_cost(self, op_name: str, attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> float:
        return 1.0


def reachable_choice(view: EGraphView, node_of: Mapping[ClassId, NodeId],
                     roots: Sequence[ClassId]) -> list[ClassId]:
    """Classes reachable from `roots` through the chosen nodes, in a deterministic order.

    Raises `ExtractionError` naming the first reachable class that has no chosen node.
    """
    order: list[ClassId] = []
    seen: set[ClassId] = set()
    stack = list(reversed(roots))
    while stack:
        c = stack.pop()
        if c in seen:
            continue
        seen.add(c)
        order.append(c)
        if c not in node_of:
            raise ExtractionError(f"e-class {c} is used but no node is chosen for it")
        stack.extend(reversed(view.nodes[node_of[c]].children))
    return order


@dataclass(frozen=True)
class Choice:
    """One e-node per e-class (only classes reachable from `roots` matter); `info` holds extractor stats."""

    roots: tuple[ClassId, ...]
    node_of: Mapping[ClassId, NodeId]
    info: Mapping[str, Any] = field(default_factory=dict)

    def classes(self, view: EGraphView) -> list[ClassId]:
        return reachable_choice(view, self.node_of, self.roots)

    def check(self, view: EGraphView) -> None:
        """Raise `ExtractionError` unless roots are chosen, choices lie in their classes, the chosen
        program is closed and acyclic, and every closed-region constraint holds."""
        for c in self.roots:
            if c not in view.classes:
                raise ExtractionError(f"root e-class {c} is not in the e-graph")
        classes = self.classes(view)
        for c in classes:
            n = self.node_of[c]
            if not 0 <= n < len(view.nodes) or view.nodes[n].eclass != c:
                raise ExtractionError(f"e-class {c}: chosen node {n} belongs to another class")
        cycle = _find_cycle(view, self.node_of, classes)
        if cycle:
            raise ExtractionError(f"the chosen program has a cycle through e-classes {cycle}")
        violated = self.open_regions(view, classes)
        if violated:
            x = violated[0]
            raise ExtractionError(f"node {x.node} ({view.nodes[x.node].label()}) is extracted, but its "
                                  f"intermediate e-classes {sorted(x.interior)} are used outside its region")

    def open_regions(self, view: EGraphView, classes: Sequence[ClassId] | None = None) -> list:
        """The constraints broken by this choice: an extracted node whose protected classes are used by
        a chosen node outside its region (neither the node itself nor one of the protected classes)."""
        classes = self.classes(view) if classes is None else classes
        users: dict[ClassId, set[ClassId]] = {}
        for c in classes:
            for k in view.nodes[self.node_of[c]].children:
                users.setdefault(k, set()).add(c)
        reachable = set(classes)
        out = []
        for x in view.closed_regions:
            owner = view.nodes[x.node].eclass
            if owner in reachable and self.node_of[owner] == x.node and any(
                    users.get(k, set()) - x.interior - {owner} for k in x.interior):
                out.append(x)
        return out

    def dag_cost(self, view: EGraphView, costs: Sequence[float]) -> float:
        """Sum of the chosen nodes' costs, each reachable class counted once."""
        return float(sum(costs[self.node_of[c]] for c in self.classes(view)))

    def tree_cost(self, view: EGraphView, costs: Sequence[float]) -> float:
        """Cost of the program written as a tree (a shared sub-term counted once per use)."""
        total: dict[ClassId, float] = {}
        for c in _children_first(view, self.node_of, self.roots):
            n = self.node_of[c]
            total[c] = costs[n] + sum(total[k] for k in view.nodes[n].children)
        return float(sum(total[r] for r in self.roots))

    def op_counts(self, view: EGraphView) -> Counter[str]:
        """How many chosen call nodes each op has."""
        return Counter(view.nodes[self.node_of[c]].op for c in self.classes(view)
                       if view.nodes[self.node_of[c]].op is not None)


def _children_first(view: EGraphView, node_of: Mapping[ClassId, NodeId], roots: Sequence[ClassId]) -> list[ClassId]:
    """Reachable classes of an acyclic choice, every class after its children."""
    return list(post_order_from(roots, lambda c: view.nodes[node_of[c]].children))


def _find_cycle(view: EGraphView, node_of: Mapping[ClassId, NodeId], classes: Sequence[ClassId]) -> list[ClassId]:
    """A cycle among the chosen nodes (as a class list), or [] when the choice is acyclic."""
    state: dict[ClassId, int] = {}  # 1 on the stack, 2 done
    for start in classes:
        if start in state:
            continue
        stack: list[tuple[ClassId, int]] = [(start, 0)]
        path: list[ClassId] = []
        while stack:
            c, i = stack.pop()
            kids = view.nodes[node_of[c]].children
            if i == 0:
                state[c] = 1
                path.append(c)
            if i < len(kids):
                stack.append((c, i + 1))
                k = kids[i]
                if state.get(k) == 1:
                    return path[path.index(k):] + [k]
                if k not in state:
                    stack.append((k, 0))
            else:
                state[c] = 2
                path.pop()
    return []


class Extractor(Protocol):
    """Chooses one e-node per reachable e-class to minimize a cost."""

    name: ClassVar[str]
    optimal_for: ClassVar[Literal["tree", "dag", "none"]]

    def extract(self, view: EGraphView, roots: Sequence[ClassId], costs: Sequence[float]) -> Choice: ...
