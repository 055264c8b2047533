"""Constant-only subgraphs: finding them (they cost nothing at run time) and folding them away."""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from ir.op.registry import Op
from ir.visitor import children, post_order, rebuild

from .kernels.reference import run_reference

__all__ = ["constant_subgraph", "fold_constants", "folded", "LAZY_BROADCAST_ELEMENTS"]

#: a `broadcast_to` with more elements than this is not folded: a splat (e.g. an imported
#: `ConstantOfShape` weight) stays one value and a shape until a kernel reads it
LAZY_BROADCAST_ELEMENTS = 1 << 20


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


def _value(arg: Expr, values: Mapping[Var, np.ndarray]) -> Any:
    """The value of a constant argument (a tuple of them for a tuple); None for a computed one."""
    if isinstance(arg, Constant):
        return arg.data
    if isinstance(arg, Var):
        return values.get(arg)
    if isinstance(arg, Tuple):
        fields = [_value(f, values) for f in arg.fields]
        return None if any(f is None for f in fields) else tuple(fields)
    return None


def folded(node: Expr, values: Mapping[Var, np.ndarray] | None = None) -> Constant | None:
    """The constant `node` evaluates to (computed by the reference kernels), when it is an op call, or
    a field of one, whose arguments are constants, tuples of them or variables with a value in
    `values`; None otherwise, for a tuple value, and for a broadcast past `LAZY_BROADCAST_ELEMENTS`."""
    call, index = (node.tuple_value, node.index) if isinstance(node, TupleGetItem) else (node, None)
    if not (isinstance(call, Call) and isinstance(call.op, Op)):
        return None
    if call.op.name == "broadcast_to" and math.prod(call.attrs.shape) > LAZY_BROADCAST_ELEMENTS:
        return None
    inputs = [_value(a, values or {}) for a in call.args]
    if any(v is None for v in inputs):
        return None
    value = run_reference(call.op.name, call.attrs, inputs)
    if index is not None:
        return Constant(value[index]) if isinstance(value, tuple) else None
    return Constant(value) if not isinstance(value, tuple) else None


def fold_constants(func: Function) -> Function:
    """`func` with every op call on constants replaced by its value (computed by the reference kernels)."""
    def fold(old: Expr, new: Expr) -> Expr | None:
        return folded(new) if isinstance(new, (Call, TupleGetItem)) else None
    result = rebuild(func, fold)
    return result if isinstance(result, Function) else Function(func.params, result)
