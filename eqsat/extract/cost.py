"""Per-node costs of an e-graph view under a `CostModel` (computed once, shared by extractors)."""

from __future__ import annotations

import math
from typing import Sequence

from ir import Call, Function
from ir.op.registry import Op
from ir.visitor import post_order

from ..egraph.terms import Kind
from ..egraph.view import EGraphView
from ..errors import ExtractionError
from .base import CostModel

__all__ = ["node_costs", "function_cost", "resolve_costs"]


def function_cost(fn: Function, model: CostModel) -> float:
    """Cost of running an (atomic) inner function: the sum over the op calls in its body."""
    total = 0.0
    for node in post_order(fn.body):
        if isinstance(node, Call) and isinstance(node.op, Op):
            total += model.node_cost(node.op.name, node.attrs, [a.checked_type for a in node.args], node.checked_type)
    return total


def constant_classes(view: EGraphView) -> set[int]:
    """Classes that can be computed from constants alone (folded before running, so free)."""
    const = {n.eclass for n in view.nodes if n.kind is Kind.CONST}
    changed = True
    while changed:
        changed = False
        for n in view.nodes:
            if n.eclass not in const and n.kind in (Kind.CALL, Kind.TUPLE, Kind.CONS, Kind.NIL, Kind.GETITEM) \
                    and all(c in const for c in n.children):
                const.add(n.eclass)
                changed = True
    return const


def node_costs(view: EGraphView, model: CostModel) -> list[float]:
    """Cost of every node of `view`: op calls ask the model, calls of inner functions cost their
    body; structural nodes (variables, constants, tuples, lists, projections) and op calls on
    constants only (folded ahead of time) cost 0."""
    fn_costs: dict[str, float] = {}
    folded = constant_classes(view)
    out: list[float] = []
    for i, n in enumerate(view.nodes):
        if n.kind is Kind.CALL and all(c in folded for c in n.children):
            c = 0.0
        elif n.kind is Kind.CALL:
            c = model.node_cost(n.op, n.attrs, [view.types[k] for k in n.children], view.types[n.eclass])
        elif n.kind is Kind.APPLY:
            c = _apply_cost(view, n.children[0], model, fn_costs)
        else:
            c = 0.0
        c = float(c)
        if math.isnan(c) or c < 0:
            raise ExtractionError(f"cost model gave {c} for node {i} ({n.label()}); costs must be >= 0 or inf")
        out.append(c)
    return out


def _apply_cost(view: EGraphView, callee: int, model: CostModel, memo: dict[str, float]) -> float:
    for n in view.classes[callee]:
        node = view.nodes[n]
        if node.kind is Kind.FUNC and node.payload[0] in view.functions:
            key = node.payload[0]
            if key not in memo:
                memo[key] = function_cost(view.functions[key], model)
            return memo[key]
    return 0.0


def resolve_costs(view: EGraphView, cost: CostModel | Sequence[float]) -> list[float]:
    """Per-node costs from a model, or a given per-node sequence checked for length."""
    if hasattr(cost, "node_cost"):
        return node_costs(view, cost)  # type: ignore[arg-type]
    costs = [float(c) for c in cost]  # type: ignore[union-attr]
    if len(costs) != len(view.nodes):
        raise ExtractionError(f"{len(costs)} costs given for {len(view.nodes)} e-nodes")
    return costs
