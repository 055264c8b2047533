"""The workloads extraction chooses from: every op call in a saturated e-graph, so tuning can measure them all."""

from __future__ import annotations

from strategies import CostModel, Workload
from strategies.target import Target
from strategies.workload import as_attrs
from ir.op.registry import get_op

from .egraph.terms import Kind
from .egraph.view import EGraphView
from .extract.cost import constant_classes

__all__ = ["candidate_workloads"]


def candidate_workloads(view: EGraphView, target: Target | str) -> list[tuple[Workload, frozenset[int]]]:
    """Each distinct workload of an op call in `view` that `target` can run, with the input positions
    that are constants; calls on constants only (folded before running) are left out. In e-node order."""
    model = CostModel(target)
    folded = constant_classes(view)
    seen: dict[str, tuple[Workload, frozenset[int]]] = {}
    for node in view.nodes:
        if node.kind is not Kind.CALL or all(c in folded for c in node.children):
            continue
        op = get_op(node.op)
        workload = Workload(op.name, as_attrs(op, node.attrs), tuple(view.types[c] for c in node.children),
                            view.types[node.eclass])
        if workload.key not in seen and model.is_legal(op.name, workload.attrs, workload.in_types, workload.out_type):
            seen[workload.key] = (workload, frozenset(i for i, c in enumerate(node.children) if c in folded))
    return list(seen.values())
