"""Pattern nodes: one immutable class per pattern kind, mirroring the IR they match.

Patterns are compared and hashed by identity, like expressions: a pattern object used twice in a
pattern must bind the same expression node both times. Building a pattern validates its
arguments, so a malformed pattern fails where it is written, not when it is matched.
Operators compose patterns: `p(a, b)` is a call pattern (`p(None)`: any number of arguments),
`p | q` an alternative, `p + q` / `- * /` calls of `add` / `subtract` / `multiply` / `divide`.

The one mutation is TVM's `WildcardPattern.redirect_to`: it ties a wildcard to another pattern,
which may contain the wildcard, so a pattern can refer to itself (a chain of any length).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..attrs import Attrs
from ..expr import Expr, Var
from ..op.registry import Op, get_op
from ..types import Dim, Type, normalize_dtype, normalize_shape
from ..visitor import post_order
from .errors import InvalidPatternError

__all__ = [
    "DFPattern", "ExprPattern", "VarPattern", "ConstantPattern", "WildcardPattern", "CallPattern",
    "FunctionPattern", "TuplePattern", "TupleGetItemPattern", "IfPattern", "LetPattern", "AltPattern",
    "TypePattern", "DataTypePattern", "ShapePattern", "AttrPattern", "DominatorPattern", "is_recursive",
]

Ref = Callable[["DFPattern"], str]


def _as_pattern(value: Any, what: str) -> "DFPattern":
    """`value` as a pattern: patterns stay, IR expressions become `ExprPattern`s, anything else fails."""
    if isinstance(value, DFPattern):
        return value
    if isinstance(value, Expr):
        return ExprPattern(value)
    hint = " (match a constant with is_expr(relay.const(...)))" if isinstance(value, (int, float)) else ""
    raise InvalidPatternError(f"{what} must be a pattern or an IR expression, got "
                              f"{type(value).__name__} {value!r}{hint}")


def _pattern_list(values: Any, what: str) -> tuple["DFPattern", ...] | None:
    """None (any number) or a sequence of patterns; a bare pattern is a common slip, so it is named."""
    if values is None:
        return None
    if isinstance(values, (DFPattern, Expr, str)) or not isinstance(values, Sequence):
        raise InvalidPatternError(f"{what} must be a list of patterns or None (any number), got "
                                  f"{type(values).__name__} {values!r}")
    out = []
    for i, v in enumerate(values):
        if v is None:
            raise InvalidPatternError(f"{what}: item {i} is None; pass None alone to match any number")
        out.append(_as_pattern(v, f"{what}: item {i}"))
    return tuple(out)


def _set(obj: Any, **fields: Any) -> None:
    for key, value in fields.items():
        object.__setattr__(obj, key, value)


class DFPattern:
    """Base class of all patterns; see the module docstring for the operators."""

    __slots__ = ()

    def children(self) -> tuple["DFPattern", ...]:
        """Sub-patterns in TVM's visiting order (which fixes partition parameter order)."""
        return ()

    def _in_place_children(self) -> tuple["DFPattern", ...]:
        """Sub-patterns matched against the same expression node as this one (alternatives,
        property checks, a redirect); every other sub-pattern meets an operand of that node."""
        return ()

    def _render(self, ref: Ref) -> str:
        """This node in builder syntax, with `ref(child)` standing for each sub-pattern (by default
        its class called with its sub-patterns, for kinds added through `semantics.KINDS`)."""
        return f"{type(self).__name__}({', '.join(ref(c) for c in self.children())})"

    # -- composition ---------------------------------------------------------------------------
    def __call__(self, *args: Any) -> "CallPattern":
        if len(args) == 1 and args[0] is None:
            return CallPattern(self, None)
        return CallPattern(self, args)

    def __or__(self, other: Any) -> "AltPattern":
        return AltPattern(self, other)

    def __add__(self, other: Any) -> "CallPattern":
        return _op_call("add", self, other)

    def __sub__(self, other: Any) -> "CallPattern":
        return _op_call("subtract", self, other)

    def __mul__(self, other: Any) -> "CallPattern":
        return _op_call("multiply", self, other)

    def __truediv__(self, other: Any) -> "CallPattern":
        return _op_call("divide", self, other)

    def has_attr(self, attrs: Mapping[str, Any]) -> "AttrPattern":
        """This pattern, and the matched call / function / op carries these attribute values."""
        return AttrPattern(self, attrs)

    def has_type(self, ttype: Type) -> "TypePattern":
        """This pattern, and the matched expression has type `ttype`."""
        return TypePattern(self, ttype)

    def has_dtype(self, dtype: Any) -> "DataTypePattern":
        """This pattern, and the matched expression is a tensor of `dtype`."""
        return DataTypePattern(self, dtype)

    def has_shape(self, shape: Sequence[Any]) -> "ShapePattern":
        """This pattern, and the matched expression is a tensor of `shape`."""
        return ShapePattern(self, shape)

    def dominates(self, parent: "DFPattern", path: "DFPattern | None" = None) -> "DominatorPattern":
        """This pattern as the child of a dominator region from `parent` (`path` defaults to wildcard)."""
        return DominatorPattern(parent, WildcardPattern() if path is None else path, self)

    def optional(self, option_constructor: Callable[["DFPattern"], "DFPattern"]) -> "AltPattern":
        """This pattern, or `option_constructor(this)`: e.g. `conv.optional(is_op("nn.relu"))`."""
        if not callable(option_constructor):
            raise InvalidPatternError(f"optional expects a function from pattern to pattern, got "
                                      f"{type(option_constructor).__name__} {option_constructor!r}")
        return AltPattern(self, option_constructor(self))

    # -- use -----------------------------------------------------------------------------------
    def match(self, expr: Expr) -> bool:
        """Whether `expr` matches this pattern (see `ir.dataflow_pattern.match`)."""
        from .match import match
        return match(self, expr)

    def partition(self, expr: Expr, attrs: Mapping[str, Any] | None = None,
                  check: Callable[[Expr], bool] | None = None) -> Expr:
        """Wrap each match in `expr` into a function call (see `ir.dataflow_pattern.partition`)."""
        from .partition import partition
        return partition(self, expr, attrs, check)

    def __repr__(self) -> str:
        from .printer import pattern_text
        return pattern_text(self)


def _op_call(name: str, lhs: DFPattern, rhs: Any) -> "CallPattern":
    return CallPattern(ExprPattern(get_op(name)), (lhs, rhs))


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class ExprPattern(DFPattern):
    """Matches an expression structurally equal to `expr` (an `Op` for `is_op`)."""

    expr: Expr

    def __post_init__(self) -> None:
        if not isinstance(self.expr, Expr):
            raise InvalidPatternError(f"is_expr expects an IR expression, got {type(self.expr).__name__} "
                                      f"{self.expr!r}")

    def _render(self, ref: Ref) -> str:
        if isinstance(self.expr, Op):
            return f'is_op("{self.expr.name}")'
        if isinstance(self.expr, Var):
            return f"is_expr(%{self.expr.name_hint})"
        return f"is_expr({self.expr!r})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class VarPattern(DFPattern):
    """Matches a variable; with a non-empty `name`, only a variable of that name."""

    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise InvalidPatternError(f"is_var expects a name (str), got {type(self.name).__name__} "
                                      f"{self.name!r}")

    def _render(self, ref: Ref) -> str:
        return f'is_var("{self.name}")' if self.name else "is_var()"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class ConstantPattern(DFPattern):
    """Matches any constant."""

    def _render(self, ref: Ref) -> str:
        return "is_constant()"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class WildcardPattern(DFPattern):
    """Matches any expression; once redirected (`redirect_to`), what its target matches."""

    redirect: DFPattern | None = field(default=None, init=False)

    def redirect_to(self, pattern: Any) -> None:
        """From now on match what `pattern` matches (TVM's `WildcardPattern.redirect_to`).

        `pattern` may contain this wildcard, which makes the pattern recursive: below, `chain`
        matches a dense layer under any number of casts.

            rec = wildcard()
            chain = is_op("cast")(rec)
            rec.redirect_to(chain | is_op("nn.dense")(wildcard(), wildcard()))

        Each trip around a cycle must move to an operand of the matched node (through a call,
        tuple, function, ... pattern), so matching ends; a cycle that stays on one node, such as
        `rec.redirect_to(rec | x)`, is refused here. A wildcard is redirected at most once.
        """
        target = _as_pattern(pattern, "the pattern of redirect_to")
        if self.redirect is not None:
            raise InvalidPatternError(f"redirect_to: this wildcard already redirects to {self.redirect!r}; "
                                      "a wildcard is redirected once")
        if any(node is self for node in post_order(target, lambda p: p._in_place_children())):
            raise InvalidPatternError(f"redirect_to: {target!r} reaches this wildcard again without moving "
                                      "to an operand (through |, has_* or dominates only), so matching would "
                                      "never end; put the recursion under a call, tuple or function pattern")
        _set(self, redirect=target)

    def children(self) -> tuple[DFPattern, ...]:
        return () if self.redirect is None else (self.redirect,)

    def _in_place_children(self) -> tuple[DFPattern, ...]:
        return self.children()

    def _render(self, ref: Ref) -> str:
        return "wildcard()"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class CallPattern(DFPattern):
    """Matches a call whose callee matches `op` and whose arguments match `args` (None: any)."""

    op: DFPattern
    args: tuple[DFPattern, ...] | None

    def __post_init__(self) -> None:
        _set(self, op=_as_pattern(self.op, "the callee of a call pattern"),
             args=_pattern_list(self.args, "the arguments of a call pattern"))

    def children(self) -> tuple[DFPattern, ...]:
        return (self.op, *(self.args or ()))

    def _render(self, ref: Ref) -> str:
        args = "None" if self.args is None else ", ".join(ref(a) for a in self.args)
        return f"{ref(self.op)}({args})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class FunctionPattern(DFPattern):
    """Matches a function whose parameters match `params` (None: any) and whose body matches `body`."""

    params: tuple[DFPattern, ...] | None
    body: DFPattern

    def __post_init__(self) -> None:
        _set(self, params=_pattern_list(self.params, "the parameters of a FunctionPattern"),
             body=_as_pattern(self.body, "the body of a FunctionPattern"))

    def children(self) -> tuple[DFPattern, ...]:
        return (*(self.params or ()), self.body)

    def _render(self, ref: Ref) -> str:
        params = "None" if self.params is None else "[" + ", ".join(ref(p) for p in self.params) + "]"
        return f"FunctionPattern({params}, {ref(self.body)})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class TuplePattern(DFPattern):
    """Matches a tuple whose fields match `fields` (None: any number of fields)."""

    fields: tuple[DFPattern, ...] | None

    def __post_init__(self) -> None:
        _set(self, fields=_pattern_list(self.fields, "the fields of is_tuple"))

    def children(self) -> tuple[DFPattern, ...]:
        return self.fields or ()

    def __getitem__(self, index: int) -> DFPattern:
        if self.fields is None:
            raise IndexError("is_tuple(None) has no fixed fields")
        return self.fields[index]

    def __len__(self) -> int:
        if self.fields is None:
            raise TypeError("is_tuple(None) matches tuples of any length")
        return len(self.fields)

    def _render(self, ref: Ref) -> str:
        if self.fields is None:
            return "is_tuple(None)"
        return "is_tuple([" + ", ".join(ref(f) for f in self.fields) + "])"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class TupleGetItemPattern(DFPattern):
    """Matches `t[index]` where `t` matches `tuple`; `index=None` matches any index."""

    tuple: DFPattern
    index: int | None = None

    def __post_init__(self) -> None:
        index = self.index
        if index is not None and (isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer))
                                  or index < 0):
            raise InvalidPatternError(f"is_tuple_get_item: the index must be a non-negative int or None "
                                      f"(any index), got {type(index).__name__} {index!r}")
        _set(self, tuple=_as_pattern(self.tuple, "the tuple of is_tuple_get_item"),
             index=None if index is None else int(index))

    def children(self) -> tuple[DFPattern, ...]:
        return (self.tuple,)

    def _render(self, ref: Ref) -> str:
        return f"is_tuple_get_item({ref(self.tuple)}, {self.index})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class IfPattern(DFPattern):
    """Matches `if (cond) {true_branch} else {false_branch}` part by part."""

    cond: DFPattern
    true_branch: DFPattern
    false_branch: DFPattern

    def __post_init__(self) -> None:
        _set(self, cond=_as_pattern(self.cond, "the condition of is_if"),
             true_branch=_as_pattern(self.true_branch, "the true branch of is_if"),
             false_branch=_as_pattern(self.false_branch, "the false branch of is_if"))

    def children(self) -> tuple[DFPattern, ...]:
        return (self.cond, self.true_branch, self.false_branch)

    def _render(self, ref: Ref) -> str:
        return f"is_if({ref(self.cond)}, {ref(self.true_branch)}, {ref(self.false_branch)})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class LetPattern(DFPattern):
    """Matches `let var = value; body` part by part."""

    var: DFPattern
    value: DFPattern
    body: DFPattern

    def __post_init__(self) -> None:
        _set(self, var=_as_pattern(self.var, "the variable of is_let"),
             value=_as_pattern(self.value, "the value of is_let"),
             body=_as_pattern(self.body, "the body of is_let"))

    def children(self) -> tuple[DFPattern, ...]:
        return (self.var, self.value, self.body)

    def _render(self, ref: Ref) -> str:
        return f"is_let({ref(self.var)}, {ref(self.value)}, {ref(self.body)})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class AltPattern(DFPattern):
    """Matches what `left` matches, else what `right` matches (`left | right`)."""

    left: DFPattern
    right: DFPattern

    def __post_init__(self) -> None:
        _set(self, left=_as_pattern(self.left, "the left side of |"),
             right=_as_pattern(self.right, "the right side of |"))

    def children(self) -> tuple[DFPattern, ...]:
        return (self.left, self.right)

    def _in_place_children(self) -> tuple[DFPattern, ...]:
        return self.children()

    def _render(self, ref: Ref) -> str:
        return f"({ref(self.left)} | {ref(self.right)})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class TypePattern(DFPattern):
    """Matches what `pattern` matches when its type equals `type`."""

    pattern: DFPattern
    type: Type

    def __post_init__(self) -> None:
        if not isinstance(self.type, Type):
            raise InvalidPatternError(f"has_type expects an IR type such as relay.TensorType((10, 10), "
                                      f"'float32'), got {type(self.type).__name__} {self.type!r}")
        _set(self, pattern=_as_pattern(self.pattern, "the pattern of has_type"))

    def children(self) -> tuple[DFPattern, ...]:
        return (self.pattern,)

    def _in_place_children(self) -> tuple[DFPattern, ...]:
        return self.children()

    def _render(self, ref: Ref) -> str:
        return f"{ref(self.pattern)}.has_type({self.type})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class DataTypePattern(DFPattern):
    """Matches what `pattern` matches when it is a tensor of `dtype`."""

    pattern: DFPattern
    dtype: str

    def __post_init__(self) -> None:
        try:
            dtype = normalize_dtype(self.dtype) if self.dtype is not None else None
        except (TypeError, ValueError):
            dtype = None
        if dtype is None:
            raise InvalidPatternError(f"has_dtype expects a dtype name such as 'float32', got "
                                      f"{type(self.dtype).__name__} {self.dtype!r}")
        _set(self, pattern=_as_pattern(self.pattern, "the pattern of has_dtype"), dtype=dtype)

    def children(self) -> tuple[DFPattern, ...]:
        return (self.pattern,)

    def _in_place_children(self) -> tuple[DFPattern, ...]:
        return self.children()

    def _render(self, ref: Ref) -> str:
        return f'{ref(self.pattern)}.has_dtype("{self.dtype}")'


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class ShapePattern(DFPattern):
    """Matches what `pattern` matches when it is a tensor of exactly `shape` (symbolic dims by name)."""

    pattern: DFPattern
    shape: tuple[Dim, ...]

    def __post_init__(self) -> None:
        try:
            shape = normalize_shape(self.shape)
        except (TypeError, ValueError) as err:
            raise InvalidPatternError(f"has_shape expects a list of dimensions, got {self.shape!r}: {err}") from None
        _set(self, pattern=_as_pattern(self.pattern, "the pattern of has_shape"), shape=shape)

    def children(self) -> tuple[DFPattern, ...]:
        return (self.pattern,)

    def _in_place_children(self) -> tuple[DFPattern, ...]:
        return self.children()

    def _render(self, ref: Ref) -> str:
        return f"{ref(self.pattern)}.has_shape([{', '.join(str(d) for d in self.shape)}])"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class AttrPattern(DFPattern):
    """Matches what `pattern` matches when the node carries every attribute value in `attrs`.

    What "attribute" means depends on the matched node: a call's attributes (`data_layout`), a
    function's attributes (`Composite`), or an op's registry attributes (`TOpPattern`).
    """

    pattern: DFPattern
    attrs: Attrs

    def __post_init__(self) -> None:
        attrs = self.attrs
        if not isinstance(attrs, Mapping) or not all(isinstance(k, str) for k in attrs):
            raise InvalidPatternError(f"has_attr expects a dict of attribute names to values, e.g. "
                                      f"{{'data_layout': 'NCHW'}}, got {type(attrs).__name__} {attrs!r}")
        _set(self, pattern=_as_pattern(self.pattern, "the pattern of has_attr"), attrs=Attrs(attrs))

    def children(self) -> tuple[DFPattern, ...]:
        return (self.pattern,)

    def _in_place_children(self) -> tuple[DFPattern, ...]:
        return self.children()

    def _render(self, ref: Ref) -> str:
        return f"{ref(self.pattern)}.has_attr({dict(self.attrs)!r})"


@dataclass(frozen=True, eq=False, slots=True, repr=False)
class DominatorPattern(DFPattern):
    """Matches `child` when every path into it leads back to one `parent` through `path` nodes.

    The child must also post-dominate the parent: no node outside the region uses the parent's
    output (or a path node's output) without passing through the child.
    """

    parent: DFPattern
    path: DFPattern
    child: DFPattern

    def __post_init__(self) -> None:
        _set(self, parent=_as_pattern(self.parent, "the parent of dominates"),
             path=_as_pattern(self.path, "the path of dominates"),
             child=_as_pattern(self.child, "the child of dominates"))

    def children(self) -> tuple[DFPattern, ...]:
        return (self.parent, self.path, self.child)

    def _in_place_children(self) -> tuple[DFPattern, ...]:
        return (self.child,)

    def _render(self, ref: Ref) -> str:
        return f"dominates({ref(self.parent)}, {ref(self.path)}, {ref(self.child)})"


def is_recursive(pattern: DFPattern) -> bool:
    """Whether `pattern` holds a cycle: a redirected wildcard that its target leads back to."""
    redirected = [p for p in post_order(pattern, _children) if isinstance(p, WildcardPattern)
                  and p.redirect is not None]
    return any(any(q is w for q in post_order(w.redirect, _children)) for w in redirected)


def _children(p: DFPattern) -> tuple[DFPattern, ...]:
    return p.children()
