"""Symbolic shape values as run-time data: the IR that computes them from the graph inputs' shapes.

Shape computations over a symbolic batch fold at import into *symbolic shape values* (see
`import_fold`), which stand in the graph as placeholder variables. Most are read only as shape
arguments and vanish; one that a run needs as data (the limit of a `Range`, the end of a `Slice`
that no static form expresses) is built here: each size variable is read with `shape_of` from the
graph input that declares it, and arithmetic on them (`N * 2048`, `S // 2`, `min(S, 512)`) becomes int64 IR.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..expr import Constant, Expr, Var
from ..op.registry import make_call
from ..types import DimExpr, FloorDiv, MinDim, SizeVar
from .errors import FrontendError

__all__ = ["DimensionBuilder"]

#: where a size variable can be read: the graph input that declares it, and its axis
DimensionSource = Callable[[SizeVar], "tuple[Var, int] | None"]


def _scalar(value: int) -> Expr:
    return Constant(np.array(value, dtype=np.int64))


class DimensionBuilder:
    """Builds int64 IR for symbolic shape values, sharing one `shape_of` per graph input."""

    def __init__(self, source: DimensionSource):
        self._source = source
        self._shapes: dict[Var, Expr] = {}

    def value(self, value: np.ndarray, dtype: str) -> Expr:
        """IR computing `value` (an integer array whose elements may be symbolic) as `dtype`."""
        elements = [self.dimension(d) for d in value.reshape(-1)]
        if value.ndim == 0:
            out = elements[0]
        else:
            pieces = [make_call("reshape", [e], {"newshape": [1]}) for e in elements]
            out = make_call("concatenate", [pieces], {"axis": 0})
            if value.ndim > 1:
                out = make_call("reshape", [out], {"newshape": list(value.shape)})
        return out if dtype == "int64" else make_call("cast", [out], {"dtype": dtype})

    def dimension(self, d) -> Expr:
        """A 0-d int64 tensor holding dimension `d` (an int or a symbolic dimension) at run time."""
        if isinstance(d, (int, np.integer)):
            return _scalar(int(d))
        if isinstance(d, SizeVar):
            return self._size(d)
        if isinstance(d, FloorDiv):
            return make_call("floor_divide", [self.dimension(d.numerator), self.dimension(d.denominator)], {})
        if isinstance(d, MinDim):
            first, *rest = (self.dimension(e) for e in d.dims)
            for other in rest:
                first = make_call("minimum", [first, other], {})
            return first
        if isinstance(d, DimExpr):
            total: Expr | None = None
            for monomial, coefficient in d.terms:
                term = _scalar(coefficient) if not monomial or coefficient != 1 else None
                for atom in monomial:
                    factor = self.dimension(atom)
                    term = factor if term is None else make_call("multiply", [term, factor], {})
                total = term if total is None else make_call("add", [total, term], {})
            return total if total is not None else _scalar(0)
        raise FrontendError(f"cannot compute dimension {d!r} at run time")

    def _size(self, dim: SizeVar) -> Expr:
        source = self._source(dim)
        if source is None:
            raise FrontendError(f"the size {dim} is used as run-time data, but no graph input declares it, so "
                                f"nothing can read it at run time")
        var, axis = source
        if var not in self._shapes:
            self._shapes[var] = make_call("shape_of", [var], {"dtype": "int64"})
        return make_call("take", [self._shapes[var], _scalar(axis)], {"axis": 0})
