"""Greedy's local search: savings that pay only when shared (merged parallel calls), never worse."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from eqsat.extract import Choice, GreedyDagExtractor, IlpExtractor, TreeExtractor
from eqsat.extract.greedy import refine
from eqsat.optimize import extract_program, saturate_program
from eqsat.target import resolve_target
from eqsat.rules.library import default_rules

from ..graphs import costs_by_op, view_of
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
    greedy = extract_program(sat, resolve_target("ort").model, GreedyDagExtractor(refine=True))
    # the ILP's time limit is a safety net: its program, proven optimal or not, bounds greedy's from above
    ilp = extract_program(sat, resolve_target("ort").model, IlpExtractor())
    assert greedy.choice.info["refined_from"] > greedy.cost_after
    assert greedy.cost_after <= ilp.cost_after * 1.001
    splits = sum(1 for c in greedy.choice.classes(sat.view) if sat.view.nodes[greedy.choice.node_of[c]].op == "split")
    assert splits > 0


def test_a_shared_move_drops_a_class_it_had_brought_in():
    """Switching c1, c2 and c6 to readers of `wide` leaves c2 unused (only c1's and c6's old nodes
    read it), so the class `extra` that c2's new node brought in leaves again within the move."""
    view = view_of({0: [("x", ())], 1: [("a1", (2,)), ("m1", (3,))], 2: [("b", (0,)), ("m2", (3, 4))],
                    3: [("wide", (0,))], 4: [("extra", (0,))], 5: [("a6", (2,)), ("m6", (3,))], 6: [("top", (1, 5))]},
                   (6,))
    costs = costs_by_op(view, {"x": 0, "a1": 3, "m1": 2, "b": 10, "m2": 20, "wide": 5, "extra": 1, "a6": 3, "m6": 2,
                               "top": 0})
    node = {view.nodes[n].op: n for n in range(len(view.nodes))}
    start = Choice(view.roots, {6: node["top"], 1: node["a1"], 5: node["a6"], 2: node["b"], 0: node["x"]})
    assert start.dag_cost(view, costs) == 16
    choice = refine(view, start, costs, {3: node["wide"], 4: node["extra"]})
    choice.check(view)
    assert choice.dag_cost(view, costs) == 9 and choice.info["refine_moves"] == 1
    assert {view.nodes[n].op for n in choice.node_of.values()} == {"top", "m1", "m6", "wide", "x"}


@pytest.mark.parametrize("seed", range(40))
def test_refinement_from_any_valid_program_stays_valid_and_never_dearer(seed):
    """Started from a program chosen under other costs (so its moves switch and drop many classes at
    once), the local search returns a valid program no dearer than its start."""
    view, costs = random_egraph(seed, n_classes=25)
    other = list(np.random.default_rng(seed).permutation(costs))
    start = TreeExtractor().extract(view, view.roots, other)
    fill = GreedyDagExtractor(refine=False).extract(view, view.roots, costs).node_of
    choice = refine(view, start, costs, fill)
    choice.check(view)
    assert choice.dag_cost(view, costs) <= start.dag_cost(view, costs) + 1e-9
