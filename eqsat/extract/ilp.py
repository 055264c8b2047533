"""Exact DAG extraction as a mixed-integer program, solved by HiGHS (scipy's `milp`).

The problem is first reduced (`prune.reduce_problem`): nodes that cannot be in a program cheaper
than greedy's, and nodes dominated by a no dearer node of their class that needs a subset of their
children, are dropped; classes that every program contains are found. Then:

- variables: `x[n]` per candidate node (binary), nothing else;
- a class takes one node when it is mandatory (the roots among them; a lone candidate is fixed to
  1), at most one otherwise;
- for a class a and a child class b of its candidates, the candidates of a that use b take no more
  than b's (one row per pair: tighter than a row per node, since a takes one node at most; none
  when b is mandatory); for a single-use class b (`sharing`: at most one chosen node reads it) one
  row holds all its users, of every class, to b's candidates (to 1 when b is mandatory): without
  it the relaxation lets one class serve several half-chosen users at the price of one, which on
  an AC-grown chain left a 27% gap after 60 s;
- cycles: for a set T of classes, an acyclic program that takes a class of T must also take a
  node of T with no child in T; so for each a in T, a's candidates that use T take no more than
  the other T classes' candidates that use none (`cut_rows`). These cuts are added up
  front for every two classes that use each other (a layout change each way), and lazily for
  longer cycles: the program is solved, a cycle of each strongly connected component of the
  chosen nodes is cut, and it is solved again within the time left, until the program is acyclic.
  Every solve's bound is a lower bound of the whole problem. They replace order variables with
  big-M rows (`o[a] >= o[b] + 1 - K (1 - x[n])`), whose relaxation is weak;
- requirements (`requires`): a class takes no more than the ways out of each strongly connected
  component that every program holding it needs (for a class of a layout-grown e-graph: the value
  it is computed from, in whichever layout). Without them HiGHS left 54-81% gaps after 60 s on
  the zoo's layout-grown e-graphs (`bench_extract`): half-chosen twins (one value in two layouts)
  served each other, layer after layer, and the relaxation paid for a few percent of any program;
- a closed-region constraint forbids its node together with any node outside its region
  (its own class and the protected classes) that uses a protected class.

Each solve starts with the linear relaxation (`RELAXATION_SHARE` of the time left): when its
optimum is integral it is the program's optimum, with no branching. HiGHS's mixed-integer presolve
alone ran past 140 s on a 40k-e-node AC-grown chain whose relaxation (single-use rows) solves in
11 s and is integral; a fractional relaxation still gives its bound to the mixed-integer solve that
follows in the time left.

HiGHS runs in a worker process (`highs_worker`) that is killed when the time limit has passed by
`highs_worker.KILL_GRACE_S`: HiGHS's own limit is soft (a 60 s solve once ran 260 s). The limit
covers the whole extraction: building the program checks it as it goes (`build_model(deadline=)`),
no solve starts once it has passed, and every solve is killed by the limit plus that grace, so
`extract` returns within `seconds + KILL_GRACE_S` (or just after greedy and the reduction, which
are never cut short, when they alone take longer), with greedy's program when nothing better came.

The greedy program (refined by its local search), its dropped nodes swapped for their dominators (never dearer), is the
fallback: when HiGHS stops (time limit) with nothing better, or is killed, it is returned, so the
result is never worse than greedy's, with its gap to the bound HiGHS proved. HiGHS is not started
from it: with presolve on, HiGHS 1.16 returns such a start as optimal under a wrong objective, and
with presolve off a started solve took 5x as long as a cold one on a 20k-node e-graph
(`bench_extract`).

`info` holds the solver `status` (of the last solve), `killed` (the worker was killed at the
deadline), `pair_cuts`, `requirement_rows`, `cycle_cuts` (added lazily), `rounds` (solves), `source`
("ilp", or "greedy" for the fallback), `fell_back`, `gap` (the returned program's relative
distance from HiGHS's proven lower bound `dual_bound`: 0 when proven optimal, inf when no bound
was proven), `greedy_cost`, `fallback_cost`, `past_deadline` (only when the limit passed while the
program was being built, so nothing was solved), and the reduction's counts (`nodes_before`,
`unusable_nodes`, `dominated_nodes`, `nodes_after`, `mandatory_classes`, `fixed_nodes`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import ClassVar, Literal, Mapping, Sequence

import numpy as np
from scipy.sparse import coo_matrix

from ..egraph.view import ClassId, EGraphView, NodeId
from .base import Choice, CostModel, reachable_choice
from .cost import resolve_costs
from .greedy import GreedyDagExtractor
from .highs_worker import MilpProblem, MilpResult, solve_with_deadline
from .prune import Reduced, reduce_problem
from .requires import requirements, strongly_connected

__all__ = ["IlpExtractor", "IlpModel", "build_model", "PastDeadline"]

RELAXATION_SHARE = 0.5
"""share of a solve's time the linear relaxation may take before the mixed-integer solve starts."""
_INTEGRAL = 1e-6
"""a relaxed solution whose every value is this close to 0 or 1 is taken as integral."""


_OUT_OF_TIME = "Time limit reached"
"""the status of a solve (or a model) that the time limit left unfinished or unstarted."""


class PastDeadline(Exception):
    """The extraction's time limit passed while its program was being built."""


def _check(deadline: float) -> None:
    """Raise `PastDeadline` once `time.perf_counter()` has reached `deadline`."""
    if time.perf_counter() >= deadline:
        raise PastDeadline

@dataclass(frozen=True)
class IlpModel:
    """The mixed-integer program of one reduced extraction problem: one binary column per node."""

    nodes: list[NodeId]
    objective: np.ndarray
    matrix: "coo_matrix"
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    columns: Mapping[ClassId, list[tuple[int, frozenset[ClassId]]]]
    """class -> (column, child classes) of each candidate: what a cycle cut reads."""
    pair_cuts: int
    """cuts made up front, one per pair of classes whose candidates use each other."""
    requirement_rows: int
    """rows of `requires.requirements`."""

    @property
    def n_cols(self) -> int:
        return len(self.objective)

    def with_cuts(self, cycles: Sequence[Sequence[ClassId]]) -> "IlpModel":
        """This program with the cuts of each class cycle in `cycles` (`cut_rows`)."""
        new = [row for cycle in cycles for row in cut_rows(self.columns, cycle)]
        base = self.matrix.shape[0]
        rows = np.concatenate([self.matrix.row] + [np.full(len(r), base + i) for i, r in enumerate(new)])
        cols = np.concatenate([self.matrix.col] + [np.array([j for j, _ in r], dtype=int) for r in new])
        vals = np.concatenate([self.matrix.data] + [np.array([v for _, v in r]) for r in new])
        matrix = coo_matrix((vals, (rows, cols)), shape=(base + len(new), self.n_cols))
        return replace(self, matrix=matrix, row_lower=np.r_[self.row_lower, np.full(len(new), -math.inf)],
                       row_upper=np.r_[self.row_upper, np.zeros(len(new))])


def cut_rows(columns: Mapping[ClassId, list[tuple[int, frozenset[ClassId]]]],
             cycle: Sequence[ClassId]) -> list[list[tuple[int, float]]]:
    """The cuts of the class set T of `cycle` over `IlpModel.columns`: for each a in T, the candidates
    of a that use a class of T take no more than the candidates of the other classes of T that use
    none (an acyclic program that enters T must leave it through such a candidate)."""
    inside = frozenset(cycle)
    using = {c: [j for j, kids in columns[c] if kids & inside] for c in inside}
    leaving = {c: [j for j, kids in columns[c] if not kids & inside] for c in inside}
    return [[(j, 1.0) for j in using[a]] + [(j, -1.0) for c in sorted(inside - {a}) for j in leaving[c]]
            for a in sorted(inside)]


def build_model(view: EGraphView, reduced: Reduced, costs: Sequence[float], deadline: float = math.inf) -> IlpModel:
    """The program described in the module docstring over `reduced`'s candidates, with the cuts of
    every two classes that use each other; `PastDeadline` once `time.perf_counter()` reaches
    `deadline` (checked before each step and every class or region)."""
    cand, mandatory = reduced.candidates, reduced.mandatory
    nodes = [n for c in sorted(cand) for n in cand[c]]
    col = {n: i for i, n in enumerate(nodes)}
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
        _check(deadline)
        constraint([(col[n], 1.0) for n in cand[c]], 1.0 if c in mandatory else 0.0, 1.0)
    users: dict[ClassId, dict[ClassId, list[NodeId]]] = {}  # child class -> user class -> its nodes
    for c in sorted(cand):
        for n in cand[c]:
            for k in dict.fromkeys(view.nodes[n].children):
                users.setdefault(k, {}).setdefault(c, []).append(n)
    for k, by_class in sorted(users.items()):
        _check(deadline)
        if k in reduced.single_use and len(by_class) > 1:
            groups = [[n for ns in by_class.values() for n in ns]]
        elif k not in mandatory:
            groups = list(by_class.values())
        else:
            continue
        for ns in groups:  # the users of k take no more than k's candidates (at most 1 when k is mandatory)
            reads = [(col[n], 1.0) for n in ns]
            if k in mandatory:
                constraint(reads, -math.inf, 1.0)
            else:
                constraint(reads + [(col[m], -1.0) for m in cand[k]], -math.inf, 0.0)
    _check(deadline)
    required = requirements(view, cand)
    _check(deadline)
    for a, exits in required:  # a program holding a holds one of `exits` (`requires`)
        constraint([(col[n], 1.0) for n in cand[a]] + [(col[n], -1.0) for n in exits], -math.inf, 0.0)
    columns = {c: [(col[n], frozenset(view.nodes[n].children)) for n in cand[c]] for c in sorted(cand)}
    pairs = sorted((a, b) for b, by_class in users.items() for a in by_class if a < b and b in users.get(a, {}))
    for pair in pairs:
        for row in cut_rows(columns, pair):
            constraint(row, -math.inf, 0.0)
    for x in view.closed_regions:
        _check(deadline)
        if x.node in col:
            inside = x.interior | {view.nodes[x.node].eclass}
            for n in nodes:
                if view.nodes[n].eclass not in inside and x.interior.intersection(view.nodes[n].children):
                    constraint([(col[x.node], 1.0), (col[n], 1.0)], -math.inf, 1.0)
    col_lower = np.zeros(len(nodes))
    col_lower[[col[n] for n in reduced.fixed]] = 1.0
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lo), len(nodes)))
    return IlpModel(nodes, np.array([costs[n] for n in nodes], dtype=float), matrix, np.array(lo), np.array(hi),
                    col_lower, np.ones(len(nodes)), columns, len(pairs), len(required))


def _problem(model: IlpModel, integral: bool = True) -> MilpProblem:
    """`model` as the solver worker's input: every column binary, or (`integral=False`) its
    linear relaxation."""
    csr = model.matrix.tocsr()
    return MilpProblem(model.objective, csr.data, csr.indices, csr.indptr, model.row_lower, model.row_upper,
                       model.col_lower, model.col_upper, np.full(model.n_cols, 1.0 if integral else 0.0))


def _solve(model: IlpModel, seconds: float) -> MilpResult:
    """The relaxation first, within `RELAXATION_SHARE` of `seconds`: an integral optimum of it is
    the program's optimum, with no branching; otherwise the mixed-integer solve, in the time left
    (none when that is spent), whose proven bound is at least the relaxation's."""
    begin = time.perf_counter()
    relaxed = solve_with_deadline(_problem(model, integral=False), seconds * RELAXATION_SHARE)
    bound = None
    if relaxed.status == "Optimal" and relaxed.x is not None:
        bound = float(model.objective @ relaxed.x)
        if np.all(np.minimum(relaxed.x, 1.0 - relaxed.x) <= _INTEGRAL):
            return MilpResult("Optimal", np.round(relaxed.x), bound)
    left = seconds - (time.perf_counter() - begin)
    if left <= 0:
        return MilpResult(_OUT_OF_TIME, None, bound, killed=relaxed.killed)
    result = solve_with_deadline(_problem(model), left)
    if bound is not None and (result.dual_bound is None or not result.dual_bound >= bound):
        result = replace(result, dual_bound=bound)
    return result


def _cycles(view: EGraphView, node_of: Mapping[ClassId, NodeId]) -> list[list[ClassId]]:
    """One cycle (as a class list) per strongly connected component of the chosen nodes' graph."""
    graph = {c: sorted(set(view.nodes[n].children) & node_of.keys()) for c, n in sorted(node_of.items())}
    comp = {c: i for i, classes in enumerate(strongly_connected(graph)) for c in classes}
    out: list[list[ClassId]] = []
    done: set[int] = set()
    for start in graph:
        if comp[start] in done or not any(comp[k] == comp[start] for k in graph[start]):
            continue
        done.add(comp[start])
        path, on_path = [start], {start: 0}
        while True:  # every class of a cyclic SCC has a successor inside it: walk until a class repeats
            nxt = next(k for k in graph[path[-1]] if comp[k] == comp[start])
            if nxt in on_path:
                out.append(path[on_path[nxt]:])
                break
            on_path[nxt] = len(path)
            path.append(nxt)
    return out


@dataclass
class IlpExtractor:
    """Optimal for DAG cost within `seconds`; reports the solver status and optimality gap."""

    seconds: float = 60.0
    """time limit for the whole extraction (greedy, reduction and building the program included); on
    the limit the best program found is returned with its gap (greedy's when none). HiGHS runs in
    a worker process that is killed `highs_worker.KILL_GRACE_S` past the limit, so `extract` returns
    within `seconds` plus that margin (or, when greedy and the reduction alone take longer, just
    after them)."""
    name: ClassVar[str] = "ilp"
    optimal_for: ClassVar[Literal["tree", "dag", "none"]] = "dag"

    def extract(self, view: EGraphView, roots: Sequence[ClassId], cost: CostModel | Sequence[float]) -> Choice:
        costs = resolve_costs(view, cost)
        begin = time.perf_counter()
        deadline = begin + self.seconds
        greedy = GreedyDagExtractor().extract(view, roots, costs)
        greedy_cost = greedy.dag_cost(view, costs)
        reduced = reduce_problem(view, roots, costs, greedy_cost * (1 + 1e-9) + 1e-9)
        fallback = Choice(tuple(roots), reduced.repair(view, greedy.node_of, roots))
        fallback_cost = fallback.dag_cost(view, costs)
        info = {"greedy_cost": greedy_cost, "fallback_cost": fallback_cost,
                "nodes_before": reduced.nodes_before, "unusable_nodes": reduced.unusable,
                "dominated_nodes": reduced.dominated, "nodes_after": reduced.nodes_after,
                "mandatory_classes": len(reduced.mandatory), "fixed_nodes": len(reduced.fixed)}
        dual, cuts, rounds, found = None, 0, 0, None
        result = MilpResult(_OUT_OF_TIME, None, None)
        model: IlpModel | None = None
        try:
            model = build_model(view, reduced, costs, deadline)
            info.update({"variables": model.n_cols, "pair_cuts": model.pair_cuts,
                         "requirement_rows": model.requirement_rows})
        except PastDeadline:
            info["past_deadline"] = "building the model"
        while model is not None and (remaining := deadline - time.perf_counter()) > 0:  # none starts past it
            rounds += 1
            result = _solve(model, remaining)
            if result.dual_bound is not None and math.isfinite(result.dual_bound):
                dual = result.dual_bound if dual is None else max(dual, result.dual_bound)  # each a valid bound
            if result.x is None:
                break
            chosen = {view.nodes[n].eclass: n for n, v in zip(model.nodes, result.x) if v > 0.5}
            node_of = {c: chosen[c] for c in reachable_choice(view, chosen, roots)}
            cycles = _cycles(view, node_of)
            if not cycles:
                found = Choice(tuple(roots), node_of)
                break
            if result.status != "Optimal":  # out of time with a cyclic program: nothing to return
                break
            model = model.with_cuts(cycles)
            cuts += len(cycles)
        info.update({"status": result.status, "killed": result.killed, "dual_bound": dual, "cycle_cuts": cuts,
                     "rounds": rounds, "constraints": 0 if model is None else len(model.row_lower)})
        if found is not None and (cost_found := found.dag_cost(view, costs)) <= fallback_cost:
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
