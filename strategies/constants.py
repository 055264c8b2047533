"""Constant-only subgraphs: finding them (they cost nothing at run time) and folding them away."""

from __future__ import annotations

from ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem
from ir.op.registry import Op
from ir.visitor import children, post_order, rebuild

from .kernels.reference import run_reference

__all__ = ["constant_subgraph", "fold_constants"]


def constant_subgraph(expr: Expr) -> set[int]:
    """The ids of the nodes under `expr` whose value depends on constants only (no variable)."""
    constant: set[int] = set()
    for node in post_order(expr):
        if isinstance(node, Constant):
            constant.add(id(node))
        elif isinstance(node, (Tuple, TupleGetItem)) or isinstance(node, Call) and isinstance(node.op, Op):
            if all(id(k) in constant for k in children(node)):
                constant.add(id(node))
    return constant


def _fold(node: Expr) -> Expr | None:
    """The constant `node` evaluates to, when it is an op call (or a field of one) on constants."""
    call, index = (node.tuple_value, node.index) if isinstance(node, TupleGetItem) else (node, None)
    if not (isinstance(call, Call) and isinstance(call.op, Op) and all(isinstance(a, Constant) for a in call.args)):
        return None
    value = run_reference(call.op.name, call.attrs, [a.data for a in call.args])
    if index is not None:
        return Constant(value[index]) if isinstance(value, tuple) else None
    return Constant(value) if not isinstance(value, tuple) else None


def fold_constants(func: Function) -> Function:
    """`func` with every op call on constants replaced by its value (computed by the reference kernels)."""
    def fold(old: Expr, new: Expr) -> Expr | None:
        return _fold(new) if isinstance(new, (Call, TupleGetItem)) else None
    folded = rebuild(func, fold)
    return folded if isinstance(folded, Function) else Function(func.params, folded)
