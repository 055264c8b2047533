"""Cycle handling of the ILP extractor: cuts for classes that use each other, lazily added cycle cuts."""

from __future__ import annotations

from eqsat.extract import IlpExtractor
from eqsat.extract.ilp import build_model
from eqsat.extract.prune import reduce_problem

from ..graphs import costs_by_op, view_of
from .test_extract_scale import brute_force


def test_a_three_class_cycle_is_cut_lazily_and_the_optimum_is_acyclic():
    # 1 -> 2 -> 3 -> 1 through the cheap primed nodes avoids the dear leaf. Class 5 shares the
    # component and leaves it for the leaf, which satisfies the rows made up front; the cycle must
    # still be broken, and only a lazy cut does it
    view = view_of({0: [("x", ())], 1: [("a", (0,)), ("a2", (2,)), ("a3", (5,))], 2: [("b", (0,)), ("b2", (3,))],
                    3: [("c", (0,)), ("c2", (1,))], 5: [("e", (0,)), ("e2", (1,))], 4: [("top", (1, 2, 3, 5))]},
                   (4,))
    costs = costs_by_op(view, {"x": 10, "a": 1, "a2": 0.1, "a3": 0.5, "b": 1, "b2": 0.1, "c": 1, "c2": 0.1,
                               "e": 1, "e2": 0.5, "top": 0})
    choice = IlpExtractor(seconds=20).extract(view, view.roots, costs)
    choice.check(view)
    assert choice.dag_cost(view, costs) == brute_force(view, costs) == 10 + 1 + 0.5 + 0.1 + 0.1
    assert choice.info["cycle_cuts"] >= 1 and choice.info["rounds"] >= 2 and choice.info["gap"] == 0.0


def test_two_classes_that_use_each_other_get_their_cuts_up_front():
    # a layout change each way (t1, t2): the relaxation may not circulate through the pair
    view = view_of({0: [("x", ())], 1: [("conv", (0,)), ("t1", (2,))], 2: [("bconv", (0,)), ("t2", (1,))],
                    3: [("top", (1, 2))]}, (3,))
    costs = costs_by_op(view, {"x": 0, "conv": 10, "t1": 1, "bconv": 8, "t2": 1, "top": 0})
    reduced = reduce_problem(view, view.roots, costs)
    model = build_model(view, reduced, costs)
    assert model.pair_cuts == 1
    col = {view.nodes[n].op: j for j, n in enumerate(model.nodes)}
    rows = {tuple(sorted((model.nodes[j], v) for j, v in zip(r, vs)))
            for r, vs in _rows(model)}
    # class 1's use of 2 (t1) is no more than class 2's way out of the pair (bconv), and the other way round
    assert tuple(sorted([(model.nodes[col["t1"]], 1.0), (model.nodes[col["bconv"]], -1.0)])) in rows
    assert tuple(sorted([(model.nodes[col["t2"]], 1.0), (model.nodes[col["conv"]], -1.0)])) in rows
    choice = IlpExtractor(seconds=20).extract(view, view.roots, costs)
    choice.check(view)
    assert choice.dag_cost(view, costs) == 9 and choice.info["cycle_cuts"] == 0 and choice.info["rounds"] == 1


def _rows(model):
    csr = model.matrix.tocsr()
    return [(csr.indices[csr.indptr[i]:csr.indptr[i + 1]], csr.data[csr.indptr[i]:csr.indptr[i + 1]])
            for i in range(csr.shape[0])]
