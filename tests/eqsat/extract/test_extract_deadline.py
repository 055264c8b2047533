"""The ILP extractor's hard time limit: HiGHS runs in a worker process killed at the deadline."""

from __future__ import annotations

import math
import time

import numpy as np

import ir
import strategies
from eqsat.egraph.lower import lower
from eqsat.extract import GreedyDagExtractor, IlpExtractor, node_costs
from eqsat.extract.highs_worker import KILL_GRACE_S, MilpProblem, solve, solve_with_deadline
from eqsat.limits import Limits
from eqsat.rules.library import RULESETS
from eqsat.runner import saturate

from ..graphs import add_chain

SLACK_S = 1.5
"""what a loaded 2-core machine may add to the stated margin (process teardown, scheduling)."""


def market_split(rows: int = 4, cols: int = 36, seed: int = 0) -> MilpProblem:
    """A market-split instance (Cornuejols-Dawande): equality knapsacks branch-and-bound cannot finish."""
    a = np.random.default_rng(seed).integers(0, 100, size=(rows, cols)).astype(float)
    b = np.floor(a.sum(axis=1) / 2)
    flat = a.ravel()
    return MilpProblem(np.zeros(cols), flat, np.tile(np.arange(cols), rows), np.arange(0, rows * cols + 1, cols),
                       b, b, np.zeros(cols), np.ones(cols), np.ones(cols))


def test_a_worker_past_its_deadline_is_killed_and_the_next_solve_starts_a_fresh_one():
    start = time.monotonic()
    result = solve_with_deadline(market_split(), seconds=600, kill_after=1.0)
    assert time.monotonic() - start < 1.0 + SLACK_S
    assert result.killed and result.x is None and "killed" in result.status
    small = MilpProblem(np.array([1.0, 2.0]), np.array([1.0, 1.0]), np.array([0, 1]), np.array([0, 2]),
                        np.array([1.0]), np.array([math.inf]), np.zeros(2), np.ones(2), np.ones(2))
    again = solve_with_deadline(small, seconds=30)
    assert not again.killed and again.status == "Optimal" and list(again.x) == [1.0, 0.0]
    assert solve(small, 30).status == "Optimal"


def test_the_ilp_extractor_returns_within_its_limit_plus_the_margin_on_a_hard_egraph():
    # every input read twice: no class is single-use, so the relaxation stays weak (a chain that reads
    # each input once is proven in a fraction of a second)
    low = lower(ir.IRModule.from_expr(add_chain(6, reads=2)[0]))
    saturate(low.egraph, RULESETS["ac"], Limits(nodes=6000))
    view = low.view()
    costs = node_costs(view, strategies.CostModel("cpu"))
    greedy = GreedyDagExtractor().extract(view, view.roots, costs).dag_cost(view, costs)
    seconds = 1.5
    start = time.monotonic()
    choice = IlpExtractor(seconds=seconds).extract(view, view.roots, costs)
    assert time.monotonic() - start < seconds + KILL_GRACE_S + SLACK_S
    choice.check(view)
    assert choice.dag_cost(view, costs) <= greedy + 1e-9
    assert choice.info["status"] != "Optimal"  # too hard for 1.5 s: the point of the test
    assert choice.info["killed"] or choice.info["status"] == "Time limit reached"


def test_a_solve_stopped_without_a_solution_reports_the_plain_model_status():
    result = solve(market_split(), 0.2)
    assert result.x is None and result.status == "Time limit reached"
