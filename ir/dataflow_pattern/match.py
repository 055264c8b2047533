"""The matcher: TVM's `DFPatternMatcher` semantics, over an expression graph indexed once.

It is the pattern walk (`walk`) with recording off. The semantics of each pattern kind (and the
corners: memoized sub-patterns, commutative and re-associated calls, attribute lookup, types on
demand, dominator paths) are written once, in `semantics`, for the matcher, the explainer and
the e-matching compiler alike.
"""

from __future__ import annotations

from ..expr import Expr
from .errors import InvalidPatternError
from .indexed_graph import IndexedGraph
from .nodes import DFPattern, is_recursive
from .walk import ExprGraph, Walker, raised_recursion_limit, recursion_frames

__all__ = ["DFPatternMatcher", "match", "find_matches", "recursion_frames", "raised_recursion_limit"]


class DFPatternMatcher:
    """Matches patterns against nodes of the graph rooted at `root`.

    The graph index (users, post-dominators) is built on the first dominator pattern and then
    shared by every match, so matching all nodes of a model costs one index. After a successful
    `match`, `node_map` maps each pattern node to the expressions it bound.
    """

    def __init__(self, root: Expr, graph: IndexedGraph | None = None):
        if not isinstance(root, Expr):
            raise TypeError(f"a matcher needs an IR expression, got {type(root).__name__} {root!r}")
        self.root = root
        self.exprs = ExprGraph(root, graph)
        self._walker = Walker(self.exprs, record=False)
        self._frames: dict[DFPattern, int] = {}

    @property
    def graph(self) -> IndexedGraph:
        """The dataflow index of the root (built on first use)."""
        return self.exprs.index

    @property
    def node_map(self) -> dict[DFPattern, list[Expr]]:
        """Pattern node -> bound expressions, from the last successful `match`."""
        return {p: list(exprs) for p, exprs in self._walker.memo.items()}

    def match(self, pattern: DFPattern, expr: Expr | None = None) -> bool:
        """Whether `expr` (default: the root) matches `pattern`."""
        if not isinstance(pattern, DFPattern):
            raise InvalidPatternError(f"match expects a pattern, got {type(pattern).__name__} {pattern!r}")
        if expr is not None and not isinstance(expr, Expr):
            raise TypeError(f"match expects an IR expression, got {type(expr).__name__} {expr!r}")
        self._walker.reset()
        expr = self.root if expr is None else expr
        frames = self._frames.get(pattern)
        if frames is None:
            frames = self._frames[pattern] = recursion_frames(pattern, len(self.graph)) if is_recursive(pattern) else 0
        if not frames:
            return self._walker.visit(pattern, expr) is None
        with raised_recursion_limit(frames):
            return self._walker.visit(pattern, expr) is None


def match(pattern: DFPattern, expr: Expr) -> bool:
    """Whether `expr` matches `pattern`; dominator checks see the graph rooted at `expr`."""
    return DFPatternMatcher(expr).match(pattern)


def find_matches(pattern: DFPattern, expr: Expr) -> list[Expr]:
    """Every node of `expr` that matches `pattern`, in post-DFS order (one index for all of them).

    Dominator checks see the whole graph of `expr`, as in `partition` and `rewrite`.
    """
    matcher = DFPatternMatcher(expr)
    return [node for node in matcher.graph.order if matcher.match(pattern, node)]
