"""Exact DAG extraction as a mixed-integer program (scipy `milp`, i.e. HiGHS).

Variables: `x[n]` (node n chosen, binary) and, for classes on a cycle of the class graph only,
an order `o[c]` in [0, K]. Constraints: a root takes one node; a class takes at most one; a
chosen node's child classes take one; a chosen node in class a with child b in the same strongly
connected component forces `o[a] >= o[b] + 1` (so no cycle can be chosen); an escaping-
intermediate constraint forbids its node together with any node outside its region (its own
class and the protected classes) that uses a protected class.
The greedy DAG result is computed first: it bounds the objective, and it is returned instead
whenever the solver stops (time limit) with nothing better, so ILP is never worse than greedy.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import ClassVar, Literal, Sequence

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from ..egraph.view import ClassId, EGraphView, NodeId
from ..errors import ExtractionError
from .base import Choice, CostModel, reachable_choice
from .cost import resolve_costs
from .greedy import GreedyDagExtractor

__all__ = ["IlpExtractor"]


def _prune(view: EGraphView, roots: Sequence[ClassId], costs: Sequence[float]) -> dict[ClassId, list[NodeId]]:
    """Candidate nodes per class: finite cost, not their own child, every child class has candidates."""
    classes = view.reachable(roots)
    cand = {c: [n for n in view.classes[c] if costs[n] < math.inf and c not in view.nodes[n].children]
            for c in classes}
    changed = True
    while changed:
        changed = False
        for c in classes:
            keep = [n for n in cand[c] if all(cand.get(k) for k in view.nodes[n].children)]
            if len(keep) != len(cand[c]):
                cand[c], changed = keep, True
    for r in roots:
        if not cand[r]:
            raise ExtractionError(f"root e-class {r} has no finite-cost acyclic program")
    return cand


def _sccs(graph: dict[ClassId, list[ClassId]]) -> dict[ClassId, int]:
    """Strongly connected component id of every class (iterative Tarjan)."""
    index: dict[ClassId, int] = {}
    low: dict[ClassId, int] = {}
    comp: dict[ClassId, int] = {}
    on_stack: set[ClassId] = set()
    stack: list[ClassId] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
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
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp[w] = index[v]
                    if w == v:
                        break
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comp


@dataclass
class IlpExtractor:
    """Optimal for DAG cost within `seconds`; reports the solver status and optimality gap."""

    seconds: float = 60.0
    """solver time limit; on timeout the best solution found (or greedy's) is returned."""
    name: ClassVar[str] = "ilp"
    optimal_for: ClassVar[Literal["tree", "dag", "none"]] = "dag"

    def extract(self, view: EGraphView, roots: Sequence[ClassId], cost: CostModel | Sequence[float]) -> Choice:
        costs = resolve_costs(view, cost)
        start = time.perf_counter()
        greedy = GreedyDagExtractor().extract(view, roots, costs)
        greedy_cost = greedy.dag_cost(view, costs)
        cand = _prune(view, roots, costs)
        nodes = [n for c in sorted(cand) for n in cand[c]]
        col = {n: i for i, n in enumerate(nodes)}
        graph = {c: sorted({k for n in cand[c] for k in view.nodes[n].children}) for c in sorted(cand)}
        comp = _sccs(graph)
        cyclic = sorted(c for c in cand if any(comp[k] == comp[c] for k in graph[c]))
        order_col = {c: len(nodes) + i for i, c in enumerate(cyclic)}
        n_vars = len(nodes) + len(cyclic)
        big = float(len(cyclic) + 1)
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        lo: list[float] = []
        hi: list[float] = []

        def constraint(entries: list[tuple[int, float]], lower: float, upper: float) -> None:
            r = len(lo)
            for j, v in entries:
                rows.append(r)
                cols.append(j)
                vals.append(v)
            lo.append(lower)
            hi.append(upper)

        for c in sorted(cand):
            constraint([(col[n], 1.0) for n in cand[c]], 1.0 if c in roots else 0.0, 1.0)
        for n in nodes:
            node = view.nodes[n]
            for k in dict.fromkeys(node.children):
                constraint([(col[n], 1.0)] + [(col[m], -1.0) for m in cand[k]], -math.inf, 0.0)
                if k in order_col and comp[k] == comp[node.eclass]:  # o[a] - o[b] - big * x[n] >= 1 - big
                    order = [(order_col[node.eclass], 1.0), (order_col[k], -1.0), (col[n], -big)]
                    constraint(order, 1.0 - big, math.inf)
        for x in view.exclusions:
            if x.node in col:
                inside = x.classes | {view.nodes[x.node].eclass}
                for n in nodes:
                    if view.nodes[n].eclass not in inside and x.classes.intersection(view.nodes[n].children):
                        constraint([(col[x.node], 1.0), (col[n], 1.0)], -math.inf, 1.0)
        objective = np.zeros(n_vars)
        objective[:len(nodes)] = [costs[n] for n in nodes]
        if greedy_cost < math.inf:
            constraint([(i, costs[n]) for i, n in enumerate(nodes) if costs[n]], -math.inf, greedy_cost + 1e-9)
        integrality = np.zeros(n_vars)
        integrality[:len(nodes)] = 1
        upper = np.ones(n_vars)
        upper[len(nodes):] = big
        a = coo_matrix((vals, (rows, cols)), shape=(len(lo), n_vars)).tocsr()
        remaining = max(self.seconds - (time.perf_counter() - start), 0.1)
        res = milp(objective, constraints=LinearConstraint(a, lo, hi), integrality=integrality,
                   bounds=Bounds(np.zeros(n_vars), upper), options={"time_limit": remaining, "disp": False})
        info = {"status": res.message, "gap": getattr(res, "mip_gap", None), "greedy_cost": greedy_cost,
                "variables": n_vars, "constraints": len(lo), "order_variables": len(cyclic),
                "seconds": time.perf_counter() - start}
        if res.x is None:
            return Choice(greedy.roots, greedy.node_of, {**info, "source": "greedy", "gap": math.inf})
        chosen = {view.nodes[n].eclass: n for n in nodes if res.x[col[n]] > 0.5}
        node_of = {c: chosen[c] for c in reachable_choice(view, chosen, roots)}
        choice = Choice(tuple(roots), node_of, {**info, "source": "ilp"})
        if choice.dag_cost(view, costs) > greedy_cost:
            return Choice(greedy.roots, greedy.node_of, {**info, "source": "greedy"})
        return choice
