"""What each pattern kind means: the `KINDS` table, the one place the pattern language is interpreted.

The direct matcher and the explainer are the pattern walk (`walk.Walker`) over this table, with
recording off and on; the e-matching compiler (`eqsat.rules.dfpattern`) reads the same table
(it walks the kinds it has no query for) and the helpers below. A handler gets the walker, the
pattern, the value and one form of it, and the depth in the pattern; it returns None when the
form matches, else the walker's `fail(...)`.

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
  (`partition` makes them inputs of its function). `region.decide_region` decides the region for
  this walk and for the e-matcher alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..attrs import freeze_value
from ..expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from ..op.registry import Op
from ..structural import structural_equal
from ..types import TensorType, Type
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
from .region import Stop, decide_region

if TYPE_CHECKING:
    from .walk import Graph, Miss, Walker

__all__ = [
    "KINDS", "TypeCheck", "MISSING", "op_name", "argument_orders", "reassociations", "attr_lookup", "attr_mismatch",
    "expr_equal", "is_leaf", "describe_kind",
]

COMMUTATIVE = ("add", "multiply")
MISSING = object()
"""What an attribute lookup returns for an attribute the node lacks."""


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
        return target.digest == expr.digest
    return structural_equal(target, expr)


def is_leaf(expr: Expr) -> bool:
    """An input that a dominator path skips: a variable or a constant."""
    return isinstance(expr, (Var, Constant))


Handler = Callable[["Walker", Any, Any, Expr, int], "Miss | None"]
"""A kind's interpretation: (walker, pattern, value, one form of the value, depth) -> None or a miss."""


def describe_kind(expr: Expr) -> str:
    """What kind of expression `expr` is, in words (`a call of nn.relu`, `a tuple`)."""
    if isinstance(expr, Call):
        return f"a call of {expr.op.name}" if isinstance(expr.op, Op) else "a call of a function value"
    if isinstance(expr, Op):
        return f"op {expr.name}"
    return {Var: "a variable", Constant: "a constant", Tuple: "a tuple", TupleGetItem: "a tuple item",
            Function: "a function", If: "an if", Let: "a let"}.get(type(expr), type(expr).__name__)


def _kind_miss(w: Walker, p: DFPattern, value: Any, form: Expr, want: str, depth: int) -> Miss:
    return w.fail(p, value, "kind", depth, lambda: f"{w.graph.describe(value)} is {describe_kind(form)}, not {want}")


# -- leaves ------------------------------------------------------------------------------------
def _wildcard(w: Walker, p: WildcardPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    return None if p.redirect is None else w.visit_form(p.redirect, value, form, depth + 1)


def _expr(w: Walker, p: ExprPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if expr_equal(p.expr, form):
        return None
    if isinstance(p.expr, Op):
        called = form.name if isinstance(form, Op) else describe_kind(form)
        return w.fail(p, value, "op", depth, lambda: f"the call is of {called}, not {p.expr.name}")
    return w.fail(p, value, "expr", depth, lambda: f"{w.graph.describe(value)} is not {p.expr!r}")


def _var(w: Walker, p: VarPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, Var):
        return _kind_miss(w, p, value, form, "a variable", depth)
    if p.name and p.name != form.name_hint:
        return w.fail(p, value, "name", depth, lambda: f"the variable is %{form.name_hint}, not %{p.name}")
    return None


def _constant(w: Walker, p: ConstantPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if isinstance(form, Constant):
        return None
    return w.fail(p, value, "not_constant", depth,
                  lambda: f"{w.graph.describe(value)} is {describe_kind(form)}, not a constant")


# -- structure ---------------------------------------------------------------------------------
def _call(w: Walker, p: CallPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, Call):
        return _kind_miss(w, p, value, form, "a call", depth)
    op = form.op
    miss = w.visit(p.op, op if isinstance(op, Op) else w.graph.value_of(op), depth + 1)
    if miss is not None:
        if isinstance(op, Op) and op.name in ("divide", "multiply"):
            for alt in reassociations(p):  # each is a call of the other op: tried on such calls only
                if op is alt.op.expr and w.visit_form(alt, value, form, depth) is None:
                    return None
        # a wrong op is the call's failure: name the call, not the op
        return w.fail(p, value, miss.cause, depth, lambda: miss.reason) if miss.cause == "op" else miss
    if p.args is None:
        return None
    if len(p.args) != len(form.args):
        return w.fail(p, value, "arity", depth, lambda: f"{w.graph.describe(value)} has {len(form.args)} "
                      f"argument(s), the pattern {len(p.args)}")
    orders = argument_orders(p)
    if len(orders) == 1:
        return w.operands(p.args, form.args, depth)
    return w.first_of(p, value, depth, lambda args: w.operands(args, form.args, depth), orders,
                      f"{op.name} matches in neither argument order")


def _function(w: Walker, p: FunctionPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, Function):
        return _kind_miss(w, p, value, form, "a function", depth)
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
        return _kind_miss(w, p, value, form, "a tuple", depth)
    if p.fields is None:
        return None
    if len(p.fields) != len(form.fields):
        return w.fail(p, value, "arity", depth, lambda: f"the tuple has {len(form.fields)} field(s), "
                      f"the pattern {len(p.fields)}")
    return w.operands(p.fields, form.fields, depth)


def _tuple_get_item(w: Walker, p: TupleGetItemPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, TupleGetItem):
        return _kind_miss(w, p, value, form, "a tuple item", depth)
    if p.index is not None and p.index != form.index:
        return w.fail(p, value, "index", depth, lambda: f"{w.graph.describe(value)} takes item {form.index}, "
                      f"not {p.index}")
    return w.visit(p.tuple, w.graph.value_of(form.tuple_value), depth + 1)


def _if(w: Walker, p: IfPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, If):
        return _kind_miss(w, p, value, form, "an if", depth)
    return w.operands((p.cond, p.true_branch, p.false_branch), (form.cond, form.true_branch, form.false_branch),
                      depth)


def _let(w: Walker, p: LetPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    if not isinstance(form, Let):
        return _kind_miss(w, p, value, form, "a let", depth)
    return w.operands((p.var, p.value, p.body), (form.var, form.value, form.body), depth)


def _alt(w: Walker, p: AltPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    return w.first_of(p, value, depth, lambda q: w.visit_form(q, value, form, depth + 1), (p.left, p.right),
                      "neither alternative matches")


# -- properties --------------------------------------------------------------------------------
def _attr(w: Walker, p: AttrPattern, value: Any, form: Expr, depth: int) -> Miss | None:
    miss = w.visit_form(p.pattern, value, form, depth + 1)
    if miss is not None:
        return miss
    lookup = attr_lookup(form)
    if lookup is None:
        return w.fail(p, value, "attr", depth, lambda: f"{w.graph.describe(value)} is {describe_kind(form)}, which has "
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
    The e-matching compiler reads it as a check on the class's type, so `pattern` stays part of
    the query (a kind with a handler of its own is walked there on its own).
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
    """The child, then the region back to the parent (`region.decide_region`), then post-dominance."""
    miss = w.visit_form(p.child, value, form, depth + 1)
    if miss is not None:
        return miss
    graph, describe = w.graph, w.graph.describe
    if not graph.inputs(value):
        return w.fail(p, value, "dominator_path", depth, lambda: f"the child {describe(value)} has no inputs")
    walked = _WalkedRegion(w, p, depth)
    try:
        decided = decide_region(graph.inputs(value), walked)
    finally:
        w.memoize = True
    if isinstance(decided, Stop):
        node = value if decided.node is None else decided.node
        if decided.cause == "dead_end":
            return w.fail(p, node, "dominator_path", depth, lambda: _dead_end(graph, node, value))
        return w.fail(p, node, "dominator_path", depth, lambda: f"{describe(node)}, on the way from the child "
                      f"{describe(value)} back to the parent, matches neither the parent nor the path pattern",
                      because=walked.miss)
    if p.parent not in w.memo:  # only in a cyclic e-graph: every input led into the region
        return w.fail(p, value, "dominator_path", depth, lambda: "no input leads back to a node matching the parent")
    parent = w.memo[p.parent][0]
    escaped = graph.escape(value, parent, [parent, *(n for n, _ in decided.path)])
    if escaped is None:
        return None
    inside, user = escaped
    return w.fail(p, value, "outside_consumer", depth, lambda: f"{describe(inside)} inside the region from the "
                  f"parent {describe(parent)} to the child {describe(value)} is also used by {describe(user)} "
                  "outside it")


class _WalkedRegion:
    """The walker's graph as a `region.RegionGraph`: each value is its own one form, and the parent
    and path patterns are visited by the walker, the parent memoized (it binds once), the path not
    (one path pattern covers many nodes)."""

    strict = True

    def __init__(self, w: Walker, p: DominatorPattern, depth: int):
        self.w, self.p, self.depth = w, p, depth
        self.miss: Miss | None = None
        """why the latest node tried against the path pattern did not match it."""

    def is_parent(self, node: Any) -> bool:
        self.w.memoize = True
        return self.w.visit(self.p.parent, node, self.depth + 1) is None

    def is_leaf(self, node: Any) -> bool:
        return any(is_leaf(f) for f in self.w.graph.forms(node))

    def path_forms(self, node: Any) -> tuple[Any, ...]:
        self.w.memoize = False
        self.miss = self.w.visit(self.p.path, node, self.depth + 1)
        return (node,) if self.miss is None else ()

    def inputs(self, form: Any) -> tuple[Any, ...]:
        return self.w.graph.inputs(form)


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
