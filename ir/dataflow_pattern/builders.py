"""Builder functions: the pattern language as users write it (`is_op("nn.relu")(wildcard())`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import OpNotFoundError
from ..expr import Expr
from ..op.registry import get_op
from ..types import Type
from .errors import InvalidPatternError
from .nodes import (
    AttrPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
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
    "is_var", "is_constant", "is_expr", "is_op", "is_tuple", "is_tuple_get_item", "is_if", "is_let",
    "wildcard", "has_type", "has_dtype", "has_shape", "has_attr", "dominates",
]


def is_var(name: str = "") -> VarPattern:
    """A variable; named `name` when given."""
    return VarPattern(name)


def is_constant() -> ConstantPattern:
    """Any constant."""
    return ConstantPattern()


def is_expr(expr: Expr) -> ExprPattern:
    """An expression structurally equal to `expr` (e.g. `is_expr(relay.const(0))`)."""
    return ExprPattern(expr)


def is_op(op_name: str) -> ExprPattern:
    """The registered op `op_name`; call the result to match calls of it: `is_op("add")(a, b)`."""
    if not isinstance(op_name, str):
        raise InvalidPatternError(f"is_op expects an op name (str), got {type(op_name).__name__} {op_name!r}")
    try:
        return ExprPattern(get_op(op_name))
    except OpNotFoundError as err:
        raise OpNotFoundError(f"is_op: {err}") from None


def is_tuple(fields: Sequence[DFPattern] | None) -> TuplePattern:
    """A tuple whose fields match `fields`; `None` matches tuples of any length."""
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value: DFPattern, index: int | None = None) -> TupleGetItemPattern:
    """`tuple_value[index]`; `index=None` matches any index."""
    return TupleGetItemPattern(tuple_value, index)


def is_if(cond: DFPattern, true_branch: DFPattern, false_branch: DFPattern) -> IfPattern:
    """An `If` whose condition and branches match."""
    return IfPattern(cond, true_branch, false_branch)


def is_let(var: DFPattern, value: DFPattern, body: DFPattern) -> LetPattern:
    """A `Let` whose variable, value and body match."""
    return LetPattern(var, value, body)


def wildcard() -> WildcardPattern:
    """Any expression."""
    return WildcardPattern()


def has_type(ttype: Type, pattern: DFPattern | None = None) -> TypePattern:
    """`pattern` (default: wildcard) with type `ttype`."""
    return TypePattern(wildcard() if pattern is None else pattern, ttype)


def has_dtype(dtype: Any, pattern: DFPattern | None = None) -> DataTypePattern:
    """`pattern` (default: wildcard) producing a tensor of `dtype`."""
    return DataTypePattern(wildcard() if pattern is None else pattern, dtype)


def has_shape(shape: Sequence[Any], pattern: DFPattern | None = None) -> ShapePattern:
    """`pattern` (default: wildcard) producing a tensor of `shape`."""
    return ShapePattern(wildcard() if pattern is None else pattern, shape)


def has_attr(attrs: Mapping[str, Any], pattern: DFPattern | None = None) -> AttrPattern:
    """`pattern` (default: wildcard) on a call, function or op carrying these attribute values."""
    return AttrPattern(wildcard() if pattern is None else pattern, attrs)


def dominates(parent: DFPattern, path: DFPattern, child: DFPattern) -> DominatorPattern:
    """`child` reached from one `parent` only through nodes matching `path`, and post-dominating it."""
    return DominatorPattern(parent, path, child)
