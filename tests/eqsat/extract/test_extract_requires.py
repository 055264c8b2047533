"""Requirement rows: every program holding a class holds an exit of each component it requires, and
the rows close the relaxation's gap on chains of layout pairs."""

from __future__ import annotations

import itertools

import pytest

import eqsat
import ir
from eqsat.errors import ExtractionError
from eqsat.extract import Choice, IlpExtractor, node_costs
from eqsat.extract import requires
from eqsat.extract.prune import reduce_problem
from eqsat.extract.requires import requirements, strongly_connected
from eqsat.optimize import saturate_program
from eqsat.target import resolve_target
from eqsat.rules.library import default_rules

from ..graphs import costs_by_op, view_of
from .test_extract import random_egraph
from .test_extract_sharing import relaxation


def layout_chain(layers: int):
    """x, then per layer a plain class (conv of the last plain one, or a layout change of its twin)
    and a blocked twin (bconv of the last blocked one, or a layout change of the plain class); the
    root reads the last plain class. Blocked all the way is cheapest: 1 + 8 * layers + 1."""
    classes = {0: [("x", ())], 1: [("t", (0,))]}
    for i in range(1, layers + 1):
        plain, blocked = 2 * i, 2 * i + 1
        classes[plain] = [("conv", (plain - 2 if i > 1 else 0,)), ("t", (blocked,))]
        classes[blocked] = [("bconv", (blocked - 2,)), ("t", (plain,))]
    classes[2 * layers + 2] = [("top", (2 * layers,))]
    view = view_of(classes, (2 * layers + 2,))
    return view, costs_by_op(view, {"x": 0, "t": 1, "conv": 10, "bconv": 8, "top": 0})


def test_components_come_children_first():
    graph = {1: [2], 2: [3], 3: [2, 4], 4: [], 5: [1, 4]}
    components = [sorted(c) for c in strongly_connected(graph)]
    assert sorted(map(tuple, components)) == [(1,), (2, 3), (4,), (5,)]
    position = {c: i for i, comp in enumerate(components) for c in comp}
    assert all(position[k] <= position[c] for c, ks in graph.items() for k in ks)


def test_a_class_requires_the_layout_pair_its_every_candidate_reads():
    view, _ = layout_chain(2)
    found = {(a, tuple(sorted(view.nodes[n].op + str(view.nodes[n].eclass) for n in exits)))
             for a, exits in requirements(view, {c: list(ns) for c, ns in view.classes.items()})}
    # the root requires the last pair, whose only exits are its convolutions; that pair requires the first
    assert (6, ("bconv5", "conv4")) in found and (6, ("bconv3", "conv2")) in found
    assert (4, ("bconv3", "conv2")) in found and (5, ("bconv3", "conv2")) in found
    assert not any(a in (2, 3) and "4" in "".join(ex) for a, ex in found)  # nothing requires what reads it


def test_the_rows_close_the_relaxation_gap_of_a_chain_of_layout_pairs(monkeypatch):
    view, costs = layout_chain(6)
    choice = IlpExtractor(seconds=20).extract(view, view.roots, costs)
    assert choice.dag_cost(view, costs) == 1 + 8 * 6 + 1 and choice.info["gap"] == 0.0
    reduced = reduce_problem(view, view.roots, costs)
    assert relaxation(view, reduced, costs) == pytest.approx(50, rel=1e-6)
    monkeypatch.setattr("eqsat.extract.ilp.requirements", lambda *args: [])
    assert relaxation(view, reduced, costs) < 0.6 * 50  # half-chosen twins serve each other, layer after layer


def test_too_many_requirements_turn_the_analysis_off(monkeypatch):
    view, _ = layout_chain(3)
    cand = {c: list(ns) for c, ns in view.classes.items()}
    assert requirements(view, cand)
    monkeypatch.setattr(requires, "MAX_REQUIREMENTS", 3)
    assert requirements(view, cand) == []


@pytest.mark.parametrize("seed", range(16))
def test_every_valid_program_meets_every_requirement(seed):
    view, _ = random_egraph(seed, n_classes=6)
    cand = {c: list(ns) for c, ns in view.classes.items()}
    found = requirements(view, cand)
    classes = sorted(view.classes)
    for picks in itertools.product(*([None, *view.classes[c]] for c in classes)):
        node_of = {c: n for c, n in zip(classes, picks) if n is not None}
        try:
            Choice(tuple(node_of), node_of).check(view)
        except ExtractionError:
            continue
        chosen = set(node_of.values())
        assert all(a not in node_of or chosen.intersection(exits) for a, exits in found)


def test_the_ilp_proves_the_optimum_of_a_layout_grown_zoo_egraph():
    mod, params = ir.models.get("mobilenet_v2", small=True)
    sat = saturate_program(mod, params, rules=default_rules("ort"), limits=eqsat.Limits())
    costs = node_costs(sat.view, resolve_target("ort").model)
    choice = IlpExtractor(seconds=60).extract(sat.view, sat.view.roots, costs)
    assert choice.info["gap"] <= 1e-4 and choice.info["greedy_cost"] >= choice.dag_cost(sat.view, costs)
