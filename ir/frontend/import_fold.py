"""Constant folding at import: the numpy value of an IR call whose inputs are all known.

`NodeContext.call` folds through `fold_call` whenever every input has a value at import, so a
shape computation (`Shape` -> `Cast` -> `Mul` -> `Floor` -> `ReduceProd` -> ...) becomes a
constant whatever ops lie between. Layout ops (`reshape`, `concatenate`, `take`, ...) are folded by
their converters, which know the ONNX form.

A *symbolic shape value* is an integer array (numpy `object` dtype) whose elements may be symbolic
dimensions (`ir.SizeVar("N")`, `N * 2048`, ...): the `Shape` of a tensor with a symbolic batch.
Arithmetic and comparisons on it follow `ir.types`' dimension arithmetic (a size variable is at
least 1; division floors); one whose result depends on the size a variable takes raises
`FrontendError`, except a maximum or minimum (`min(N, 64)`), left to run time.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..attrs import Attrs
from ..op.shapes import normalize_axes
from ..types import SymbolicDim
from .errors import FrontendError

__all__ = ["fold_call", "is_symbolic", "symbolic_names", "MAX_FOLDED_ELEMENTS"]

#: calls with a larger result are left to run time (shape computations are small; weights are not)
MAX_FOLDED_ELEMENTS = 4096


def is_symbolic(value: np.ndarray) -> bool:
    """Whether `value` is a symbolic shape value (holds a symbolic dimension)."""
    return value.dtype == object and any(isinstance(v, SymbolicDim) for v in value.flat)


def symbolic_names(value: np.ndarray) -> str:
    """The symbolic elements of `value`, for error messages."""
    return ", ".join(sorted({str(v) for v in value.flat if isinstance(v, SymbolicDim)}))


def _truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == object or b.dtype == object:  # dimensions are non-negative: truncation is floor division
        return np.floor_divide(a, b)
    if a.dtype.kind in "iu":
        quotient = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -quotient, quotient).astype(np.result_type(a, b))
    return a / b


def _dims_equal(a, b) -> bool:
    """`a == b` for dimensions; `TypeError` when the answer depends on the sizes the variables take."""
    difference = a - b
    if isinstance(difference, (int, np.integer)):
        return bool(difference == 0)
    try:
        if difference > 0 or difference < 0:
            return False
    except TypeError:
        pass
    raise TypeError(f"whether {a} equals {b} depends on the sizes its variables take")


def _equality(equal: bool) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """`equal`/`not_equal`, deciding for symbolic dimensions what `==` (structural) cannot."""
    def compare(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype != object and b.dtype != object:
            return np.equal(a, b) if equal else np.not_equal(a, b)
        same = np.frompyfunc(_dims_equal, 2, 1)(a, b).astype(bool)
        return same if equal else ~same
    return compare


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": _truncating_divide,
    "floor_divide": np.floor_divide, "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "mod": np.fmod, "floor_mod": np.mod,
    "equal": _equality(True), "not_equal": _equality(False), "less": np.less, "greater": np.greater,
    "less_equal": np.less_equal, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
}
_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "negative": np.negative, "abs": np.abs, "sign": np.sign, "floor": np.floor, "ceil": np.ceil,
    "round": np.round, "sqrt": np.sqrt, "logical_not": np.logical_not, "copy": np.copy,
}
_DIVISIONS = ("divide", "floor_divide", "mod", "floor_mod")
#: ops whose result, when dimension arithmetic cannot decide it (`min(N, 64)`), is a size computed when the
#: model runs (a slice end or reshape target for the `dyn` ops) rather than an import error
_RUN_TIME_WHEN_UNDECIDED = ("maximum", "minimum")
_REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean}


def _fold(op: str, values: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray | None:
    if op in _BINARY:
        return _BINARY[op](*values)
    if op in _UNARY:
        return _UNARY[op](values[0])
    if op in _REDUCE:
        axes = normalize_axes(attrs.axis, values[0].ndim)
        if attrs.exclude:
            axes = tuple(i for i in range(values[0].ndim) if i not in axes)
        return _REDUCE[op](values[0], axis=axes, keepdims=attrs.keepdims)
    if op == "cast":
        if values[0].dtype == object and np.dtype(attrs.dtype).kind not in "iu":
            raise FrontendError(f"cannot cast symbolic dimensions ({symbolic_names(values[0])}) to {attrs.dtype}")
        return values[0] if values[0].dtype == object else values[0].astype(attrs.dtype)
    if op == "clip":
        return np.minimum(np.maximum(values[0], attrs.a_min), attrs.a_max).astype(values[0].dtype)
    if op == "where":
        return np.where(*values)
    if op == "nn.pad" and values[0].dtype != object:
        fill = {"constant_values": attrs.pad_value} if attrs.pad_mode == "constant" else {}
        return np.pad(values[0], [tuple(p) for p in attrs.pad_width], mode=attrs.pad_mode, **fill)
    return None


def fold_call(op: str, values: Sequence[np.ndarray], attrs: Attrs, dtype: str) -> np.ndarray | None:
    """The value of IR call `op` on known inputs `values` as an array of the call's `dtype` (object for
    a symbolic shape value), or None when `op` is not folded at import."""
    if op in _DIVISIONS and values[1].dtype.kind in "iuO" and np.any(values[1] == 0):
        return None  # an integer division by zero is left to run time, which defines it
    try:
        with np.errstate(all="ignore"):  # NaN or inf is the folded value, as the kernel would compute it
            result = _fold(op, values, attrs)
    except TypeError as err:  # undecided by dimension arithmetic (N > 3), or undefined (a float factor)
        if op in _RUN_TIME_WHEN_UNDECIDED:
            return None
        names = "; ".join(symbolic_names(v) for v in values if v.dtype == object)
        raise FrontendError(f"{op} of symbolic dimensions ({names}) cannot be computed at import: {err}") from None
    if result is None:
        return None
    result = np.asarray(result)
    return result if result.dtype == object else result.astype(dtype, copy=False)
