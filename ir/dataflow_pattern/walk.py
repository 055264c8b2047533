"""The pattern walk: one matcher for the pattern language, with or without saying why.

A `Walker` matches a pattern against the values of a `Graph`, each pattern kind by its entry in
`semantics.KINDS`. With recording off it is the direct matcher (`match`); with recording on it is
the explainer (`explain`), each failure a `Miss` with its cause. A value may have several forms
(an e-class and its e-nodes, `eqsat.egraph.pattern_graph`); an IR node is its own only form
(`ExprGraph`).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Protocol, Sequence

from ..errors import IRError
from ..expr import Call, Constant, Expr, Var
from ..op.registry import Op
from ..printer import node_names
from ..type_infer import infer_type
from ..types import Type
from ..visitor import post_order
from .errors import InvalidPatternError
from .indexed_graph import IndexedGraph
from .nodes import DFPattern, ExprPattern
from .semantics import KINDS

__all__ = ["Graph", "ExprGraph", "Miss", "FAILED", "Walker", "short", "recursion_frames", "raised_recursion_limit"]

FRAMES_PER_VISIT = 8  # Python frames one nested sub-pattern visit takes at most (visit, handler, ...)


# -- recursion room ----------------------------------------------------------------------------
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


# -- the graph a walk runs over ----------------------------------------------------------------
class Graph(Protocol):
    """What the walk needs to know about the values a pattern meets."""

    def forms(self, value: Any) -> Sequence[Expr]:
        """The ways `value` is computed: IR nodes whose operands stand for values (`value_of`)."""

    def value_of(self, operand: Expr) -> Any:
        """The value an operand of a form stands for."""

    def type_of(self, value: Any) -> Type | None:
        """The value's type (None when it has none)."""

    def inputs(self, value: Any) -> tuple[Any, ...]:
        """The values flowing into `value`, as a dominator path follows them."""

    def escape(self, child: Any, parent: Any, region: Sequence[Any]) -> tuple[Any, Any] | None:
        """A node of the region (parent or path) and a consumer of it outside the region, when the
        child does not post-dominate the parent; None when it does (or this graph cannot tell)."""

    def describe(self, value: Any) -> str:
        """A short name for a value in messages (`%3 (nn.dense)`)."""


class ExprGraph:
    """An IR program as a `Graph`: each node is its own only form; names are the printer's.

    The dataflow index (users, post-dominators) is built on first use and types are inferred on
    demand, so matching every node of a model costs one index and one type inference.
    """

    def __init__(self, root: Expr, index: IndexedGraph | None = None):
        self.root = root
        self._index = index
        self._names: dict[Expr, str] | None = None
        self._tried_typing_root = False
        self._untypeable: dict[Expr, None] = {}

    @property
    def index(self) -> IndexedGraph:
        """The dataflow index of the root (built on first use)."""
        if self._index is None:
            self._index = IndexedGraph(self.root)
        return self._index

    def forms(self, value: Expr) -> Sequence[Expr]:
        return (value,)

    def value_of(self, operand: Expr) -> Expr:
        return operand

    def type_of(self, value: Expr) -> Type | None:
        if not value.type_inferred and not self._tried_typing_root:
            self._tried_typing_root = True
            try:
                infer_type(self.root)
            except IRError:
                pass  # part of the graph is untypeable; type what we can, expression by expression
        if not value.type_inferred and value not in self._untypeable:
            try:
                infer_type(value)
            except IRError:
                self._untypeable[value] = None
        return value.checked_type if value.type_inferred else None

    def inputs(self, value: Expr) -> tuple[Expr, ...]:
        return self.index.path_inputs(value)

    def escape(self, child: Expr, parent: Expr, region: Sequence[Expr]) -> tuple[Expr, Expr] | None:
        index = self.index
        if index.dominates(child, parent):
            return None
        inside = {child, *region}
        for node in region:
            user = next((u for u in index.outputs(node) if u not in inside), None)
            if user is not None:
                return node, user
        return parent, self.root

    def describe(self, value: Expr) -> str:
        if self._names is None:
            self._names = node_names(self.root)
        name = self._names.get(value)
        if isinstance(value, Var):
            return name or f"%{value.name_hint}"
        if isinstance(value, Constant):
            return f"a constant of shape {value.shape}, {value.dtype}"
        if isinstance(value, Op):
            return f"op {value.name}"
        where = name or ("the root" if value is self.root else "a node")
        return f"{where} ({value.op.name})" if isinstance(value, Call) and isinstance(value.op, Op) else where


@dataclass(frozen=True)
class Miss:
    """A sub-pattern that failed at a node: the cause (an `explain.CAUSES` key), why in words, and
    for `alternatives` each way that was tried."""

    pattern: DFPattern
    node: Any
    cause: str
    reason: str
    depth: int
    """how deep in the pattern the failing sub-pattern sits (0: the root)."""
    options: tuple["Miss", ...] = ()
    because: "Miss | None" = None
    """the sub-pattern failure behind this one (a dominator path node: why it is not on the path)."""
    progress: int = 0
    """as an option: how many sub-patterns matched during this attempt before it failed."""

    def first_failure(self) -> "Miss":
        """The leaf failure of the option that got furthest (most sub-patterns matched; the first on ties)."""
        miss = self
        while miss.options:
            miss = max(miss.options, key=lambda m: m.progress)
        return miss


FAILED = Miss(DFPattern(), None, "unexplained", "", 0)
"""The miss of a walk that does not record why (the matcher)."""


class Walker:
    """Matches patterns against the values of a `Graph`, each kind by its `KINDS` entry.

    `visit(pattern, value)` returns None when the pattern matches, else a `Miss`. With `record`
    off (the matcher) every miss is `FAILED` and only the bindings are kept; with it on (the
    explainer) each miss says why, and `matched` and `forms` tell what matched on the way.
    """

    def __init__(self, graph: Graph, record: bool = True):
        self.graph = graph
        self.record = record
        self.memo: dict[DFPattern, list[Any]] = {}
        """sub-pattern -> the values it is bound to, in binding order."""
        self.forms: dict[DFPattern, Expr] = {}
        """(recording) sub-pattern -> the form of its latest value that it matched."""
        self.matched: list[tuple[DFPattern, Any]] = []
        """(recording) every (sub-pattern, value) that matched during the walk, in order."""
        self._bound: list[DFPattern] = []
        self.memoize = True
        """whether a bound sub-pattern must meet its binding again (off while a dominator path is walked)."""
        self._own_forms = isinstance(graph, ExprGraph)  # every value is its own only form

    def reset(self) -> None:
        """Forget every binding, for the next match."""
        if self._bound or self.matched:
            self.memo.clear()
            self.forms.clear()
            self.matched.clear()
            self._bound.clear()
        self.memoize = True

    def visit(self, p: DFPattern, value: Any, depth: int = 0) -> Miss | None:
        """Match `p` against any form of `value`."""
        if self.memoize and p in self.memo:
            return self._same(p, value, depth)
        if self._own_forms:
            return self._handle(p, value, value, depth)
        forms = self.graph.forms(value)
        if len(forms) == 1:
            return self._handle(p, value, forms[0], depth)
        misses = []
        for form in forms:
            before = len(self.matched)
            miss = self._handle(p, value, form, depth)
            if miss is None:
                return None
            misses.append(self._progress(miss, before))
        return self.fail(p, value, "alternatives", depth, lambda: f"none of the {len(misses)} forms of "
                         f"{self.graph.describe(value)} matches", tuple(misses))

    def visit_form(self, p: DFPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        """Match `p` against one form of `value` (a memoized `p` must be bound to `value`)."""
        if self.memoize and p in self.memo:
            return self._same(p, value, depth)
        return self._handle(p, value, form, depth)

    def _handle(self, p: DFPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        """`p`'s `KINDS` entry on `form`, binding `p` to `value` when it matches."""
        handler = KINDS.get(type(p))
        if handler is None:
            raise InvalidPatternError(f"cannot match a {type(p).__name__}; build patterns with the "
                                      f"ir.dataflow_pattern builders, or add the kind to KINDS")
        bound = self._bound
        mark = len(bound)
        miss = handler(self, p, value, form, depth)
        if miss is None:
            self.memo.setdefault(p, []).append(value)
            bound.append(p)
            if self.record:
                self.forms[p] = form
                self.matched.append((p, value))
        elif len(bound) > mark:
            self.unwind(mark)
        return miss

    def fail(self, p: DFPattern, value: Any, cause: str, depth: int, reason: Callable[[], str],
             options: tuple[Miss, ...] = (), because: Miss | None = None) -> Miss:
        """The miss of `p` at `value` (`reason` is only called when recording)."""
        if not self.record:
            return FAILED
        return Miss(p, value, cause, reason(), depth, options, because)

    def operands(self, patterns: Sequence[DFPattern], operands: Sequence[Expr], depth: int) -> Miss | None:
        """Each pattern against the value of the operand at its position (the lengths are equal)."""
        for q, operand in zip(patterns, operands, strict=True):  # a loop: nested visits take no C stack
            miss = self.visit(q, self.graph.value_of(operand), depth + 1)
            if miss is not None:
                return miss
        return None

    def first_of(self, p: DFPattern, value: Any, depth: int, attempt: Callable[[Any], Miss | None],
                 ways: Sequence[Any], why: str) -> Miss | None:
        """None when `attempt(way)` matches for the first of `ways`; else an `alternatives` miss listing
        each (`why` says what failed), or the one miss of a single way."""
        misses = []
        for way in ways:
            before, mark = len(self.matched), len(self._bound)
            miss = attempt(way)
            if miss is None:
                return None
            if len(self._bound) > mark:
                self.unwind(mark)
            misses.append(self._progress(miss, before))
        if len(misses) == 1:
            return misses[0]
        return self.fail(p, value, "alternatives", depth, lambda: why, tuple(misses))

    def unwind(self, mark: int) -> None:
        """Forget the bindings made since `len(self._bound)` was `mark`."""
        for q in self._bound[mark:]:
            self.memo.pop(q, None)
            self.forms.pop(q, None)
        del self._bound[mark:]

    def _progress(self, miss: Miss, before: int) -> Miss:
        return replace(miss, progress=len(self.matched) - before) if self.record else miss

    def _same(self, p: DFPattern, value: Any, depth: int) -> Miss | None:
        bound = self.memo[p][-1]
        if bound is value or (not isinstance(bound, Expr) and bound == value):
            return None
        describe = self.graph.describe
        if isinstance(p, ExprPattern) and isinstance(p.expr, Op):  # ops are unique: another op, not a rebinding
            called = value.name if isinstance(value, Op) else describe(value)
            return self.fail(p, value, "op", depth, lambda: f"the call is of {called}, not {p.expr.name}")
        return self.fail(p, value, "binding", depth, lambda: f"{short(p)} is used more than once, so it must "
                         f"meet one node: it met {describe(bound)} before, here {describe(value)}")


def short(p: DFPattern) -> str:
    """The pattern's text on one line, cut to a readable length."""
    text = " ".join(repr(p).split())
    return text if len(text) <= 90 else text[:87] + "..."
