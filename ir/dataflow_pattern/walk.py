"""The one interpretation of the pattern language: a walk of a pattern over a graph's values.

The direct matcher (`match`) is this walk with recording off; the explainer (`explain`) is the
same walk with recording on, so each failure says why. The e-matching compiler
(`eqsat.rules.dfpattern`) reads the same table and helpers. Each pattern kind is interpreted by
its entry in `KINDS`, a handler `(walker, pattern, value, form, depth) -> Miss | None`; a kind
that only tests the matched value's type is a `TypeCheck`, which the compiler reads as well, so
adding such a kind is one entry.

Rules worth knowing (each is TVM's, but where said otherwise):

* A pattern node binds one value per match: a sub-pattern used twice must meet the same node.
  Failed branches forget what they bound.
* A redirected wildcard (`redirect_to`) matches what its target matches. In a recursive pattern
  the bindings of one match are shared by every trip around the cycle: the cycle's own nodes
  collect one binding per trip (`node_map` lists them innermost first), and any other node inside
  the cycle (e.g. a weight `wildcard()` next to the recursion) binds once, so every trip must meet
  that same node. A later use of a node with several bindings meets the latest (the outermost of
  the last chain it matched; TVM fails an internal check there).
* A call pattern whose callee is `is_op("add")` or `is_op("multiply")` also tries its two
  arguments swapped (`argument_orders`). When the ops differ, `divide(multiply(a, b), c)` also
  matches `multiply(b, divide(a, c))` (and `a` with `b` exchanged), and `multiply(x, divide(a, c))`
  matches `divide(multiply(a, x), c)` (`reassociations`).
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

A value may have several forms (an e-class and its e-nodes, `eqsat.egraph.pattern_graph`); an
IR node is its own only form (`ExprGraph`).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Protocol, Sequence

from ..attrs import freeze_value
from ..errors import IRError
from ..expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from ..op.registry import Op
from ..printer import node_names
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
)

__all__ = [
    "Graph", "ExprGraph", "Miss", "Walker", "KINDS", "TypeCheck", "FAILED", "argument_orders", "reassociations",
    "op_name", "attr_lookup", "attr_mismatch", "MISSING", "expr_equal", "is_leaf", "recursion_frames",
    "raised_recursion_limit",
]

COMMUTATIVE = ("add", "multiply")
FRAMES_PER_VISIT = 8  # Python frames one nested sub-pattern visit takes at most (visit, form, handler, ...)
MISSING = object()
"""What an attribute lookup returns for an attribute the node lacks."""


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


# -- semantics shared with the e-matching compiler ---------------------------------------------
def op_name(p: DFPattern) -> str | None:
    """The op name when `p` is a call pattern whose callee is exactly `is_op(name)`."""
    if isinstance(p, CallPattern) and isinstance(p.op, ExprPattern) and isinstance(p.op.expr, Op):
        return p.op.expr.name
    return None


def _binary(p: DFPattern) -> bool:
    return isinstance(p, CallPattern) and p.args is not None and len(p.args) == 2


def argument_orders(p: CallPattern) -> tuple[tuple[DFPattern, ...], ...]:
    """The argument patterns of `p` in each order they may meet a call's arguments (commutativity)."""
    if op_name(p) in COMMUTATIVE and _binary(p):
        return (p.args, p.args[::-1])
    return (p.args,)


def reassociations(p: CallPattern) -> list[CallPattern]:
    """TVM's re-associated forms of a divide/multiply pattern, tried on calls of the other op."""
    name = op_name(p)
    if not _binary(p) or name not in ("divide", "multiply"):
        return []
    a, b = p.args
    if name == "divide":
        if op_name(a) != "multiply" or not _binary(a):
            return []
        return [CallPattern(a.op, (a.args[1 - k], CallPattern(p.op, (a.args[k], b)))) for k in (0, 1)]
    for k in (0, 1):  # TVM tries the first divide argument only
        inner = p.args[k]
        if op_name(inner) == "divide" and _binary(inner):
            return [CallPattern(inner.op, (CallPattern(p.op, (inner.args[0], p.args[1 - k])), inner.args[1]))]
    return []


def attr_mismatch(wanted: Any, lookup: Callable[[str], Any]) -> str | None:
    """The first key of `wanted` whose value `lookup` lacks (`MISSING`) or reads differently; None if none."""
    for key, want in wanted.items():
        got = lookup(key)
        if got is MISSING:
            return key
        if isinstance(want, Expr) or isinstance(got, Expr):
            same = isinstance(want, Expr) and isinstance(got, Expr) and structural_equal(want, got)
        else:
            same = freeze_value(want) == freeze_value(got)
        if not same:
            return key
    return None


def attr_lookup(node: Any) -> Callable[[str], Any] | None:
    """How to read `node`'s attributes: an op's registry attributes, a call's or a function's own."""
    if isinstance(node, Op):
        return lambda key: node.get_attr(key, MISSING)
    if isinstance(node, (Call, Function)):
        return lambda key: node.attrs.get(key, MISSING)
    return None


def expr_equal(target: Expr, expr: Expr) -> bool:
    """Whether `expr` is what `is_expr(target)` names: the node itself, or structurally equal."""
    if target is expr:
        return True
    if type(target) is not type(expr) or isinstance(expr, (Op, Var)):
        return False  # ops are unique; distinct free variables are never equal
    if isinstance(expr, Constant):
        return (target.dtype == expr.dtype and target.shape == expr.shape
                and target.data.tobytes() == expr.data.tobytes())
    return structural_equal(target, expr)


def is_leaf(expr: Expr) -> bool:
    """An input that a dominator path skips: a variable or a constant."""
    return isinstance(expr, (Var, Constant))


# -- the walk ----------------------------------------------------------------------------------
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
        self._memoize = True

    def reset(self) -> None:
        """Forget every binding, for the next match."""
        if self._bound or self.matched:
            self.memo.clear()
            self.forms.clear()
            self.matched.clear()
            self._bound.clear()
        self._memoize = True

    def visit(self, p: DFPattern, value: Any, depth: int = 0) -> Miss | None:
        """Match `p` against any form of `value`."""
        if self._memoize and p in self.memo:
            return self._same(p, value, depth)
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
        if self._memoize and p in self.memo:
            return self._same(p, value, depth)
        return self._handle(p, value, form, depth)

    def _handle(self, p: DFPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        """`p`'s `KINDS` entry on `form`, binding `p` to `value` when it matches."""
        try:
            handler = KINDS[type(p)]
        except KeyError:
            raise InvalidPatternError(f"cannot match a {type(p).__name__}; build patterns with the "
                                      f"ir.dataflow_pattern builders, or add the kind to KINDS") from None
        mark = len(self._bound)
        miss = handler(self, p, value, form, depth)
        if miss is None:
            self.memo.setdefault(p, []).append(value)
            self._bound.append(p)
            if self.record:
                self.forms[p] = form
                self.matched.append((p, value))
        else:
            self.unwind(mark)
        return miss

    def fail(self, p: DFPattern, value: Any, cause: str, depth: int, reason: Callable[[], str],
             options: tuple[Miss, ...] = (), because: Miss | None = None) -> Miss:
        """The miss of `p` at `value` (`reason` is only called when recording)."""
        if not self.record:
            return FAILED
        return Miss(p, value, cause, reason(), depth, options, because)

    def kind_miss(self, p: DFPattern, value: Any, form: Expr, want: str, depth: int) -> Miss:
        return self.fail(p, value, "kind", depth, lambda: f"{self.graph.describe(value)} is {_kind(form)}, not {want}")

    def operands(self, patterns: Sequence[DFPattern], operands: Sequence[Expr], depth: int) -> Miss | None:
        """Each pattern against the value of the operand at its position (the lengths are equal)."""
        for q, operand in zip(patterns, operands, strict=True):  # a loop: nested visits take no C stack
            miss = self.visit(q, self.graph.value_of(operand), depth + 1)
            if miss is not None:
                return miss
        return None

    def first_of(self, p: DFPattern, value: Any, depth: int, attempts: Sequence[Callable[[], Miss | None]],
                 why: Callable[[], str]) -> Miss | None:
        """The first attempt that matches; else an `alternatives` miss listing each (or the one)."""
        misses = []
        for attempt in attempts:
            before, mark = len(self.matched), len(self._bound)
            miss = attempt()
            if miss is None:
                return None
            self.unwind(mark)
            misses.append(self._progress(miss, before))
        if len(misses) == 1:
            return misses[0]
        return self.fail(p, value, "alternatives", depth, why, tuple(misses))

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


Handler = Callable[[Walker, Any, Any, Expr, int], "Miss | None"]


def _kind(expr: Expr) -> str:
    if isinstance(expr, Call):
        return f"a call of {expr.op.name}" if isinstance(expr.op, Op) else "a call of a function value"
    if isinstance(expr, Op):
        return f"op {expr.name}"
    return {Var: "a variable", Constant: "a constant", Tuple: "a tuple", TupleGetItem: "a tuple item",
            Function: "a function", If: "an if", Let: "a let"}.get(type(expr), type(expr).__name__)


def short(p: DFPattern) -> str:
    """The pattern's text on one line, cut to a readable length."""
    text = " ".join(repr(p).split())
    return text if len(text) <= 90 else text[:87] + "..."


# -- leaves ------------------------------------------------------------------------------------
def _wildcard(w: Walker, p: WildcardPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    return None if p.redirect is None else w.visit_form(p.redirect, value, form, depth + 1)


def _expr(w: Walker, p: ExprPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if expr_equal(p.expr, form):
        return None
    if isinstance(p.expr, Op):
        called = form.name if isinstance(form, Op) else _kind(form)
        return w.fail(p, value, "op", depth, lambda: f"the call is of {called}, not {p.expr.name}")
    return w.fail(p, value, "expr", depth, lambda: f"{w.graph.describe(value)} is not {p.expr!r}")


def _var(w: Walker, p: VarPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, Var):
        return w.kind_miss(p, value, form, "a variable", depth)
    if p.name and p.name != form.name_hint:
        return w.fail(p, value, "name", depth, lambda: f"the variable is %{form.name_hint}, not %{p.name}")
    return None


def _constant(w: Walker, p: ConstantPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if isinstance(form, Constant):
        return None
    return w.fail(p, value, "not_constant", depth,
                  lambda: f"{w.graph.describe(value)} is {_kind(form)}, not a constant")


# -- structure ---------------------------------------------------------------------------------
def _call(w: Walker, p: CallPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, Call):
        return w.kind_miss(p, value, form, "a call", depth)
    miss = w.visit(p.op, form.op if isinstance(form.op, Op) else w.graph.value_of(form.op), depth + 1)
    if miss is not None:
        for alt in reassociations(p):  # each is a call of the other op: tried on such calls only
            if form.op is alt.op.expr and w.visit_form(alt, value, form, depth) is None:
                return None
        # a wrong op is the call's failure: name the call, not the op
        return w.fail(p, value, miss.cause, depth, lambda: miss.reason) if miss.cause == "op" else miss
    if p.args is None:
        return None
    if len(p.args) != len(form.args):
        return w.fail(p, value, "arity", depth, lambda: f"{w.graph.describe(value)} has {len(form.args)} "
                      f"argument(s), the pattern {len(p.args)}")
    return w.first_of(p, value, depth, [lambda args=args: w.operands(args, form.args, depth)
                                        for args in argument_orders(p)],
                      lambda: f"{op_name(p)} matches in neither argument order")


def _function(w: Walker, p: FunctionPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, Function):
        return w.kind_miss(p, value, form, "a function", depth)
    if p.params is not None:
        if len(p.params) != len(form.params):
            return w.fail(p, value, "arity", depth, lambda: f"the function has {len(form.params)} "
                          f"parameter(s), the pattern {len(p.params)}")
        miss = w.operands(p.params, form.params, depth)
        if miss is not None:
            return miss
    return w.visit(p.body, w.graph.value_of(form.body), depth + 1)


def _tuple(w: Walker, p: TuplePattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, Tuple):
        return w.kind_miss(p, value, form, "a tuple", depth)
    if p.fields is None:
        return None
    if len(p.fields) != len(form.fields):
        return w.fail(p, value, "arity", depth, lambda: f"the tuple has {len(form.fields)} field(s), "
                      f"the pattern {len(p.fields)}")
    return w.operands(p.fields, form.fields, depth)


def _tuple_get_item(w: Walker, p: TupleGetItemPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, TupleGetItem):
        return w.kind_miss(p, value, form, "a tuple item", depth)
    if p.index is not None and p.index != form.index:
        return w.fail(p, value, "index", depth, lambda: f"{w.graph.describe(value)} takes item {form.index}, "
                      f"not {p.index}")
    return w.visit(p.tuple, w.graph.value_of(form.tuple_value), depth + 1)


def _if(w: Walker, p: IfPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, If):
        return w.kind_miss(p, value, form, "an if", depth)
    return w.operands((p.cond, p.true_branch, p.false_branch), (form.cond, form.true_branch, form.false_branch),
                      depth)


def _let(w: Walker, p: LetPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, Let):
        return w.kind_miss(p, value, form, "a let", depth)
    return w.operands((p.var, p.value, p.body), (form.var, form.value, form.body), depth)


def _alt(w: Walker, p: AltPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    return w.first_of(p, value, depth, [lambda q=q: w.visit_form(q, value, form, depth + 1)
                                        for q in (p.left, p.right)], lambda: "neither alternative matches")


# -- properties --------------------------------------------------------------------------------
def _attr(w: Walker, p: AttrPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    miss = w.visit_form(p.pattern, value, form, depth + 1)
    if miss is not None:
        return miss
    lookup = attr_lookup(form)
    if lookup is None:
        return w.fail(p, value, "attr", depth, lambda: f"{w.graph.describe(value)} is {_kind(form)}, which has "
                      "no attributes")
    key = attr_mismatch(p.attrs, lookup)
    if key is None:
        return None
    got = lookup(key)
    return w.fail(p, value, "attr", depth, lambda: f"{w.graph.describe(value)} has no attribute {key!r}"
                  if got is MISSING else f"{key} is {got!r}, not {p.attrs[key]!r}")


@dataclass(frozen=True)
class TypeCheck:
    """A kind that matches what its `pattern` field matches when `test(pattern, type)` passes.

    `test` gets the matched value's type (None: untypeable) and returns None, or a cause
    (`explain.CAUSES`) and why, worded after the value's name (`"has shape (1, 3), not (2, 3)"`).
    The walker and the e-matching compiler (a check on the class's type) both read it, so a kind
    of this form is complete with its `KINDS` entry.
    """

    test: Callable[[Any, Type | None], tuple[str, str] | None]

    def __call__(self, w: Walker, p: Any, value: Any, form: Expr, depth: int) -> Miss | None:
        miss = w.visit_form(p.pattern, value, form, depth + 1)
        if miss is not None:
            return miss
        failed = self.test(p, w.graph.type_of(value))
        if failed is None:
            return None
        return w.fail(p, value, failed[0], depth, lambda: f"{w.graph.describe(value)} {failed[1]}")


def _type(p: TypePattern, ty: Type | None) -> tuple[str, str] | None:
    return None if ty == p.type else ("type", f"has type {ty}, not {p.type}")


def _dtype(p: DataTypePattern, ty: Type | None) -> tuple[str, str] | None:
    if not isinstance(ty, TensorType):
        return "type", f"is not a tensor (type {ty})"
    return None if ty.dtype == p.dtype else ("dtype", f"is {ty.dtype}, not {p.dtype}")


def _shape(p: ShapePattern, ty: Type | None) -> tuple[str, str] | None:
    if not isinstance(ty, TensorType):
        return "type", f"is not a tensor (type {ty})"
    return None if ty.shape == p.shape else ("shape", f"has shape {ty.shape}, not {p.shape}")


# -- dominators --------------------------------------------------------------------------------
def _dominator(w: Walker, p: DominatorPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    """The child, then the region back to the parent (module docstring), then post-dominance.

    The parent binds once (memoized); path nodes match without memoization, so one path pattern
    covers many nodes. Iterative, and each path node is expanded once.
    """
    miss = w.visit_form(p.child, value, form, depth + 1)
    if miss is not None:
        return miss
    graph, describe = w.graph, w.graph.describe
    if not graph.inputs(value):
        return w.fail(p, value, "dominator_path", depth, lambda: f"the child {describe(value)} has no inputs")
    region: dict[Any, None] = {}
    stack = [[value, iter(graph.inputs(value)), False]]  # a node, its inputs, and whether one leads back
    try:
        while stack:
            top = stack[-1]
            node = next(top[1], None)
            if node is None:
                if not top[2]:
                    return w.fail(p, top[0], "dominator_path", depth, lambda: _dead_end(graph, top[0], value))
                stack.pop()
                continue
            w._memoize = True
            if w.visit(p.parent, node, depth + 1) is None or node in region:
                top[2] = True
                continue
            if any(is_leaf(f) for f in graph.forms(node)):
                continue
            w._memoize = False
            path_miss = w.visit(p.path, node, depth + 1)
            if path_miss is not None:
                return w.fail(p, node, "dominator_path", depth, lambda: f"{describe(node)}, on the way from the "
                              f"child {describe(value)} back to the parent, matches neither the parent nor the "
                              "path pattern", because=path_miss)
            top[2] = True
            region[node] = None
            stack.append([node, iter(graph.inputs(node)), False])
    finally:
        w._memoize = True
    if p.parent not in w.memo:  # only in a cyclic e-graph: every input led into the region
        return w.fail(p, value, "dominator_path", depth, lambda: "no input leads back to a node matching the parent")
    parent = w.memo[p.parent][0]
    escaped = graph.escape(value, parent, [parent, *region])
    if escaped is None:
        return None
    inside, user = escaped
    return w.fail(p, value, "outside_consumer", depth, lambda: f"{describe(inside)} inside the region from the "
                  f"parent {describe(parent)} to the child {describe(value)} is also used by {describe(user)} "
                  "outside it")


def _dead_end(graph: Graph, node: Any, child: Any) -> str:
    """Why a node (the child or a path node) none of whose inputs leads back to the parent fails."""
    what = f"the child {graph.describe(node)}" if node is child else \
        f"the path reaches {graph.describe(node)}, which"
    why = "has no inputs" if not graph.inputs(node) else "has only variables or constants as inputs (a path skips them)"
    return f"{what} {why}, so it does not lead back to the parent"


KINDS: dict[type, Handler] = {
    WildcardPattern: _wildcard,
    ExprPattern: _expr,
    VarPattern: _var,
    ConstantPattern: _constant,
    CallPattern: _call,
    FunctionPattern: _function,
    TuplePattern: _tuple,
    TupleGetItemPattern: _tuple_get_item,
    IfPattern: _if,
    LetPattern: _let,
    AltPattern: _alt,
    AttrPattern: _attr,
    TypePattern: TypeCheck(_type),
    DataTypePattern: TypeCheck(_dtype),
    ShapePattern: TypeCheck(_shape),
    DominatorPattern: _dominator,
}
"""pattern class -> its interpretation; the one place each kind's semantics is written."""
