"""Single-use classes: found by counting graph inputs, and the ILP row over all their users keeps the
optimum while closing the relaxation's gap on AC-grown chains."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import LinearConstraint, milp

import eqsat
import ir
import strategies
from benchmarks.bench_extract import ac_chain
from eqsat.egraph.terms import Kind
from eqsat.egraph.view import EGraphView
from eqsat.extract import IlpExtractor, node_costs
from eqsat.extract import prune, sharing
from eqsat.extract.ilp import build_model
from eqsat.extract.prune import reduce_problem
from eqsat.extract.sharing import single_use_classes
from ir import relay
from ir.attrs import Attrs


def view_with_inputs(classes: dict[int, list[tuple[str, tuple[int, ...]]]], roots: tuple[int, ...]) -> EGraphView:
    """A hand-made view whose nodes labelled `var:NAME` are graph inputs, the rest op calls."""
    nodes = [(Kind.VAR, (op[4:], None), (), c) if op.startswith("var:") else (Kind.CALL, (op, Attrs()), kids, c)
             for c, ns in classes.items() for op, kids in ns]
    return EGraphView.build(nodes, {c: None for c in classes}, roots)


def grown(mod: ir.IRModule, rules: str, nodes: int):
    low = eqsat.lower(mod)
    eqsat.saturate(low.egraph, eqsat.resolve_rules(rules), eqsat.Limits(nodes=nodes, iterations=50))
    view = low.view()
    return view, node_costs(view, strategies.CostModel("cpu"))


def relaxation(view, reduced, costs) -> float:
    """The optimum of the ILP model's linear relaxation."""
    model = build_model(view, reduced, costs)
    rows = LinearConstraint(model.matrix.tocsr(), model.row_lower, model.row_upper)
    result = milp(model.objective, constraints=rows, integrality=np.zeros(model.n_cols),
                  bounds=(model.col_lower, model.col_upper))
    assert result.success
    return result.fun


def test_every_class_of_a_chain_is_single_use_and_its_relaxation_is_tight():
    view, costs = grown(ac_chain(12, seed=1), "ac", 2000)
    reduced = reduce_problem(view, view.roots, costs)
    assert reduced.single_use == frozenset(reduced.candidates) - set(view.roots)
    optimum = IlpExtractor(seconds=30).extract(view, view.roots, costs)
    assert optimum.info["gap"] == 0.0
    best = optimum.dag_cost(view, costs)
    assert relaxation(view, reduced, costs) == pytest.approx(best, rel=1e-6)
    assert relaxation(view, replace(reduced, single_use=frozenset()), costs) < 0.99 * best


def test_a_shared_input_leaves_the_classes_that_hold_only_it_shareable():
    # (x + y) * (x + z): x is read twice; every class holding y or z is read once at most
    view = view_with_inputs({0: [("var:x", ())], 1: [("var:y", ())], 2: [("var:z", ())], 3: [("add", (0, 1))],
                             4: [("add", (0, 2))], 5: [("multiply", (3, 4))]}, (5,))
    cand = {c: list(ns) for c, ns in view.classes.items()}
    assert single_use_classes(view, cand, view.roots) == {1, 2, 3, 4}


def test_a_node_that_drops_an_input_turns_the_analysis_off():
    # class 3 holds x * zero and the constant-like zero itself: x counts once in one node, never in the other
    view = view_with_inputs({0: [("var:x", ())], 1: [("var:y", ())], 2: [("zero", ())],
                             3: [("multiply", (0, 2)), ("zero2", ())], 4: [("add", (3, 1))]}, (4,))
    cand = {c: list(ns) for c, ns in view.classes.items()}
    assert single_use_classes(view, cand, view.roots) == frozenset()


def test_a_node_that_reads_a_class_twice_counts_it_twice():
    # class 2 = x + x; y's class and the sum's classes stay single-use, x's does not
    view = view_with_inputs({0: [("var:x", ())], 1: [("var:y", ())], 2: [("add", (0, 0))], 3: [("add", (2, 1))],
                             4: [("negative", (3,))]}, (4,))
    cand = {c: list(ns) for c, ns in view.classes.items()}
    assert single_use_classes(view, cand, view.roots) == {1, 2, 3}


def shared_chain(seed: int) -> ir.IRModule:
    """A chain that reads two of its inputs twice, so some classes are shareable."""
    rng = np.random.default_rng(seed)
    xs = [relay.var(f"v{i}", shape=(4, 8) if rng.integers(2) else (8,)) for i in range(6)]
    left = relay.add(relay.multiply(xs[0], xs[1]), relay.add(xs[2], xs[3]))
    right = relay.multiply(relay.add(xs[0], xs[4]), relay.add(xs[2], xs[5]))
    return ir.IRModule.from_expr(relay.Tuple([relay.add(left, xs[4]), right]))


@pytest.mark.parametrize("seed", range(4))
def test_the_ilp_optimum_is_the_same_with_and_without_the_single_use_rows(seed, monkeypatch):
    shared = shared_chain(seed)
    for mod in (ac_chain(7, seed=seed), shared):
        view, costs = grown(mod, "ac", 1500)
        single = reduce_problem(view, view.roots, costs).single_use
        assert single and (mod is not shared or view.classes.keys() - single - set(view.roots))
        with_rows = IlpExtractor(seconds=30).extract(view, view.roots, costs)
        with monkeypatch.context() as patch:
            patch.setattr(prune, "single_use_classes", lambda *args: frozenset())
            without = IlpExtractor(seconds=30).extract(view, view.roots, costs)
        assert with_rows.info["gap"] <= 1e-4 and without.info["gap"] <= 1e-4  # HiGHS's relative tolerance
        assert with_rows.dag_cost(view, costs) == pytest.approx(without.dag_cost(view, costs), rel=2e-4)


def test_counts_too_large_to_hold_turn_the_analysis_off(monkeypatch):
    view = view_with_inputs({0: [("var:x", ())], 1: [("var:y", ())], 2: [("add", (0, 1))], 3: [("negative", (2,))]},
                            (3,))
    cand = {c: list(ns) for c, ns in view.classes.items()}
    assert single_use_classes(view, cand, view.roots) == {0, 1, 2}
    monkeypatch.setattr(sharing, "MAX_ENTRIES", 7)  # 4 classes x 2 inputs
    assert single_use_classes(view, cand, view.roots) == frozenset()


def test_a_class_only_a_cycle_defines_turns_the_analysis_off():
    # class 2's only node reads class 3, whose only node reads class 2: neither can be counted
    view = view_with_inputs({0: [("var:x", ())], 2: [("f", (3,))], 3: [("g", (2, 0))], 4: [("add", (0, 3))]}, (4,))
    cand = {c: list(ns) for c, ns in view.classes.items()}
    assert single_use_classes(view, cand, view.roots) == frozenset()
