"""Exact DAG extraction as a mixed-integer program, solved by HiGHS (scipy's `milp`).

The problem is first reduced (`prune.reduce_problem`): nodes that cannot be in a program cheaper
than greedy's, and nodes dominated by a no dearer node of their class that needs a subset of their
children, are dropped; classes that every program contains are found. Then:

- variables: `x[n]` per candidate node (binary) and, for classes on a cycle of the class graph
  only, an order `o[c]` in [0, K];
- a class takes one node when it is mandatory (the roots among them; a lone candidate is fixed to
  1), at most one otherwise;
- for a class a and a child class b of its candidates, the candidates of a that use b take no more
  than b's (one row per pair: tighter than a row per node, since a takes one node at most; none
  when b is mandatory);
- a chosen node in class a with child b in the same strongly connected component forces
  `o[a] >= o[b] + 1`, so no cycle can be chosen;
- an escaping-intermediate constraint forbids its node together with any node outside its region
  (its own class and the protected classes) that uses a protected class.

HiGHS runs in a worker process (`highs_worker`) that is killed when the time limit has passed by
`highs_worker.KILL_GRACE_S`: HiGHS's own limit is soft (a 60 s solve once ran 260 s).

The greedy program, its dropped nodes swapped for their dominators (never dearer), is the
fallback: when HiGHS stops (time limit) with nothing better, or is killed, it is returned, so the
result is never worse than greedy's, with its gap to the bound HiGHS proved. HiGHS is not started
from it: with presolve on, HiGHS 1.16 returns such a start as optimal under a wrong objective, and
with presolve off a started solve took 5x as long as a cold one on a 20k-node e-graph
(`bench_extract`).

`info` holds the solver `status`, `killed` (the worker was killed at the deadline), `source`
("ilp", or "greedy" for the fallback), `fell_back`, `gap` (the returned program's relative
distance from HiGHS's proven lower bound `dual_bound`: 0 when proven optimal, inf when no bound
was proven), `greedy_cost`, `fallback_cost`, and the reduction's counts (`nodes_before`,
`unusable_nodes`, `dominated_nodes`, `nodes_after`, `mandatory_classes`, `fixed_nodes`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import ClassVar, Literal, Sequence

import numpy as np
from scipy.sparse import coo_matrix

from ..egraph.view import ClassId, EGraphView, NodeId
from .base import Choice, CostModel, reachable_choice
from .cost import resolve_costs
from .greedy import GreedyDagExtractor
from .highs_worker import MilpProblem, solve_with_deadline
from .prune import Reduced, reduce_problem

__all__ = ["IlpExtractor", "IlpModel", "build_model"]

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


@dataclass(frozen=True)
class IlpModel:
    """The mixed-integer program of one reduced extraction problem (columns: nodes, then orders)."""

    nodes: list[NodeId]
    cyclic: list[ClassId]
    """classes on a cycle of the class graph, each with an order column after the node columns."""
    objective: np.ndarray
    matrix: "coo_matrix"
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray

    @property
    def n_cols(self) -> int:
        return len(self.objective)


def build_model(view: EGraphView, reduced: Reduced, costs: Sequence[float]) -> IlpModel:
    """The program described in the module docstring, over `reduced`'s candidates."""
    cand, mandatory = reduced.candidates, reduced.mandatory
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
        constraint([(col[n], 1.0) for n in cand[c]], 1.0 if c in mandatory else 0.0, 1.0)
    for c in sorted(cand):
        users: dict[ClassId, list[NodeId]] = {}
        for n in cand[c]:
            for k in dict.fromkeys(view.nodes[n].children):
                users.setdefault(k, []).append(n)
                if k in order_col and comp[k] == comp[c]:  # o[a] - o[b] - big * x[n] >= 1 - big
                    constraint([(order_col[c], 1.0), (order_col[k], -1.0), (col[n], -big)], 1.0 - big, math.inf)
        for k, ns in users.items():
            if k not in mandatory:
                constraint([(col[n], 1.0) for n in ns] + [(col[m], -1.0) for m in cand[k]], -math.inf, 0.0)
    for x in view.closed_regions:
        if x.node in col:
            inside = x.interior | {view.nodes[x.node].eclass}
            for n in nodes:
                if view.nodes[n].eclass not in inside and x.interior.intersection(view.nodes[n].children):
                    constraint([(col[x.node], 1.0), (col[n], 1.0)], -math.inf, 1.0)
    objective = np.zeros(n_vars)
    objective[:len(nodes)] = [costs[n] for n in nodes]
    col_lower = np.zeros(n_vars)
    col_lower[[col[n] for n in reduced.fixed]] = 1.0
    col_upper = np.ones(n_vars)
    col_upper[len(nodes):] = big
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lo), n_vars))
    return IlpModel(nodes, cyclic, objective, matrix, np.array(lo), np.array(hi), col_lower, col_upper)


def _problem(model: IlpModel) -> MilpProblem:
    """`model` as the solver worker's input: node columns binary, order columns continuous."""
    csr = model.matrix.tocsr()
    integrality = np.r_[np.ones(len(model.nodes)), np.zeros(len(model.cyclic))]
    return MilpProblem(model.objective, csr.data, csr.indices, csr.indptr, model.row_lower, model.row_upper,
                       model.col_lower, model.col_upper, integrality)


@dataclass
class IlpExtractor:
    """Optimal for DAG cost within `seconds`; reports the solver status and optimality gap."""

    seconds: float = 60.0
    """time limit for the whole extraction (greedy and reduction included); on the limit the best
    program found is returned with its gap. HiGHS runs in a worker process that is killed
    `highs_worker.KILL_GRACE_S` past the limit, so `extract` returns within `seconds` plus that
    margin (or, when greedy and the reduction alone take longer, just after them)."""
    name: ClassVar[str] = "ilp"
    optimal_for: ClassVar[Literal["tree", "dag", "none"]] = "dag"

    def extract(self, view: EGraphView, roots: Sequence[ClassId], cost: CostModel | Sequence[float]) -> Choice:
        costs = resolve_costs(view, cost)
        begin = time.perf_counter()
        greedy = GreedyDagExtractor().extract(view, roots, costs)
        greedy_cost = greedy.dag_cost(view, costs)
        reduced = reduce_problem(view, roots, costs, greedy_cost * (1 + 1e-9) + 1e-9)
        fallback = Choice(tuple(roots), reduced.repair(view, greedy.node_of, roots))
        fallback_cost = fallback.dag_cost(view, costs)
        model = build_model(view, reduced, costs)
        remaining = max(self.seconds - (time.perf_counter() - begin), 0.0)
        result = solve_with_deadline(_problem(model), remaining)
        status, values, dual = result.status, result.x, result.dual_bound
        info = {"status": status, "killed": result.killed, "greedy_cost": greedy_cost,
                "fallback_cost": fallback_cost, "dual_bound": dual,
                "nodes_before": reduced.nodes_before, "unusable_nodes": reduced.unusable,
                "dominated_nodes": reduced.dominated, "nodes_after": reduced.nodes_after,
                "mandatory_classes": len(reduced.mandatory), "fixed_nodes": len(reduced.fixed),
                "variables": model.n_cols, "constraints": len(model.row_lower), "order_variables": len(model.cyclic)}
        if values is not None:
            chosen = {view.nodes[n].eclass: n for n, v in zip(model.nodes, values) if v > 0.5}
            found = Choice(tuple(roots), {c: chosen[c] for c in reachable_choice(view, chosen, roots)})
            cost_found = found.dag_cost(view, costs)
            if cost_found <= fallback_cost:
                return Choice(found.roots, found.node_of, {**info, "source": "ilp", "fell_back": False,
                                                           "gap": _gap(cost_found, dual),
                                                           "seconds": time.perf_counter() - begin})
        return Choice(fallback.roots, fallback.node_of, {**info, "source": "greedy", "fell_back": True,
                                                         "gap": _gap(fallback_cost, dual),
                                                         "seconds": time.perf_counter() - begin})


def _gap(cost: float, dual_bound: float | None) -> float:
    """Relative distance of `cost` from the solver's proven lower bound (inf when there is none)."""
    if dual_bound is None or not math.isfinite(dual_bound):
        return math.inf
    if cost <= dual_bound + 1e-9:
        return 0.0
    return (cost - dual_bound) / max(abs(cost), 1e-12)
