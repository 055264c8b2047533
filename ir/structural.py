"""Structural equality and hashing of expressions (by value, not by identity).

Both compare the graphs as trees: sharing does not matter, so `add(c, c)` equals `add(c, c2)` when
`c` and `c2` are equal constants. Function parameters and let-bound variables are compared by
position (alpha-equivalence). Free variables must be the same object unless `map_free_vars=True`.
The hash is deterministic across processes and `PYTHONHASHSEED` values.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable

from .attrs import Attrs
from .expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from .op.registry import Op
from .visitor import children, post_order

__all__ = ["structural_equal", "structural_hash", "assert_structural_equal"]


def _binder_depths(root: Expr) -> dict[int, int]:
    """Nesting depth of every Function / Let (how many binders enclose it), first path found."""
    depth: dict[int, int] = {}
    stack = [(root, 0)]
    seen: set[int] = set()
    while stack:
        node, d = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, (Function, Let)):
            depth[id(node)] = d
            d += 1
        stack.extend((c, d) for c in children(node))
    return depth


def _attrs_key(attrs: Attrs) -> tuple:
    return tuple(sorted(attrs.items(), key=lambda kv: kv[0]))


def _local_fields(node: Expr, kid_keys: list, var_key: Callable[[Var], Any]) -> tuple:
    """What identifies `node` apart from its children (whose keys come in `kid_keys`)."""
    if isinstance(node, Var):
        return var_key(node)
    if isinstance(node, Constant):
        return ("const", node.digest)
    if isinstance(node, Call):
        head = ("op", node.op.name) if isinstance(node.op, Op) else ("callee",)
        return ("call", head, _attrs_key(node.attrs), *kid_keys)
    if isinstance(node, Tuple):
        return ("tuple", *kid_keys)
    if isinstance(node, TupleGetItem):
        return ("getitem", node.index, *kid_keys)
    if isinstance(node, Function):
        return ("fn", tuple(var_key(p) for p in node.params), str(node.ret_type), _attrs_key(node.attrs), *kid_keys)
    if isinstance(node, If):
        return ("if", *kid_keys)
    if isinstance(node, Let):
        return ("let", var_key(node.var), *kid_keys)
    if isinstance(node, Op):
        return ("opref", node.name)
    raise TypeError(f"cannot compare {type(node).__name__}")


def _keys(root: Expr, free_var_key: Callable[[Var, int], Any], combine: Callable[[tuple], Any]) -> Any:
    depth = _binder_depths(root)
    bound: dict[int, tuple] = {}
    for node in post_order(root):
        if isinstance(node, Function):
            for i, p in enumerate(node.params):
                bound[id(p)] = ("param", depth[id(node)], i, str(p.type_annotation))
        elif isinstance(node, Let):
            bound[id(node.var)] = ("letvar", depth[id(node)], str(node.var.type_annotation))
    free_order: dict[int, int] = {}

    def var_key(v: Var) -> Any:
        if id(v) in bound:
            return bound[id(v)]
        return free_var_key(v, free_order.setdefault(id(v), len(free_order)))

    keys: dict[int, Any] = {}
    for node in post_order(root):
        keys[id(node)] = combine(_local_fields(node, [keys[id(c)] for c in children(node)], var_key))
    return keys[id(root)]


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """True when `lhs` and `rhs` are the same program up to node identity and bound-variable names."""
    from .module import IRModule
    if isinstance(lhs, IRModule) and isinstance(rhs, IRModule):
        return lhs.functions.keys() == rhs.functions.keys() and all(
            structural_equal(lhs[k], rhs[k], map_free_vars) for k in lhs.functions)
    if not (isinstance(lhs, Expr) and isinstance(rhs, Expr)):
        return lhs == rhs
    table: dict[tuple, int] = {}

    def intern(fields: tuple) -> int:
        return table.setdefault(fields, len(table))

    def free_key(v: Var, order: int) -> tuple:
        return ("free", order, str(v.type_annotation)) if map_free_vars else ("free", id(v))

    return _keys(lhs, free_key, intern) == _keys(rhs, free_key, intern)


def structural_hash(expr: Any, map_free_vars: bool = False) -> int:
    """A 64-bit hash consistent with `structural_equal`, stable across runs and hash seeds."""
    from .module import IRModule
    if isinstance(expr, IRModule):
        return _digest(tuple((k, structural_hash(f, map_free_vars)) for k, f in expr.functions.items()))
    if not isinstance(expr, Expr):
        return _digest(repr(expr))

    def free_key(v: Var, order: int) -> tuple:
        return ("free", order if map_free_vars else v.name_hint, str(v.type_annotation))

    root = _keys(expr, free_key, lambda fields: _digest(fields).to_bytes(8, "little"))
    return int.from_bytes(root, "little")


def _digest(fields: Any) -> int:
    h = hashlib.blake2b(digest_size=8)
    for f in fields if isinstance(fields, tuple) else (fields,):
        h.update(f if isinstance(f, bytes) else repr(f).encode())
        h.update(b"\x00")
    return int.from_bytes(h.digest(), "little")


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raise AssertionError showing both programs when they differ."""
    if not structural_equal(lhs, rhs, map_free_vars):
        raise AssertionError(f"programs differ:\n--- lhs\n{lhs}\n--- rhs\n{rhs}")
