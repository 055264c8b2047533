"""Exact DAG extraction as a mixed-integer program (scipy `milp`, i.e. HiGHS).

Variables: `x[n]` (node n chosen, binary) and, for classes on a cycle of the class graph only,
an order `o[c]` in [0, K]. Constraints: a root takes one node; a class takes at most one; a
chosen node's child classes take one; a chosen node in class a with child b in the same strongly
connected component forces `o[a] >= o[b] + 1` (so no cycle can be chosen); an escaping-
intermediate constraint forbids its node together with any node outside its region (its own
class and the protected classes) that uses a protected class.
The greedy DAG result is computed first. Its cost prunes the problem (a node whose lower-bound
cost already exceeds it cannot be in a better program), and it is returned instead whenever the
solver stops (time limit) with nothing better, so ILP is never worse than greedy. The objective is
not bounded by a constraint: that dense row keeps HiGHS's heuristics from finding any feasible
point on e-graphs of ~20k nodes. `info` holds the solver status, `source` ("ilp" or "greedy"),
`fell_back`, and `gap`: the returned program's distance from HiGHS's proven lower bound (its dual
bound), 0 when proven optimal, inf when the solver proved no bound.
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


def _prune(view: EGraphView, roots: Sequence[ClassId], costs: Sequence[float],
           budget: float = math.inf) -> dict[ClassId, list[NodeId]]:
    """Candidate nodes per class reachable from `roots`: finite cost, not their own child, every
    child class has candidates, and a lower bound on any program using the node within `budget`."""
    classes = view.reachable(roots)
    cand = {c: [n for n in view.classes[c] if costs[n] < math.inf and c not in view.nodes[n].children]
            for c in classes}
    bound = _lower_bounds(view, cand, costs)
    changed = True
    while changed:
        changed = False
        for c in classes:
            keep = [n for n in cand[c] if bound[n] <= budget and all(cand.get(k) for k in view.nodes[n].children)]
            if len(keep) != len(cand[c]):
                cand[c], changed = keep, True
    for r in roots:
        if not cand[r]:
            raise ExtractionError(f"root e-class {r} has no finite-cost acyclic program")
    return cand


def _lower_bounds(view: EGraphView, cand: dict[ClassId, list[NodeId]], costs: Sequence[float],
                  passes: int = 64) -> dict[NodeId, float]:
    """A lower bound on the DAG cost of any acyclic program that uses each candidate node: its own
    cost plus the largest bound among its child classes (a class's bound is its cheapest node's).

    Bounds start at each node's own cost and only grow, so they are valid after any number of
    passes; on an acyclic class graph enough passes reach the exact fixed point.
    """
    node_bound = {n: costs[n] for ns in cand.values() for n in ns}
    class_bound = {c: min((node_bound[n] for n in ns), default=math.inf) for c, ns in cand.items()}
    for _ in range(passes):
        changed = False
        for c, ns in cand.items():
            for n in ns:
                kids = view.nodes[n].children
                b = costs[n] + max((class_bound.get(k, math.inf) for k in kids), default=0.0)
                if b > node_bound[n]:
                    node_bound[n], changed = b, True
            best = min((node_bound[n] for n in ns), default=math.inf)
            if best > class_bound[c]:
                class_bound[c], changed = best, True
        if not changed:
            break
    return node_bound


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
        cand = _prune(view, roots, costs, greedy_cost + 1e-9)
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
        integrality = np.zeros(n_vars)
        integrality[:len(nodes)] = 1
        upper = np.ones(n_vars)
        upper[len(nodes):] = big
        a = coo_matrix((vals, (rows, cols)), shape=(len(lo), n_vars)).tocsr()
        remaining = max(self.seconds - (time.perf_counter() - start), 0.1)
        res = milp(objective, constraints=LinearConstraint(a, lo, hi), integrality=integrality,
                   bounds=Bounds(np.zeros(n_vars), upper), options={"time_limit": remaining, "disp": False})
        info = {"status": res.message, "greedy_cost": greedy_cost, "variables": n_vars, "constraints": len(lo),
                "order_variables": len(cyclic), "pruned_nodes": sum(len(view.classes[c]) for c in cand) - len(nodes),
                "seconds": time.perf_counter() - start}
        dual = getattr(res, "mip_dual_bound", None)
        if res.x is not None:
            chosen = {view.nodes[n].eclass: n for n in nodes if res.x[col[n]] > 0.5}
            node_of = {c: chosen[c] for c in reachable_choice(view, chosen, roots)}
            ilp_cost = Choice(tuple(roots), node_of).dag_cost(view, costs)
            if ilp_cost <= greedy_cost:
                return Choice(tuple(roots), node_of, {**info, "source": "ilp", "fell_back": False,
                                                      "gap": _gap(ilp_cost, dual)})
        return Choice(greedy.roots, greedy.node_of, {**info, "source": "greedy", "fell_back": True,
                                                     "gap": _gap(greedy_cost, dual)})


def _gap(cost: float, dual_bound: float | None) -> float:
    """Relative distance of `cost` from the solver's proven lower bound (inf when there is none)."""
    if dual_bound is None or not math.isfinite(dual_bound):
        return math.inf
    if cost <= dual_bound + 1e-9:
        return 0.0
    return (cost - dual_bound) / max(abs(cost), 1e-12)
