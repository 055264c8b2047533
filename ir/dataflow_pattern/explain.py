"""Why a pattern did not match: the first sub-pattern that failed, at which node, and why.

    pattern = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), is_constant()))
    print(explain_match(pattern, relay.nn.relu(relay.nn.conv2d(x, w))))
    # no match at the root (nn.relu): is_constant() failed at %w: %w is a variable, not a constant [not_constant]

The explanation walks the pattern as the matcher does (memoized sub-patterns, both argument
orders of `add`/`multiply`, every alternative, dominator paths) and records each failure with a
*cause*, one of `CAUSES`. Where there is more than one way to match (alternatives, argument
orders, or several forms of one value in an e-graph), the failure lists each way in `options`,
and `first_failure` follows the one that got deepest into the pattern. Whether the pattern
matches is the matcher's answer (`match`); the walk only says why not.

The walk runs over a `Graph`: `ExprGraph` for IR (one form per node), or an e-graph, where a
value is an e-class whose forms are its e-nodes (`eqsat.why`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Protocol, Sequence

from ..expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from ..op.registry import Op
from ..printer import node_names
from ..types import TensorType, Type
from ..visitor import post_order
from .errors import InvalidPatternError
from .indexed_graph import IndexedGraph
from .match import DFPatternMatcher, _attr_value_equal, _is_leaf, raised_recursion_limit, recursion_frames
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

__all__ = ["CAUSES", "Miss", "MatchExplanation", "Graph", "ExprGraph", "Explainer", "explain", "explain_match"]

CAUSES: dict[str, str] = {
    "kind": "another kind of expression (e.g. a tuple where a call was expected)",
    "op": "a call of another op",
    "arity": "another number of arguments or fields",
    "attr": "an attribute is missing or has another value (an axis, a layout, ...)",
    "not_constant": "a constant was expected (e.g. a weight that is a graph input)",
    "name": "a variable of another name",
    "index": "a tuple item of another index",
    "expr": "not the expression `is_expr` names",
    "type": "another type, or no type",
    "dtype": "another dtype",
    "shape": "another shape",
    "binding": "a sub-pattern used twice meets two different nodes",
    "dominator_path": "a node between a dominator's parent and child does not match the path",
    "outside_consumer": "a node of a dominator's region is used outside it",
    "check": "the pattern matches, but the check (a rule's guard, partition's check) says no",
    "alternatives": "no alternative matches (see options)",
    "unexplained": "the matcher says no, but the walk found no failure",
}
"""cause -> what it means; every `Miss.cause` is one of these."""

_COMMUTATIVE = ("add", "multiply")
_MISSING = object()
_FRAMES_PER_VISIT = 8  # the walk's frames per nested sub-pattern visit (visit, attempt, handler, ...)


@dataclass(frozen=True)
class Miss:
    """A sub-pattern that failed at a node: the cause (a `CAUSES` key), why in words, and for
    `alternatives` each way that was tried."""

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


def _kind(expr: Expr) -> str:
    if isinstance(expr, Call):
        return f"a call of {expr.op.name}" if isinstance(expr.op, Op) else "a call of a function value"
    if isinstance(expr, Op):
        return f"op {expr.name}"
    return {Var: "a variable", Constant: "a constant", Tuple: "a tuple", TupleGetItem: "a tuple item",
            Function: "a function", If: "an if", Let: "a let"}.get(type(expr), type(expr).__name__)


class ExprGraph:
    """An IR program as a `Graph`: each node is its own only form; names are the printer's."""

    def __init__(self, root: Expr):
        self.root = root
        self.matcher = DFPatternMatcher(root)
        self._names: dict[Expr, str] | None = None

    def forms(self, value: Expr) -> Sequence[Expr]:
        return (value,)

    def value_of(self, operand: Expr) -> Expr:
        return operand

    def type_of(self, value: Expr) -> Type | None:
        return self.matcher._type_of(value)

    def inputs(self, value: Expr) -> tuple[Expr, ...]:
        return self.matcher.graph.path_inputs(value)

    def escape(self, child: Expr, parent: Expr, region: Sequence[Expr]) -> tuple[Expr, Expr] | None:
        graph: IndexedGraph = self.matcher.graph
        if graph.dominates(child, parent):
            return None
        inside = {child, *region}
        for node in region:
            user = next((u for u in graph.outputs(node) if u not in inside), None)
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


class Explainer:
    """The walk: `visit(pattern, value)` returns None when it matches, else the `Miss`."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.memo: dict[DFPattern, Any] = {}
        """sub-pattern -> the value it is bound to in the match so far."""
        self.forms: dict[DFPattern, Expr] = {}
        """sub-pattern -> the form of its value it matched (with `memo`)."""
        self._bound: list[DFPattern] = []
        self._memoize = True
        self.matched: list[tuple[DFPattern, Any]] = []
        """every (sub-pattern, value) that matched during the walk, in order."""

    def _attempt(self, run: Callable[[], Miss | None]) -> Miss | None:
        """`run()`, its miss marked with how far it got (an option among others)."""
        before = len(self.matched)
        miss = run()
        return None if miss is None else replace(miss, progress=len(self.matched) - before)

    def visit(self, p: DFPattern, value: Any, depth: int = 0) -> Miss | None:
        """Match `p` against any form of `value`."""
        if self._memoize and p in self.memo:
            return self._same(p, value, depth)
        misses = []
        for form in self.graph.forms(value):
            miss = self._attempt(lambda: self.visit_form(p, value, form, depth))
            if miss is None:
                return None
            misses.append(miss)
        if len(misses) == 1:
            return misses[0]
        return Miss(p, value, "alternatives",
                          f"none of the {len(misses)} forms of {self.graph.describe(value)} matches", depth,
                          tuple(misses))

    def visit_form(self, p: DFPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        """Match `p` against one form of `value` (a memoized `p` must be bound to `value`)."""
        if self._memoize and p in self.memo:
            return self._same(p, value, depth)
        mark = len(self._bound)
        miss = _HANDLERS[type(p)](self, p, value, form, depth)
        if miss is None:
            if self._memoize:
                self.memo[p] = value
                self.forms[p] = form
                self._bound.append(p)
            self.matched.append((p, value))
        else:
            self._unwind(mark)
        return miss

    def _same(self, p: DFPattern, value: Any, depth: int) -> Miss | None:
        bound = self.memo[p]
        if bound is value or (not isinstance(bound, Expr) and bound == value):
            return None
        if isinstance(p, ExprPattern) and isinstance(p.expr, Op):  # ops are unique: another op, not a rebinding
            called = value.name if isinstance(value, Op) else self.graph.describe(value)
            return Miss(p, value, "op", f"the call is of {called}, not {p.expr.name}", depth)
        return Miss(p, value, "binding", f"{_short(p)} is used more than once, so it must meet one node: "
                          f"it met {self.graph.describe(bound)} before, here {self.graph.describe(value)}", depth)

    def _operands(self, patterns: Sequence[DFPattern], operands: Sequence[Expr], depth: int) -> Miss | None:
        for q, operand in zip(patterns, operands, strict=True):
            miss = self.visit(q, self.graph.value_of(operand), depth + 1)
            if miss is not None:
                return miss
        return None

    def _unwind(self, mark: int) -> None:
        for q in self._bound[mark:]:
            self.memo.pop(q, None)
            self.forms.pop(q, None)
        del self._bound[mark:]

    # -- leaves --------------------------------------------------------------------------------
    def _wildcard(self, p: WildcardPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        return None if p.redirect is None else self.visit_form(p.redirect, value, form, depth + 1)

    def _expr(self, p: ExprPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        if DFPatternMatcher(form).match(p, form):
            return None
        if isinstance(p.expr, Op):
            called = form.name if isinstance(form, Op) else _kind(form)
            return Miss(p, value, "op", f"the call is of {called}, not {p.expr.name}", depth)
        return Miss(p, value, "expr", f"{self.graph.describe(value)} is not {p.expr!r}", depth)

    def _var(self, p: VarPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        if not isinstance(form, Var):
            return Miss(p, value, "kind", f"{self.graph.describe(value)} is {_kind(form)}, not a variable",
                              depth)
        if p.name and p.name != form.name_hint:
            return Miss(p, value, "name", f"the variable is %{form.name_hint}, not %{p.name}", depth)
        return None

    def _constant(self, p: ConstantPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        if isinstance(form, Constant):
            return None
        return Miss(p, value, "not_constant",
                          f"{self.graph.describe(value)} is {_kind(form)}, not a constant", depth)

    # -- structure -----------------------------------------------------------------------------
    def _kind_miss(self, p: DFPattern, value: Any, form: Expr, want: str, depth: int) -> Miss:
        return Miss(p, value, "kind", f"{self.graph.describe(value)} is {_kind(form)}, not {want}", depth)

    def _call(self, p: CallPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        if not isinstance(form, Call):
            return self._kind_miss(p, value, form, "a call", depth)
        miss = self.visit(p.op, form.op if isinstance(form.op, Op) else self.graph.value_of(form.op), depth + 1)
        if miss is not None:  # a wrong op is the call's failure: name the call, not the op
            return Miss(p, value, miss.cause, miss.reason, depth) if miss.cause == "op" else miss
        if p.args is None:
            return None
        if len(p.args) != len(form.args):
            return Miss(p, value, "arity", f"{self.graph.describe(value)} has {len(form.args)} argument(s), "
                              f"the pattern {len(p.args)}", depth)
        mark = len(self._bound)
        miss = self._attempt(lambda: self._operands(p.args, form.args, depth))
        op = p.op.expr.name if isinstance(p.op, ExprPattern) and isinstance(p.op.expr, Op) else None
        if miss is None or op not in _COMMUTATIVE or len(p.args) != 2:
            return miss
        self._unwind(mark)
        swapped = self._attempt(lambda: self._operands(p.args[::-1], form.args, depth))
        if swapped is None:
            return None
        return Miss(p, value, "alternatives", f"{op} matches in neither argument order", depth,
                          (miss, swapped))

    def _function(self, p: FunctionPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        if not isinstance(form, Function):
            return self._kind_miss(p, value, form, "a function", depth)
        if p.params is not None:
            if len(p.params) != len(form.params):
                return Miss(p, value, "arity", f"the function has {len(form.params)} parameter(s), the "
                                  f"pattern {len(p.params)}", depth)
            miss = self._operands(p.params, form.params, depth)
            if miss is not None:
                return miss
        return self.visit(p.body, self.graph.value_of(form.body), depth + 1)

    def _tuple(self, p: TuplePattern, value: Any, form: Expr, depth: int) -> Miss | None:
        if not isinstance(form, Tuple):
            return self._kind_miss(p, value, form, "a tuple", depth)
        if p.fields is None:
            return None
        if len(p.fields) != len(form.fields):
            return Miss(p, value, "arity", f"the tuple has {len(form.fields)} field(s), the pattern "
                              f"{len(p.fields)}", depth)
        return self._operands(p.fields, form.fields, depth)

    def _tuple_get_item(self, p: TupleGetItemPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        if not isinstance(form, TupleGetItem):
            return self._kind_miss(p, value, form, "a tuple item", depth)
        if p.index is not None and p.index != form.index:
            return Miss(p, value, "index", f"{self.graph.describe(value)} takes item {form.index}, not "
                              f"{p.index}", depth)
        return self.visit(p.tuple, self.graph.value_of(form.tuple_value), depth + 1)

    def _if(self, p: IfPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        if not isinstance(form, If):
            return self._kind_miss(p, value, form, "an if", depth)
        return self._operands((p.cond, p.true_branch, p.false_branch),
                              (form.cond, form.true_branch, form.false_branch), depth)

    def _let(self, p: LetPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        if not isinstance(form, Let):
            return self._kind_miss(p, value, form, "a let", depth)
        return self._operands((p.var, p.value, p.body), (form.var, form.value, form.body), depth)

    def _alt(self, p: AltPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        left = self._attempt(lambda: self.visit_form(p.left, value, form, depth + 1))
        if left is None:
            return None
        right = self._attempt(lambda: self.visit_form(p.right, value, form, depth + 1))
        if right is None:
            return None
        return Miss(p, value, "alternatives", "neither alternative matches", depth, (left, right))

    # -- properties ----------------------------------------------------------------------------
    def _attr(self, p: AttrPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        miss = self.visit_form(p.pattern, value, form, depth + 1)
        if miss is not None:
            return miss
        if isinstance(form, Op):
            def lookup(key: str) -> Any:
                return form.get_attr(key, _MISSING)
        elif isinstance(form, (Call, Function)):
            def lookup(key: str) -> Any:
                return form.attrs.get(key, _MISSING)
        else:
            return Miss(p, value, "attr", f"{self.graph.describe(value)} is {_kind(form)}, which has no "
                              "attributes", depth)
        for key, want in p.attrs.items():
            got = lookup(key)
            if got is _MISSING:
                return Miss(p, value, "attr", f"{self.graph.describe(value)} has no attribute {key!r}", depth)
            if not _attr_value_equal(want, got):
                return Miss(p, value, "attr", f"{key} is {got!r}, not {want!r}", depth)
        return None

    def _typed(self, p: TypePattern | DataTypePattern | ShapePattern, value: Any, form: Expr,
               depth: int) -> Miss | None:
        miss = self.visit_form(p.pattern, value, form, depth + 1)
        if miss is not None:
            return miss
        ty = self.graph.type_of(value)
        what = self.graph.describe(value)
        if isinstance(p, TypePattern):
            return None if ty == p.type else Miss(p, value, "type", f"{what} has type {ty}, not {p.type}", depth)
        if not isinstance(ty, TensorType):
            return Miss(p, value, "type", f"{what} is not a tensor (type {ty})", depth)
        if isinstance(p, DataTypePattern):
            return None if ty.dtype == p.dtype else Miss(
                p, value, "dtype", f"{what} is {ty.dtype}, not {p.dtype}", depth)
        return None if ty.shape == p.shape else Miss(
            p, value, "shape", f"{what} has shape {ty.shape}, not {p.shape}", depth)

    # -- dominators ----------------------------------------------------------------------------
    def _dominator(self, p: DominatorPattern, value: Any, form: Expr, depth: int) -> Miss | None:
        miss = self.visit_form(p.child, value, form, depth + 1)
        if miss is not None:
            return miss
        describe = self.graph.describe
        inputs = self.graph.inputs(value)
        if not inputs:
            return Miss(p, value, "dominator_path", f"the child {describe(value)} has no inputs", depth)
        region: list[Any] = []
        stack = [[value, iter(inputs), False]]  # a node, its inputs, and whether one leads back
        try:
            while stack:
                top = stack[-1]
                node = next(top[1], None)
                if node is None:
                    if not top[2]:
                        return self._dead_end(p, top[0], value, depth)
                    stack.pop()
                    continue
                self._memoize = True
                if self.visit(p.parent, node, depth + 1) is None or node in region:
                    top[2] = True
                    continue
                if self._is_leaf(node):
                    continue
                self._memoize = False
                path_miss = self.visit(p.path, node, depth + 1)
                if path_miss is not None:
                    return Miss(p, node, "dominator_path", f"{describe(node)}, on the way from the child "
                                      f"{describe(value)} back to the parent, matches neither the parent nor the "
                                      "path pattern", depth, because=path_miss)
                top[2] = True
                region.append(node)
                stack.append([node, iter(self.graph.inputs(node)), False])
        finally:
            self._memoize = True
        parent = self.memo.get(p.parent)
        if parent is None:
            return Miss(p, value, "dominator_path", "no input leads back to a node matching the parent", depth)
        escaped = self.graph.escape(value, parent, [parent, *region])
        if escaped is not None:
            inside, user = escaped
            return Miss(p, value, "outside_consumer", f"{describe(inside)} inside the region from the parent "
                              f"{describe(parent)} to the child {describe(value)} is also used by {describe(user)} "
                              "outside it", depth)
        return None

    def _dead_end(self, p: DominatorPattern, node: Any, child: Any, depth: int) -> Miss:
        """The miss for a node (the child or a path node) none of whose inputs leads back to the parent."""
        describe = self.graph.describe
        what = f"the child {describe(node)}" if node is child else f"the path reaches {describe(node)}, which"
        why = "has no inputs" if not self.graph.inputs(node) else \
            "has only variables or constants as inputs (a path skips them)"
        return Miss(p, node, "dominator_path", f"{what} {why}, so it does not lead back to the parent", depth)

    def _is_leaf(self, value: Any) -> bool:
        """A value a dominator path skips: one computed as a variable or a constant (`match`)."""
        return any(_is_leaf(f) for f in self.graph.forms(value))


def _short(p: DFPattern) -> str:
    """The pattern's text on one line, cut to a readable length."""
    text = " ".join(repr(p).split())
    return text if len(text) <= 90 else text[:87] + "..."


_HANDLERS: dict[type, Callable[[Explainer, Any, Any, Expr, int], Miss | None]] = {
    WildcardPattern: Explainer._wildcard,
    ExprPattern: Explainer._expr,
    VarPattern: Explainer._var,
    ConstantPattern: Explainer._constant,
    CallPattern: Explainer._call,
    FunctionPattern: Explainer._function,
    TuplePattern: Explainer._tuple,
    TupleGetItemPattern: Explainer._tuple_get_item,
    IfPattern: Explainer._if,
    LetPattern: Explainer._let,
    AltPattern: Explainer._alt,
    AttrPattern: Explainer._attr,
    TypePattern: Explainer._typed,
    DataTypePattern: Explainer._typed,
    ShapePattern: Explainer._typed,
    DominatorPattern: Explainer._dominator,
}


def _trivial(p: DFPattern) -> bool:
    """Wildcards and bare ops: their matching says nothing about how far a match got."""
    return ((isinstance(p, WildcardPattern) and p.redirect is None)
            or (isinstance(p, ExprPattern) and isinstance(p.expr, Op)))


def _size(p: DFPattern) -> int:
    return sum(1 for _ in post_order(p, lambda q: q.children()))


@dataclass(frozen=True)
class MatchExplanation:
    """Whether `pattern` matched `node`, and if not, the failure tree (`miss`), its first failure
    and the largest sub-pattern that did match on the way (`deepest_match`)."""

    pattern: DFPattern
    node: Any
    matched: bool
    miss: Miss | None
    deepest_match: tuple[DFPattern, Any] | None
    """the largest sub-pattern (by pattern nodes) that matched during the walk, and where."""
    describe: Callable[[Any], str] = field(repr=False, compare=False, default=repr)

    @property
    def first_failure(self) -> Miss | None:
        return None if self.miss is None else self.miss.first_failure()

    @property
    def cause(self) -> str | None:
        """The first failure's cause (a `CAUSES` key); None when the pattern matched."""
        first = self.first_failure
        return None if first is None else first.cause

    def causes(self) -> set[str]:
        """The causes of every leaf failure, all alternatives included."""
        out: set[str] = set()
        stack = [self.miss] if self.miss else []
        while stack:
            m = stack.pop()
            if m.options:
                stack.extend(m.options)
            else:
                out.add(m.cause)
        return out

    def lines(self) -> list[str]:
        """The explanation as text lines (what `str` joins)."""
        if self.matched:
            return [f"matched at {self.describe(self.node)}"]
        assert self.miss is not None
        first = self.miss.first_failure()
        out = [f"no match at {self.describe(self.node)}: {_short(first.pattern)} failed at "
               f"{self.describe(first.node)}: {first.reason} [{first.cause}]"]
        if self.deepest_match is not None:
            p, at = self.deepest_match
            out.append(f"  deepest match: {_short(p)} at {self.describe(at)}")
        if first.because is not None:
            why = first.because.first_failure()
            out.append(f"  because {_short(why.pattern)} failed: {why.reason} [{why.cause}]")
        out += _option_lines(self.miss, "  ")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _option_lines(miss: Miss, indent: str, limit: int = 12) -> list[str]:
    """Each alternative way that was tried, and where it failed (nested, at most `limit` lines)."""
    out: list[str] = []
    stack = [(miss, indent)]
    while stack and len(out) < limit:
        m, pad = stack.pop()
        if not m.options:
            continue
        out.append(f"{pad}{m.reason}:")
        for option in reversed(m.options):
            stack.append((option, pad + "  "))
        for option in m.options:
            leaf = option.first_failure()
            out.append(f"{pad}  - {_short(leaf.pattern)}: {leaf.reason} [{leaf.cause}]")
    return out[:limit]


def explain(explainer: Explainer, pattern: DFPattern, value: Any, matched: bool,
            check: Callable[[Any], bool] | None = None) -> MatchExplanation:
    """The explanation of `pattern` at `value` given the matcher's verdict (`matched`)."""
    describe = explainer.graph.describe
    if matched and (check is None or check(value)):
        return MatchExplanation(pattern, value, True, None, (pattern, value), describe)
    if matched:
        miss = Miss(pattern, value, "check", f"the pattern matches {describe(value)} but the check returned false", 0)
        return MatchExplanation(pattern, value, False, miss, (pattern, value), describe)
    miss = explainer.visit(pattern, value)
    if miss is None:
        miss = Miss(pattern, value, "unexplained", "the matcher does not match here, though each part does", 0)
    found = [(p, at) for p, at in explainer.matched if not _trivial(p)]
    for sub in post_order(pattern, lambda q: q.children()):
        if sub is not pattern and not _trivial(sub) and Explainer(explainer.graph).visit(sub, value) is None:
            found.append((sub, value))
    deepest = max(found, key=lambda pv: _size(pv[0]), default=None)
    return MatchExplanation(pattern, value, False, miss, deepest, describe)


def explain_match(pattern: DFPattern, expr: Expr, graph: Expr | None = None,
                  check: Callable[[Expr], bool] | None = None) -> MatchExplanation:
    """Whether `expr` matches `pattern`, and if not why: the first sub-pattern that failed, at which
    node, and its cause (`CAUSES`). `graph` is the program `expr` belongs to (default: `expr`),
    which dominator checks and node names (`%3`, as `print(graph)` shows them) refer to; `check`
    is a predicate on the match, as `partition` takes one."""
    if not isinstance(pattern, DFPattern):
        raise InvalidPatternError(f"explain_match expects a pattern, got {type(pattern).__name__} {pattern!r}")
    if not isinstance(expr, Expr):
        raise TypeError(f"explain_match expects an IR expression, got {type(expr).__name__} {expr!r}")
    g = ExprGraph(expr if graph is None else graph)
    matched = g.matcher.match(pattern, expr)
    if not is_recursive(pattern):
        return explain(Explainer(g), pattern, expr, matched, check)
    with raised_recursion_limit(recursion_frames(pattern, len(g.matcher.graph), _FRAMES_PER_VISIT)):
        return explain(Explainer(g), pattern, expr, matched, check)
