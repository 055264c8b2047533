"""The matcher: TVM's `DFPatternMatcher` semantics, over an expression graph indexed once.

Rules worth knowing (each is TVM's, but where said otherwise):

* A pattern node binds one expression per match: a sub-pattern used twice must meet the same node.
  Failed branches forget what they bound.
* A redirected wildcard (`redirect_to`) matches what its target matches. In a recursive pattern
  the bindings of one match are shared by every trip around the cycle: the cycle's own nodes
  collect one binding per trip (`node_map` lists them innermost first), and any other node inside
  the cycle (e.g. a weight `wildcard()` next to the recursion) binds once, so every trip must meet
  that same node. A later use of a node with several bindings meets the latest (the outermost of
  the last chain it matched; TVM fails an internal check there).
* A call pattern whose callee is `is_op("add")` or `is_op("multiply")` also tries its two
  arguments swapped. When the ops differ, `divide(multiply(a, b), c)` also matches
  `multiply(b, divide(a, c))` (and `a` with `b` exchanged), and `multiply(x, divide(a, c))`
  matches `divide(multiply(a, x), c)`.
* `has_attr` reads call attributes on calls, function attributes on functions and registry
  attributes (`TOpPattern`, ...) on ops; on any other node it never matches.
* `has_type` / `has_dtype` / `has_shape` need types: an expression whose type is not inferred yet
  is type-checked on demand (`ir.infer_type` on the root, else on the expression itself). An
  expression that cannot be typed (e.g. an un-annotated variable) does not match.
* `dominates(parent, path, child)`: every input of the child, and of each path node, is the (one)
  parent, a path node, or a variable or constant, which is skipped (this project's rule: TVM's
  `MatchesPath` demands that such a leaf match the path, then fails on it for having no inputs);
  each of these nodes needs an input that is the parent or a path node; an input is tried as the
  parent first; call paths go through arguments, never the callee; and the child must
  post-dominate the parent in the whole graph. Skipped leaves are not part of the region
  (`partition` makes them inputs of its function).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..attrs import freeze_value
from ..errors import IRError
from ..expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from ..op.registry import Op
from ..structural import structural_equal
from ..type_infer import infer_type
from ..types import TensorType, Type
from ..visitor import post_order
from .errors import InvalidPatternError
from .indexed_graph import IndexedGraph
from .nodes import (
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    IfPattern,
    LetPattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
    is_recursive,
)

__all__ = ["DFPatternMatcher", "match", "find_matches", "recursion_frames", "raised_recursion_limit"]

_MISSING = object()
_COMMUTATIVE = ("add", "multiply")
FRAMES_PER_VISIT = 4  # Python frames one nested sub-pattern visit takes at most (_visit, handler, helper)


def recursion_frames(pattern: DFPattern, nodes: int, frames_per_visit: int = FRAMES_PER_VISIT) -> int:
    """Python frames that matching the recursive `pattern` in a graph of `nodes` nodes may nest.

    Visits nest at most once per sub-pattern per node along a path of the graph; on a long chain
    that goes far past Python's recursion limit (a pattern that is not recursive nests no deeper
    than its own size).
    """
    return frames_per_visit * nodes * sum(1 for _ in post_order(pattern, lambda p: p.children()))


@contextmanager
def raised_recursion_limit(frames: int) -> Iterator[None]:
    """Python's recursion limit raised by `frames` meanwhile.

    Safe because pattern visits are Python-to-Python calls, which take no C stack.
    """
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(old + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _op_name(pattern: DFPattern) -> str | None:
    """The op name when `pattern` is a call pattern whose callee is exactly `is_op(name)`."""
    if isinstance(pattern, CallPattern) and isinstance(pattern.op, ExprPattern) and isinstance(pattern.op.expr, Op):
        return pattern.op.expr.name
    return None


def _is_binary(pattern: DFPattern) -> bool:
    return isinstance(pattern, CallPattern) and pattern.args is not None and len(pattern.args) == 2


def _is_call_of(expr: Expr, name: str) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == name


def _attr_value_equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Expr) or isinstance(actual, Expr):
        return isinstance(expected, Expr) and isinstance(actual, Expr) and structural_equal(expected, actual)
    return freeze_value(expected) == freeze_value(actual)


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
        self._graph = graph
        self._memo: dict[DFPattern, list[Expr]] = {}
        self._matched: list[DFPattern] = []
        self._memoize = True
        self._tried_typing_root = False
        self._untypeable: dict[Expr, None] = {}
        self._frames: dict[DFPattern, int] = {}

    @property
    def graph(self) -> IndexedGraph:
        """The dataflow index of the root (built on first use)."""
        if self._graph is None:
            self._graph = IndexedGraph(self.root)
        return self._graph

    @property
    def node_map(self) -> dict[DFPattern, list[Expr]]:
        """Pattern node -> bound expressions, from the last successful `match`."""
        return {p: list(exprs) for p, exprs in self._memo.items()}

    def match(self, pattern: DFPattern, expr: Expr | None = None) -> bool:
        """Whether `expr` (default: the root) matches `pattern`."""
        if not isinstance(pattern, DFPattern):
            raise InvalidPatternError(f"match expects a pattern, got {type(pattern).__name__} {pattern!r}")
        if expr is not None and not isinstance(expr, Expr):
            raise TypeError(f"match expects an IR expression, got {type(expr).__name__} {expr!r}")
        self._memo.clear()
        self._matched.clear()
        self._memoize = True
        expr = self.root if expr is None else expr
        frames = self._frames_for(pattern)
        if not frames:
            return self._visit(pattern, expr)
        with raised_recursion_limit(frames):
            return self._visit(pattern, expr)

    def _frames_for(self, pattern: DFPattern) -> int:
        """The recursion room matching `pattern` needs here (0 unless it is recursive)."""
        frames = self._frames.get(pattern)
        if frames is None:
            frames = recursion_frames(pattern, len(self.graph)) if is_recursive(pattern) else 0
            self._frames[pattern] = frames
        return frames

    # -- memoized dispatch -----------------------------------------------------------------------
    def _visit(self, pattern: DFPattern, expr: Expr) -> bool:
        if self._memoize and pattern in self._memo:
            return self._memo[pattern][-1] is expr
        watermark = len(self._matched)
        try:
            handler = _HANDLERS[type(pattern)]
        except KeyError:
            raise InvalidPatternError(f"cannot match a {type(pattern).__name__}; build patterns with the "
                                      f"ir.dataflow_pattern builders") from None
        if handler(self, pattern, expr):
            self._memo.setdefault(pattern, []).append(expr)
            self._matched.append(pattern)
            return True
        self._forget(watermark)
        return False

    def _forget(self, watermark: int) -> None:
        for pattern in self._matched[watermark:]:
            self._memo.pop(pattern, None)
        del self._matched[watermark:]

    def _visit_all(self, patterns: tuple[DFPattern, ...] | None, exprs: tuple[Expr, ...]) -> bool:
        if patterns is None:
            return True
        if len(patterns) != len(exprs):
            return False
        for p, e in zip(patterns, exprs):  # a loop, not all(): nested visits then take no C stack
            if not self._visit(p, e):
                return False
        return True

    # -- leaves ----------------------------------------------------------------------------------
    def _wildcard(self, pattern: WildcardPattern, expr: Expr) -> bool:
        return pattern.redirect is None or self._visit(pattern.redirect, expr)

    def _expr(self, pattern: ExprPattern, expr: Expr) -> bool:
        target = pattern.expr
        if target is expr:
            return True
        if type(target) is not type(expr) or isinstance(expr, (Op, Var)):
            return False  # ops are unique; distinct free variables are never equal
        if isinstance(expr, Constant):
            return (target.dtype == expr.dtype and target.shape == expr.shape
                    and target.data.tobytes() == expr.data.tobytes())
        return structural_equal(target, expr)

    def _var(self, pattern: VarPattern, expr: Expr) -> bool:
        return isinstance(expr, Var) and (not pattern.name or pattern.name == expr.name_hint)

    def _constant(self, pattern: ConstantPattern, expr: Expr) -> bool:
        return isinstance(expr, Constant)

    # -- structure -------------------------------------------------------------------------------
    def _call(self, pattern: CallPattern, expr: Expr) -> bool:
        if not isinstance(expr, Call):
            return False
        watermark = len(self._matched)
        if self._visit(pattern.op, expr.op):
            args_mark = len(self._matched)
            if self._visit_all(pattern.args, expr.args):
                return True
            self._forget(args_mark)
            if _op_name(pattern) in _COMMUTATIVE and self._visit_all(pattern.args[::-1], expr.args):
                return True
            self._forget(args_mark)
            return False
        self._forget(watermark)
        return self._associate(pattern, expr, watermark)

    def _associate(self, pattern: CallPattern, expr: Call, watermark: int) -> bool:
        """TVM's divide/multiply re-association, tried when the call's op differs from the pattern's."""
        name = _op_name(pattern)
        if not _is_binary(pattern):
            return False
        if name == "divide":
            inner = pattern.args[0]
            if (_op_name(inner) == "multiply" and _is_binary(inner) and _is_call_of(expr, "multiply")
                    and any(_is_call_of(a, "divide") for a in expr.args)):
                for k in (0, 1):
                    div = CallPattern(pattern.op, (inner.args[k], pattern.args[1]))
                    if self._visit(CallPattern(inner.op, (inner.args[1 - k], div)), expr):
                        return True
                    self._forget(watermark)
        elif name == "multiply":
            for k in (0, 1):
                inner = pattern.args[k]
                if (_op_name(inner) == "divide" and _is_binary(inner) and _is_call_of(expr, "divide")
                        and any(_is_call_of(a, "multiply") for a in expr.args)):
                    mul = CallPattern(pattern.op, (inner.args[0], pattern.args[1 - k]))
                    return self._visit(CallPattern(inner.op, (mul, inner.args[1])), expr)
        return False

    def _function(self, pattern: FunctionPattern, expr: Expr) -> bool:
        return (isinstance(expr, Function) and self._visit_all(pattern.params, expr.params)
                and self._visit(pattern.body, expr.body))

    def _tuple(self, pattern: TuplePattern, expr: Expr) -> bool:
        return isinstance(expr, Tuple) and self._visit_all(pattern.fields, expr.fields)

    def _tuple_get_item(self, pattern: TupleGetItemPattern, expr: Expr) -> bool:
        return (isinstance(expr, TupleGetItem) and pattern.index in (None, expr.index)
                and self._visit(pattern.tuple, expr.tuple_value))

    def _if(self, pattern: IfPattern, expr: Expr) -> bool:
        return (isinstance(expr, If) and self._visit(pattern.cond, expr.cond)
                and self._visit(pattern.true_branch, expr.true_branch)
                and self._visit(pattern.false_branch, expr.false_branch))

    def _let(self, pattern: LetPattern, expr: Expr) -> bool:
        return (isinstance(expr, Let) and self._visit(pattern.var, expr.var)
                and self._visit(pattern.value, expr.value) and self._visit(pattern.body, expr.body))

    def _alt(self, pattern: AltPattern, expr: Expr) -> bool:
        return self._visit(pattern.left, expr) or self._visit(pattern.right, expr)

    # -- properties ------------------------------------------------------------------------------
    def _attr(self, pattern: AttrPattern, expr: Expr) -> bool:
        if not self._visit(pattern.pattern, expr):
            return False
        if isinstance(expr, Op):
            def lookup(key: str) -> Any:
                return expr.get_attr(key, _MISSING)
        elif isinstance(expr, (Call, Function)):
            def lookup(key: str) -> Any:
                return expr.attrs.get(key, _MISSING)
        else:
            return False
        for key, expected in pattern.attrs.items():
            actual = lookup(key)
            if actual is _MISSING or not _attr_value_equal(expected, actual):
                return False
        return True

    def _type_of(self, expr: Expr) -> Type | None:
        """`expr`'s type, inferring types on demand; None when the expression cannot be typed."""
        if not expr.type_inferred and not self._tried_typing_root:
            self._tried_typing_root = True
            try:
                infer_type(self.root)
            except IRError:
                pass  # part of the graph is untypeable; type what we can, expression by expression
        if not expr.type_inferred and expr not in self._untypeable:
            try:
                infer_type(expr)
            except IRError:
                self._untypeable[expr] = None
        return expr.checked_type if expr.type_inferred else None

    def _tensor_type_of(self, expr: Expr) -> TensorType | None:
        ty = self._type_of(expr)
        return ty if isinstance(ty, TensorType) else None

    def _type(self, pattern: TypePattern, expr: Expr) -> bool:
        return self._visit(pattern.pattern, expr) and self._type_of(expr) == pattern.type

    def _dtype(self, pattern: DataTypePattern, expr: Expr) -> bool:
        if not self._visit(pattern.pattern, expr):
            return False
        ty = self._tensor_type_of(expr)
        return ty is not None and ty.dtype == pattern.dtype

    def _shape(self, pattern: ShapePattern, expr: Expr) -> bool:
        if not self._visit(pattern.pattern, expr):
            return False
        ty = self._tensor_type_of(expr)
        return ty is not None and ty.shape == pattern.shape

    # -- dominators ------------------------------------------------------------------------------
    def _dominator(self, pattern: DominatorPattern, expr: Expr) -> bool:
        if not self._visit(pattern.child, expr):
            return False
        matches_path = self._matches_path(pattern, expr)
        self._memoize = True
        if not matches_path:
            return False
        parent = self._memo.get(pattern.parent)
        return parent is not None and self.graph.dominates(expr, parent[0])

    def _matches_path(self, pattern: DominatorPattern, child: Expr) -> bool:
        """Every input of `child`, transitively through path nodes, reaches the one parent or is a
        skipped leaf (module docstring); each node checked has an input that reaches the parent.

        The parent binds once (memoized); path nodes match without memoization, so one path
        pattern covers many nodes. Iterative, and each path node is expanded once.
        """
        expanded: dict[Expr, None] = {}
        stack = [[iter(self.graph.path_inputs(child)), False]]  # a node's inputs, and whether one leads back
        while stack:
            top = stack[-1]
            node = next(top[0], None)
            if node is None:
                if not top[1]:
                    return False
                stack.pop()
                continue
            self._memoize = True
            if self._visit(pattern.parent, node) or node in expanded:
                top[1] = True
                continue
            if _is_leaf(node):
                continue
            self._memoize = False
            if not self._visit(pattern.path, node):
                return False
            top[1] = True
            expanded[node] = None
            stack.append([iter(self.graph.path_inputs(node)), False])
        return True


def _is_leaf(expr: Expr) -> bool:
    """An input that a dominator path skips: a variable or a constant."""
    return isinstance(expr, (Var, Constant))


_HANDLERS: dict[type, Callable[[DFPatternMatcher, Any, Expr], bool]] = {
    WildcardPattern: DFPatternMatcher._wildcard,
    ExprPattern: DFPatternMatcher._expr,
    VarPattern: DFPatternMatcher._var,
    ConstantPattern: DFPatternMatcher._constant,
    CallPattern: DFPatternMatcher._call,
    FunctionPattern: DFPatternMatcher._function,
    TuplePattern: DFPatternMatcher._tuple,
    TupleGetItemPattern: DFPatternMatcher._tuple_get_item,
    IfPattern: DFPatternMatcher._if,
    LetPattern: DFPatternMatcher._let,
    AltPattern: DFPatternMatcher._alt,
    AttrPattern: DFPatternMatcher._attr,
    TypePattern: DFPatternMatcher._type,
    DataTypePattern: DFPatternMatcher._dtype,
    ShapePattern: DFPatternMatcher._shape,
    DominatorPattern: DFPatternMatcher._dominator,
}


def match(pattern: DFPattern, expr: Expr) -> bool:
    """Whether `expr` matches `pattern`; dominator checks see the graph rooted at `expr`."""
    return DFPatternMatcher(expr).match(pattern)


def find_matches(pattern: DFPattern, expr: Expr) -> list[Expr]:
    """Every node of `expr` that matches `pattern`, in post-DFS order (one index for all of them).

    Dominator checks see the whole graph of `expr`, as in `partition` and `rewrite`.
    """
    matcher = DFPatternMatcher(expr)
    return [node for node in matcher.graph.order if matcher.match(pattern, node)]
