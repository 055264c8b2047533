"""`partition`: wrap each match of a pattern into a call of a new function, as TVM does.

    %1 = fn (%FunctionVar_0_0, %FunctionVar_0_1, PartitionedFromPattern="nn.conv2d_nn.relu_") {
      %0 = nn.conv2d(%FunctionVar_0_0, %FunctionVar_0_1);
      nn.relu(%0)
    };
    %1(%x, %w)

Which matches become groups, their parameters and names: see `grouping`. When the graph was
type-checked (`ir.infer_type`), each parameter is annotated with its argument's type, so the
result type-checks again; otherwise parameters are untyped, as in TVM. A recursive pattern
wraps each whole chain, from its root-most link down to its base, into one function.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Callable

from ..attrs import Attrs
from ..expr import Call, Expr, Function
from ..visitor import rebuild
from .errors import InvalidPatternError
from .grouping import group_matches
from .nodes import DFPattern, FunctionPattern

__all__ = ["partition"]


def partition(pattern: DFPattern, expr: Expr, attrs: Mapping[str, Any] | None = None,
              check: Callable[[Expr], bool] | None = None) -> Expr:
    """`expr` with every accepted match of `pattern` replaced by a call of a new function.

    The function carries `PartitionedFromPattern` (the matched ops joined by "_") plus `attrs`.
    A match is replaced only when `check(root)` is true; a rejected match still claims its nodes.
    Without any replacement the input object itself is returned.
    """
    if not isinstance(pattern, DFPattern):
        raise InvalidPatternError(f"partition expects a pattern, got {type(pattern).__name__} {pattern!r}")
    if not isinstance(expr, Expr):
        raise TypeError(f"partition expects an IR expression, got {type(expr).__name__} {expr!r}")
    if attrs is not None and not (isinstance(attrs, Mapping) and all(isinstance(k, str) for k in attrs)):
        raise InvalidPatternError(f"partition: attrs must be a dict of attribute names to values, got "
                                  f"{type(attrs).__name__} {attrs!r}")
    if check is not None and not callable(check):
        raise InvalidPatternError(f"partition: check must be a function of the matched root, got "
                                  f"{type(check).__name__} {check!r}")
    if isinstance(pattern, FunctionPattern):
        warnings.warn("partitioning with a FunctionPattern would wrap a function that is never called; "
                      "the expression is returned unchanged", stacklevel=2)
        return expr
    groups = {g.root: g for g in group_matches(pattern, expr, partitioning=True)}
    if not groups:
        return expr
    post_of: dict[Expr, Expr] = {}

    def replace(old: Expr, updated: Expr) -> Expr:
        group = groups.get(old)
        if group is not None and (check is None or check(old)):
            func = Function(group.function.params, group.function.body, None,
                            Attrs({"PartitionedFromPattern": group.name, **(attrs or {})}))
            updated = Call(func, [post_of.get(a, a) for a in group.args])
        post_of[old] = updated
        return updated

    return rebuild(expr, replace)
