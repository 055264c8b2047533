"""Inlining of `Let` bindings and of calls of function literals, so a program becomes one dataflow graph."""

from __future__ import annotations

from typing import Callable

from ..expr import Call, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from ..op.registry import Op
from ..visitor import bind, post_order

__all__ = ["inline_bindings"]


def inline_bindings(expr: Expr) -> Expr:
    """`expr` with every `Let` replaced by its body (its variable by its value) and every call of a
    `Function` literal (e.g. a partitioned composite) by the function's body on the call's arguments.

    One bottom-up pass; a node used several times stays one node, and a subgraph with nothing to
    inline keeps its objects. Each call of a function gets its own copy of the body.
    """
    nodes = list(post_order(expr))
    let_values = {n.var: n.value for n in nodes if isinstance(n, Let)}
    new: dict[Expr, Expr] = {}

    def get(e: Expr) -> Expr:
        return new.get(e, e)

    for node in nodes:
        if isinstance(node, Var):
            result = get(let_values[node]) if node in let_values else node
        elif isinstance(node, Let):
            result = get(node.body)
        elif isinstance(node, Call):
            result = _inline_call(node, get)
        else:
            result = _with_new_parts(node, get)
        if result is not node:
            new[node] = result
    return get(expr)


def _inline_call(call: Call, get: Callable[[Expr], Expr]) -> Expr:
    op = call.op if isinstance(call.op, Op) else get(call.op)
    args = [get(a) for a in call.args]
    if isinstance(op, Function):
        return bind(op.body, dict(zip(op.params, args)))
    if op is call.op and all(a is b for a, b in zip(args, call.args)):
        return call
    return Call(op, args, call.attrs)


def _with_new_parts(node: Expr, get: Callable[[Expr], Expr]) -> Expr:
    """`node` rebuilt on `get(part)` for each sub-expression; `node` itself when none changed."""
    if isinstance(node, Tuple):
        parts, make = node.fields, Tuple
    elif isinstance(node, TupleGetItem):
        parts, make = (node.tuple_value,), lambda value: TupleGetItem(value, node.index)
    elif isinstance(node, If):
        parts, make = (node.cond, node.true_branch, node.false_branch), If
    elif isinstance(node, Function):
        parts, make = (node.body,), lambda body: Function(node.params, body, node.ret_type, node.attrs)
    else:
        return node
    new_parts = [get(p) for p in parts]
    if all(a is b for a, b in zip(new_parts, parts)):
        return node
    return make(new_parts) if isinstance(node, Tuple) else make(*new_parts)
