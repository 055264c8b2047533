"""Graph traversal without recursion: post-order walks, free variables, bottom-up rebuilding."""

from __future__ import annotations

from typing import Any, Callable, Container, Iterable, Iterator, Mapping, Sequence


from .expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var, as_array

__all__ = ["children", "operands", "post_order", "post_order_from", "free_vars", "with_children", "rebuild", "deep_copy", "bind", "bind_params_by_name", "count_nodes"]


def children(expr: Expr) -> tuple[Expr, ...]:
    """The sub-expressions `expr` uses, in argument order (op objects and binders excluded)."""
    from .op.registry import Op
    if isinstance(expr, Call):
        return expr.args if isinstance(expr.op, Op) else (expr.op, *expr.args)
    if isinstance(expr, Tuple):
        return expr.fields
    if isinstance(expr, TupleGetItem):
        return (expr.tuple_value,)
    if isinstance(expr, Function):
        return (expr.body,)
    if isinstance(expr, If):
        return (expr.cond, expr.true_branch, expr.false_branch)
    if isinstance(expr, Let):
        return (expr.value, expr.body)
    return ()


def operands(expr: Expr) -> tuple[Expr, ...]:
    """Like `children`, but binders included: function parameters and let variables."""
    if isinstance(expr, Function):
        return (*expr.params, expr.body)
    if isinstance(expr, Let):
        return (expr.value, expr.var, expr.body)
    return children(expr)


def post_order(expr: Expr, successors: Callable[[Expr], Sequence[Expr]] = children,
               stop: Container[Expr] | Callable[[Expr], bool] = ()) -> Iterator[Expr]:
    """Every node reachable from `expr` once, successors before the node, in recursive-DFS order.

    Iterative, so graphs thousands of nodes deep are fine. Nodes in `stop` (a container, or a
    predicate) are neither yielded nor entered; `successors` defaults to `children` (use `operands`
    to visit binders too). Works for any hashable node type given its `successors` (patterns,
    e-class ids).
    """
    return post_order_from((expr,), successors, stop)


def post_order_from(starts: Iterable[Any], successors: Callable[[Any], Sequence[Any]] = children,
                    stop: Container[Any] | Callable[[Any], bool] = ()) -> Iterator[Any]:
    """`post_order` from several starts, each node once across all of them, starts in order."""
    stopped = stop if callable(stop) else stop.__contains__
    seen: set = set()
    for start in starts:
        stack: list[tuple[Any, bool]] = [(start, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                yield node
                continue
            if node in seen or stopped(node):
                continue
            seen.add(node)
            stack.append((node, True))
            for succ in reversed(successors(node)):
                if succ not in seen:
                    stack.append((succ, False))


def count_nodes(expr: Expr) -> int:
    return sum(1 for _ in post_order(expr))


def free_vars(expr: Expr) -> list[Var]:
    """Variables used but not bound inside `expr`, in order of first use."""
    bound: set[int] = set()
    used: list[Var] = []
    for node in post_order(expr):
        if isinstance(node, Function):
            bound.update(id(p) for p in node.params)
        elif isinstance(node, Let):
            bound.add(id(node.var))
        elif isinstance(node, Var):
            used.append(node)
    seen: set[int] = set()
    out = []
    for v in used:
        if id(v) not in bound and id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def with_children(node: Expr, new: Mapping[int, Expr], fresh: bool = False) -> Expr:
    """`node` with its children replaced by `new[id(child)]`; `node` itself when nothing changed
    (unless `fresh`, which always builds a new node; variables and ops are kept)."""
    kids = children(node)
    repl = [new.get(id(k), k) for k in kids]
    if not fresh and all(a is b for a, b in zip(kids, repl)):
        return node
    if isinstance(node, Constant):
        return Constant(node.data)
    if isinstance(node, Call):
        from .op.registry import Op
        if isinstance(node.op, Op):
            return Call(node.op, repl, node.attrs)
        return Call(repl[0], repl[1:], node.attrs)
    if isinstance(node, Tuple):
        return Tuple(repl)
    if isinstance(node, TupleGetItem):
        return TupleGetItem(repl[0], node.index)
    if isinstance(node, Function):
        params = [new.get(id(p), p) for p in node.params]
        return Function(params, repl[0], node.ret_type, node.attrs)
    if isinstance(node, If):
        return If(*repl)
    if isinstance(node, Let):
        var = new.get(id(node.var), node.var)
        return Let(var, repl[0], repl[1])
    from .op.registry import Op
    if isinstance(node, (Var, Op)):
        return node
    raise TypeError(f"cannot rebuild {type(node).__name__}")


def rebuild(expr: Expr, fn: Callable[[Expr, Expr], Expr | None]) -> Expr:
    """Rebuild `expr` bottom-up. For each node, `fn(original, with_new_children)` may return a
    replacement (or None to keep it). Sharing is preserved; unchanged subgraphs keep their objects."""
    new: dict[int, Expr] = {}
    for node in post_order(expr):
        updated = with_children(node, new)
        replacement = fn(node, updated)
        result = updated if replacement is None else replacement
        if result is not node:
            new[id(node)] = result
    return new.get(id(expr), expr)


def deep_copy(expr: Expr) -> Expr:
    """A copy made of new nodes (no cached types); variables and ops are shared with `expr`."""
    new: dict[int, Expr] = {}
    for node in post_order(expr):
        new[id(node)] = with_children(node, new, fresh=True)
    return new[id(expr)]


def bind(expr: Expr, binds: Mapping[Var, Expr]) -> Expr:
    """Replace free variables by expressions; a Function drops the parameters that were bound."""
    if isinstance(expr, Function):
        params = [p for p in expr.params if p not in binds]
        body = bind(expr.body, binds)
        return Function(params, body, expr.ret_type, expr.attrs)
    return rebuild(expr, lambda old, new: binds.get(old) if isinstance(old, Var) else None)


def bind_params_by_name(func: Function, params: Mapping[str, object]) -> Function:
    """Turn the named parameters of `func` into constants (values: numpy arrays or anything with `.numpy()`)."""
    by_name = {p.name_hint: p for p in func.params}
    unknown = sorted(set(params) - set(by_name))
    if unknown:
        raise ValueError(f"bind_params_by_name: no parameter named {unknown}; parameters are {sorted(by_name)}")
    binds = {}
    for name, value in params.items():
        arr = as_array(value)
        binds[by_name[name]] = Constant(arr)
    return bind(func, binds)
