"""ILP extraction at scale: reductions keep the optimum, the greedy fallback, gaps and time limits."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import ir
import strategies
from eqsat.egraph.lower import lower
from eqsat.errors import ExtractionError
from eqsat.extract import Choice, GreedyDagExtractor, IlpExtractor, node_costs
from eqsat.extract.prune import reduce_problem
from eqsat.limits import Limits
from eqsat.rules.library import RULESETS
from eqsat.runner import saturate

from ..graphs import add_chain, costs_by_op, view_of
from .test_extract import random_egraph


def brute_force(view, costs, candidates=None) -> float:
    """The cheapest valid program of `view`'s roots over every combination of one node per class."""
    classes = view.reachable()
    options = [candidates.get(c, [None]) if candidates is not None else list(view.classes[c]) for c in classes]
    best = math.inf
    for picks in itertools.product(*options):
        node_of = {c: n for c, n in zip(classes, picks) if n is not None}
        try:
            choice = Choice(view.roots, node_of)
            choice.check(view)
        except ExtractionError:
            continue
        best = min(best, choice.dag_cost(view, costs))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_reductions_keep_the_optimum_and_ilp_finds_it(seed):
    view, costs = random_egraph(seed, n_classes=7)
    optimum = brute_force(view, costs)
    if optimum == math.inf:
        return
    reduced = reduce_problem(view, view.roots, costs)
    assert brute_force(view, costs, reduced.candidates) == optimum
    choice = IlpExtractor(seconds=10).extract(view, view.roots, costs)
    assert choice.dag_cost(view, costs) == optimum and choice.info["gap"] == 0.0


def test_dominated_nodes_go_and_the_greedy_program_is_repaired_onto_their_dominators():
    # class 2: "wide" needs {0, 1} and costs 3; "narrow" needs {0} and costs 2; "twin" equals narrow
    view = view_of({0: [("a", ())], 1: [("b", ())], 2: [("wide", (0, 1)), ("narrow", (0,)), ("twin", (0,))],
                    3: [("top", (2,))]}, (3,))
    costs = costs_by_op(view, {"a": 1, "b": 1, "wide": 3, "narrow": 2, "twin": 2, "top": 0})
    ids = {view.nodes[n].op: n for n in range(len(view.nodes))}
    reduced = reduce_problem(view, view.roots, costs)
    assert reduced.candidates[2] == [ids["narrow"]] and reduced.dominated == 2
    assert {c for c in reduced.mandatory} == {0, 2, 3} and ids["narrow"] in reduced.fixed
    repaired = reduced.repair(view, {0: ids["a"], 1: ids["b"], 2: ids["wide"], 3: ids["top"]}, view.roots)
    assert repaired == {3: ids["top"], 2: ids["narrow"], 0: ids["a"]}  # class 1 is no longer needed


def test_a_node_under_an_escaping_intermediate_constraint_dominates_nothing():
    # F (cheap, needs only x) is constrained: it must not replace relu(conv) by domination
    view = view_of({0: [("x", ())], 1: [("conv", (0,))], 2: [("relu", (1,)), ("F", (0,))],
                    3: [("g", (1,))], 4: [("out", (2, 3))]}, (4,), {"F": {1}})
    costs = costs_by_op(view, {"x": 0, "conv": 10, "relu": 1, "F": 0.5, "g": 1, "out": 0})
    reduced = reduce_problem(view, view.roots, costs)
    assert len(reduced.candidates[2]) == 2
    choice = IlpExtractor().extract(view, view.roots, costs)
    choice.check(view)
    assert view.nodes[choice.node_of[2]].op == "relu"


@pytest.mark.parametrize("seed", range(8))
def test_ilp_is_never_worse_than_greedy_even_without_time_to_solve(seed):
    view, costs = random_egraph(seed, n_classes=30)
    greedy = GreedyDagExtractor().extract(view, view.roots, costs).dag_cost(view, costs)
    for seconds in (0.0, 10.0):
        choice = IlpExtractor(seconds=seconds).extract(view, view.roots, costs)
        choice.check(view)
        assert choice.dag_cost(view, costs) <= greedy + 1e-9
        assert choice.info["fallback_cost"] <= choice.info["greedy_cost"] + 1e-9


@pytest.fixture(scope="module")
def ac_egraph():
    """A chain of adds and multiplies over tensors of four shapes, grown by associativity and commutativity."""
    rng = np.random.default_rng(0)
    shapes = [(8, 16), (16,), (8, 1), (1, 16)]
    expr = ir.relay.var("v0", shape=shapes[0])
    for i in range(1, 9):
        v = ir.relay.var(f"v{i}", shape=shapes[int(rng.integers(4))])
        expr = ir.relay.add(expr, v) if i % 3 else ir.relay.multiply(expr, v)
    low = lower(ir.IRModule.from_expr(expr))
    saturate(low.egraph, RULESETS["ac"], Limits(nodes=3000))
    view = low.view()
    return view, node_costs(view, strategies.CostModel("cpu"))


def test_a_time_limit_returns_the_best_program_found_with_its_gap(ac_egraph):
    view, costs = ac_egraph
    greedy = GreedyDagExtractor().extract(view, view.roots, costs).dag_cost(view, costs)
    choice = IlpExtractor(seconds=0.0).extract(view, view.roots, costs)
    choice.check(view)
    cost = choice.dag_cost(view, costs)
    info = choice.info
    assert cost <= greedy + 1e-9
    assert info["status"] in ("Time limit reached", "Optimal")
    if info["dual_bound"] is not None and math.isfinite(info["dual_bound"]) and cost > info["dual_bound"]:
        assert info["gap"] == pytest.approx((cost - info["dual_bound"]) / cost)
    solved = IlpExtractor(seconds=30).extract(view, view.roots, costs)
    assert solved.info["status"] == "Optimal" and solved.info["gap"] <= 1e-4
    assert solved.dag_cost(view, costs) <= cost + 1e-9
    assert solved.info["nodes_after"] < solved.info["nodes_before"]


def test_optimize_reports_the_gap():
    import eqsat
    expr, _ = add_chain(5)
    res = eqsat.optimize(ir.IRModule.from_expr(expr), rules="ac", limits=Limits(nodes=500), extractor="ilp",
                         verify=False)
    assert res.info["gap"] == 0.0 and res.info["source"] in ("ilp", "greedy")
    assert "gap" in res.summary()
