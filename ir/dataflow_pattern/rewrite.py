"""`rewrite`: replace pattern matches by what callbacks return, until nothing changes (TVM semantics).

One pass applies one callback: its pattern's accepted matches (see `grouping`) are found in the
current graph, and the graph is rebuilt bottom-up, calling `callback(pre, post, node_map)` at each
match root (`pre`: the original node; `post`: it with rewritten inputs; `node_map`: pattern node
-> bound nodes after rewriting). A round applies every callback in order; rounds repeat until a
round leaves the graph structurally unchanged. A `rewrite_once` callback retires after the first
pass in which it changed the graph. More than `MAX_REWRITE_PASSES` passes is an error naming the
callbacks still changing the graph (TVM's limit, which TVM reports only as a fatal log line). So is
a graph outgrowing `MAX_GROWTH` times its input size (plus `GROWTH_SLACK_NODES`): a callback
whose result contains two matches of its own pattern doubles the graph each pass, and would
exhaust memory long before the pass limit.

A recursive pattern (`redirect_to`) matches a whole chain: the callback runs once, at the
chain's root-most link, and `node_map` lists one node per link for the pattern nodes of the
cycle, innermost first (the root's own node last).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import IRError
from ..expr import Expr
from ..structural import structural_equal
from ..type_infer import infer_type, types_compatible
from ..visitor import count_nodes, rebuild
from .errors import InvalidPatternError, RewriteDivergenceError, RewriteError
from .grouping import group_matches
from .nodes import DFPattern

__all__ = ["DFPatternCallback", "rewrite", "MAX_REWRITE_PASSES", "MAX_GROWTH", "GROWTH_SLACK_NODES"]

MAX_REWRITE_PASSES = 100  # callback applications (TVM's limit)
MAX_GROWTH = 100  # a rewrite may grow the graph to this many times its input's node count ...
GROWTH_SLACK_NODES = 10_000  # ... plus this many nodes, so tiny inputs may still expand


class DFPatternCallback:
    """Subclass it: set `self.pattern` and implement `callback(pre, post, node_map) -> Expr`.

    `require_type`: type-check the graph (`ir.infer_type`) before each of this callback's passes,
    so `pre.checked_type` is available. `rewrite_once`: stop applying this callback after the first
    pass that changed the graph. When the graph is typed, each pass re-types its result, and every
    replacement must type-check to a type compatible with the node it replaces.
    """

    # class-level defaults also serve subclasses whose __init__ skips super().__init__()
    pattern: DFPattern | None = None
    require_type: bool = False
    rewrite_once: bool = False

    def __init__(self, require_type: bool = False, rewrite_once: bool = False):
        self.pattern = None
        self.require_type = require_type
        self.rewrite_once = rewrite_once

    def callback(self, pre: Expr, post: Expr, node_map: dict[DFPattern, list[Expr]]) -> Expr:
        """The replacement for one match; return `post` to keep it."""
        raise NotImplementedError(f"{type(self).__name__} must implement callback(pre, post, node_map)")

    def rewrite(self, expr: Expr) -> Expr:
        """`rewrite(self, expr)`."""
        return rewrite(self, expr)


def _describe(cb: DFPatternCallback) -> str:
    return f"callback {type(cb).__name__} (pattern: {cb.pattern!r})"


def _checked_callbacks(callbacks: Any) -> list[DFPatternCallback]:
    if isinstance(callbacks, DFPatternCallback):
        callbacks = [callbacks]
    if not isinstance(callbacks, Sequence):
        raise InvalidPatternError(f"rewrite expects a DFPatternCallback or a list of them, got "
                                  f"{type(callbacks).__name__} {callbacks!r}")
    for cb in callbacks:
        if not isinstance(cb, DFPatternCallback):
            raise InvalidPatternError(f"rewrite expects DFPatternCallback objects, got {type(cb).__name__} {cb!r}")
        if not isinstance(cb.pattern, DFPattern):
            raise InvalidPatternError(f"callback {type(cb).__name__} has no pattern: set self.pattern to a "
                                      f"pattern in __init__ (got {cb.pattern!r})")
    return list(callbacks)


def _check_result(cb: DFPatternCallback, result: Any) -> None:
    if not isinstance(result, Expr):
        raise RewriteError(f"{_describe(cb)} returned {type(result).__name__} {result!r}; a callback must "
                           f"return an IR expression (return `post` to keep the match)")


def _check_types(cb: DFPatternCallback, graph: Expr, replaced: list[tuple[Expr, Expr]]) -> None:
    """Type-check a pass's result (once, O(graph)); name the callback when a replacement broke types."""
    try:
        infer_type(graph)
        failure = None
    except IRError as err:
        failure = err
    for pre, new in replaced:
        if new.type_inferred and not types_compatible(pre.checked_type, new.checked_type):
            raise RewriteError(f"{_describe(cb)} replaced a node of type {pre.checked_type} by one of type "
                               f"{new.checked_type}")
    if failure is not None:
        raise RewriteError(f"{_describe(cb)} returned an ill-typed expression: {failure}") from failure


def _apply(cb: DFPatternCallback, expr: Expr) -> Expr:
    """One pass of one callback over `expr`; a typed graph stays typed (and is checked)."""
    if cb.require_type:
        try:
            infer_type(expr)
        except IRError as err:
            raise RewriteError(f"{_describe(cb)} has require_type=True, but the graph does not "
                               f"type-check: {err}") from err
    groups = {g.root: g for g in group_matches(cb.pattern, expr)}
    if not groups:
        return expr
    post_of: dict[Expr, Expr] = {}

    def visit(old: Expr, updated: Expr) -> Expr:
        group = groups.get(old)
        if group is not None:
            node_map = {p: [post_of.get(e, e) for e in exprs] for p, exprs in group.node_map.items()}
            updated = cb.callback(old, updated, node_map)
            _check_result(cb, updated)
        post_of[old] = updated
        return updated

    typed = expr.type_inferred
    post = rebuild(expr, visit)
    if typed and post is not expr:
        _check_types(cb, post, [(root, post_of[root]) for root in groups])
    return post


_DIVERGENCE_HINT = ("A callback whose result matches its own pattern rewrites forever: make the result "
                    "differ from the pattern, or pass rewrite_once=True")


def _unchanged(before: Expr, after: Expr) -> bool:
    return before is after or structural_equal(before, after, map_free_vars=True)


def rewrite(callbacks: DFPatternCallback | Sequence[DFPatternCallback], expr: Expr) -> Expr:
    """`expr` rewritten by `callbacks` (one or a list) to a fixed point; see the module docstring."""
    callbacks = _checked_callbacks(callbacks)
    if not isinstance(expr, Expr):
        raise TypeError(f"rewrite expects an IR expression, got {type(expr).__name__} {expr!r}")
    retired: set[int] = set()
    passes = 0
    max_nodes = MAX_GROWTH * count_nodes(expr) + GROWTH_SLACK_NODES
    post = expr
    while True:
        last = post
        changing = []
        for i, cb in enumerate(callbacks):
            if i in retired:
                continue
            before = post
            post = _apply(cb, post)
            passes += 1
            if not _unchanged(before, post):
                changing.append(cb)
                if cb.rewrite_once:
                    retired.add(i)
                if count_nodes(post) > max_nodes:
                    raise RewriteDivergenceError(
                        f"rewrite grew the graph past {max_nodes} nodes in {passes} passes; growing it: "
                        f"{_describe(cb)}. {_DIVERGENCE_HINT}")
        if _unchanged(last, post):
            return post
        if passes >= MAX_REWRITE_PASSES:
            names = ", ".join(_describe(cb) for cb in changing)
            raise RewriteDivergenceError(f"rewrite found no fixed point after {passes} passes; still changing "
                                         f"the graph: {names}. {_DIVERGENCE_HINT}")
