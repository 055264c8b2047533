"""IR module <-> e-graph: `lower` puts a program in, `lift` takes an extracted choice back out.

Sharing survives both ways: lowering hash-conses equal sub-terms (structurally equal nodes
become one e-class; constants are keyed by content), and lifting builds one IR node per chosen
e-class, so a DAG never expands into a tree. Lifting the unsaturated e-graph gives a program
structurally equal to the input (`ir.structural_equal`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

import ir
from ir import Attrs, Expr, Function, IRModule
from ir.types import Type
from ir.visitor import bind_params_by_name

from ..errors import LoweringError
from .egraph import EGraph, build_node
from .terms import Handle
from .view import ClassId, EGraphView, NodeId

__all__ = ["Lowered", "lower", "lift", "lift_expr"]


@dataclass
class Lowered:
    """An e-graph holding a module's `main`, its root class and what lifting needs to rebuild it."""

    egraph: EGraph
    root: Handle
    params: tuple[ir.Var, ...]
    ret_type: Type | None
    attrs: Attrs
    other_functions: dict[str, Function] = field(default_factory=dict)

    @property
    def roots(self) -> tuple[Handle, ...]:
        return (self.root,)

    def view(self) -> EGraphView:
        return self.egraph.view(self.roots)


def lower(program: IRModule | Expr, params: Mapping[str, object] | None = None,
          egraph: EGraph | None = None) -> Lowered:
    """Lower `main` (or a bare expression) into a new e-graph, binding `params` as constants first."""
    mod = program if isinstance(program, IRModule) else IRModule.from_expr(program)
    main = mod["main"]
    if params:
        main = bind_params_by_name(main, {k: np.asarray(v) for k, v in params.items()})
    try:
        ir.infer_type(main)
    except ir.IRError as err:
        raise LoweringError(f"cannot lower an ill-typed program: {err}") from err
    egraph = egraph or EGraph()
    root = egraph.add_expr(main.body, {})
    egraph.roots.append(root)
    egraph.flush()
    others = {k: f for k, f in mod.functions.items() if k != "main"}
    return Lowered(egraph, root, main.params, main.ret_type, main.attrs, others)


def lift_expr(view: EGraphView, node_of: Mapping[ClassId, NodeId], root: ClassId) -> Expr:
    """The IR expression of `root` under a choice of one node per class (one IR node per class)."""
    built: dict[ClassId, object] = {}
    stack: list[tuple[ClassId, bool]] = [(root, False)]
    while stack:
        cls, expanded = stack.pop()
        if cls in built:
            continue
        node = view.nodes[node_of[cls]]
        if not expanded:
            stack.append((cls, True))
            stack.extend((c, False) for c in reversed(node.children) if c not in built)
            continue
        built[cls] = build_node(view, node.kind, node.payload, [built[c] for c in node.children])
    return built[root]  # type: ignore[return-value]


def lift(lowered: Lowered, view: EGraphView, node_of: Mapping[ClassId, NodeId]) -> IRModule:
    """The module whose `main` is the chosen program for the lowered root."""
    root = view.roots[0]
    body = lift_expr(view, node_of, root)
    main = Function(lowered.params, body, lowered.ret_type, lowered.attrs)
    return IRModule({"main": main, **lowered.other_functions})
