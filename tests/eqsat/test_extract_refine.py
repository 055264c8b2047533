"""Greedy's local search: savings that pay only when shared (merged parallel calls), never worse."""

from __future__ import annotations

import pytest

import ir
from eqsat.extract import GreedyDagExtractor, IlpExtractor
from eqsat.optimize import cost_model, extract_program, saturate_program
from eqsat.rules.library import default_rules

from .graphs import costs_by_op, view_of
from .test_extract import random_egraph


def merged_pair():
    """Two dense calls of one input (10 each) or one wide call (15) read through a split by both."""
    view = view_of({0: [("x", ())], 1: [("dense1", (0,)), ("get0", (3,))], 2: [("dense2", (0,)), ("get1", (3,))],
                    3: [("split", (4,))], 4: [("wide", (0,))], 5: [("top", (1, 2))]}, (5,))
    return view, costs_by_op(view, {"x": 0, "dense1": 10, "dense2": 10, "get0": 0, "get1": 0, "split": 0,
                                    "wide": 15, "top": 0})


def test_the_local_search_switches_the_users_of_a_merged_call_together():
    view, costs = merged_pair()
    choice = GreedyDagExtractor(refine=True).extract(view, view.roots, costs)
    choice.check(view)
    assert choice.info["refined_from"] == 20 and choice.dag_cost(view, costs) == 15
    assert {view.nodes[choice.node_of[c]].op for c in (1, 2)} == {"get0", "get1"}


def test_a_merge_that_does_not_pay_is_left_alone():
    view, costs = merged_pair()
    costs[next(i for i, n in enumerate(view.nodes) if n.op == "wide")] = 21.0
    choice = GreedyDagExtractor(refine=True).extract(view, view.roots, costs)
    assert choice.dag_cost(view, costs) == 20 and choice.info["refine_moves"] == 0


@pytest.mark.parametrize("seed", range(20))
def test_refinement_is_valid_and_never_worse(seed):
    view, costs = random_egraph(seed, n_classes=25)
    choice = GreedyDagExtractor(refine=True).extract(view, view.roots, costs)
    choice.check(view)
    assert choice.dag_cost(view, costs) <= choice.info["refined_from"] + 1e-9
    assert choice.dag_cost(view, costs) >= IlpExtractor(seconds=20).extract(view, view.roots, costs).dag_cost(
        view, costs) - 1e-9


def test_greedy_extracts_nasrnns_merged_matmuls_as_the_ilp_does():
    mod, params = ir.models.get("nasrnn", small=True)
    sat = saturate_program(mod, params, rules=default_rules("ort"))
    greedy = extract_program(sat, cost_model("ort"), GreedyDagExtractor(refine=True))
    ilp = extract_program(sat, cost_model("ort"), IlpExtractor(seconds=30))
    assert greedy.choice.info["refined_from"] > greedy.cost_after
    assert greedy.cost_after <= ilp.cost_after * 1.001
    splits = sum(1 for c in greedy.choice.classes(sat.view) if sat.view.nodes[greedy.choice.node_of[c]].op == "split")
    assert splits > 0
