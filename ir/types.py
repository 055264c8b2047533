"""Types: tensors with static or symbolic dimensions, tuples and functions.

A symbolic dimension is a `SizeVar` (a named size), or arithmetic on them: `SizeVar("N") * 2048`
is a `DimExpr` (a polynomial with integer coefficients), `SizeVar("N") // 2` a `FloorDiv`, and
`dim_min(SizeVar("S"), 512)` a `MinDim` (a symbolic length clipped, as a slice of its first 512
positions or of its last 3 is). Results are simplified, so `N * 2048 // 2048` is `N` again and
`N - N` the int 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Union

import numpy as np

__all__ = [
    "Type", "TensorType", "TupleType", "FuncType", "SizeVar", "DimExpr", "FloorDiv", "MinDim", "SymbolicDim", "AnyDim",
    "Any", "Dim", "floor_divide", "dim_min", "dim_value", "DTYPES", "normalize_dtype", "normalize_shape", "is_static", "dim_str",
]


@dataclass(frozen=True)
class AnyDim:
    """A dimension known only at run time (Relay's `Any`); two `Any`s need not be equal."""

    def __str__(self) -> str:
        return "?"


class _DimArithmetic:
    """Integer arithmetic on symbolic dimensions: `+ - * //` (and `/`, which is `//` since sizes are
    non-negative integers) give a `Dim`, simplified to an int or a `SizeVar` where possible."""

    def __add__(self, other):
        return _combine(self, other, _add)

    __radd__ = __add__

    def __sub__(self, other):
        return _combine(self, other, lambda a, b: _add(a, _scale(b, -1)))

    def __rsub__(self, other):
        return _combine(other, self, lambda a, b: _add(a, _scale(b, -1)))

    def __mul__(self, other):
        return _combine(self, other, _multiply)

    __rmul__ = __mul__

    def __neg__(self):
        return _from_poly(_scale(_poly(self), -1))

    def __floordiv__(self, other):
        return floor_divide(self, other)

    def __rfloordiv__(self, other):
        return floor_divide(other, self)

    __truediv__ = __floordiv__
    __rtruediv__ = __rfloordiv__

    def __lt__(self, other):
        return _order(other - self, strict=True)

    def __le__(self, other):
        return _order(other - self, strict=False)

    def __gt__(self, other):
        return _order(self - other, strict=True)

    def __ge__(self, other):
        return _order(self - other, strict=False)


@dataclass(frozen=True)
class SizeVar(_DimArithmetic):
    """A named symbolic dimension: every occurrence of the same name is the same size (at least 1)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class FloorDiv(_DimArithmetic):
    """`numerator // denominator` where the division is not exact (e.g. `N // 2`)."""

    numerator: "Dim"
    denominator: "Dim"

    def __str__(self) -> str:
        return f"{_atom_str(self.numerator)} // {_atom_str(self.denominator)}"


@dataclass(frozen=True)
class MinDim(_DimArithmetic):
    """The least of `dims` where which is least depends on the sizes (e.g. `min(S, 512)`); made by
    `dim_min`, which keeps them in one order."""

    dims: tuple["Dim", ...]

    def __str__(self) -> str:
        return f"min({', '.join(map(str, self.dims))})"


_Atom = Union[SizeVar, FloorDiv, MinDim]
_Monomial = tuple  # sorted tuple of atoms (a repeated atom is a power)
_Poly = dict  # monomial -> non-zero integer coefficient; the empty monomial is the constant term


@dataclass(frozen=True)
class DimExpr(_DimArithmetic):
    """A polynomial over symbolic dimensions with integer coefficients, e.g. `N*2048` or `N*S + 1`;
    built by arithmetic on `SizeVar`s, never holding a plain int or a lone atom."""

    terms: tuple[tuple[_Monomial, int], ...]

    def __str__(self) -> str:
        text = ""
        for monomial, coefficient in self.terms:
            alone = len(monomial) == 1 and abs(coefficient) == 1  # a lone atom needs no parentheses
            factors = [str(monomial[0])] if alone else list(map(_atom_str, monomial))
            if abs(coefficient) != 1 or not factors:
                factors.append(str(abs(coefficient)))
            sign = ("-" if coefficient < 0 else "") if not text else (" - " if coefficient < 0 else " + ")
            text += sign + "*".join(factors)
        return text


def _atom_str(d) -> str:
    return f"({d})" if isinstance(d, (DimExpr, FloorDiv)) else str(d)


def _atom_key(atom) -> str:
    return str(atom)


def _poly(d) -> _Poly:
    if isinstance(d, DimExpr):
        return dict(d.terms)
    if isinstance(d, (SizeVar, FloorDiv, MinDim)):
        return {(d,): 1}
    return {(): int(d)} if d else {}


def _from_poly(poly: _Poly):
    poly = {m: c for m, c in poly.items() if c}
    if not poly:
        return 0
    if list(poly) == [()]:
        return poly[()]
    if len(poly) == 1:
        ((monomial, coefficient),) = poly.items()
        if coefficient == 1 and len(monomial) == 1:
            return monomial[0]
    return DimExpr(tuple(sorted(poly.items(), key=lambda t: (-len(t[0]), [_atom_key(a) for a in t[0]]))))


def _add(a: _Poly, b: _Poly) -> _Poly:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + c
    return out


def _scale(a: _Poly, k: int) -> _Poly:
    return {m: c * k for m, c in a.items()}


def _multiply(a: _Poly, b: _Poly) -> _Poly:
    out: _Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb, key=_atom_key))
            out[m] = out.get(m, 0) + ca * cb
    return out


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _combine(a, b, fn):
    if not (_is_int(a) or isinstance(a, _DimArithmetic)) or not (_is_int(b) or isinstance(b, _DimArithmetic)):
        return NotImplemented
    return _from_poly(fn(_poly(a), _poly(b)))


def _order(difference, strict: bool) -> bool:
    """Whether `difference` is positive (`strict`) or non-negative for every size the variables may
    take (each at least 1; a `FloorDiv` at least 0); raises `TypeError` when that depends on them."""
    if difference is NotImplemented:
        return NotImplemented
    low, high = 0, 0
    for monomial, coefficient in _poly(difference).items():
        least = min((_least(a) for a in monomial), default=1)
        if coefficient > 0:
            low, high = low + coefficient * least, (high + coefficient) if not monomial else float("inf")
        else:
            low, high = (low + coefficient) if not monomial else float("-inf"), high + coefficient * least
    if low > 0 or (low >= 0 and not strict):
        return True
    if high < 0 or (high <= 0 and strict):
        return False
    raise TypeError(f"whether {difference} is {'positive' if strict else 'non-negative'} depends on the sizes "
                    f"its variables take")


def _least(atom) -> int:
    """The smallest value an atom takes (a product of atoms is at least the smallest of them, as each is
    0 or at least 1)."""
    if isinstance(atom, FloorDiv):
        return 0
    if isinstance(atom, MinDim):
        return min(_least_dim(d) for d in atom.dims)
    return 1


def _least_dim(d) -> int:
    if _is_int(d):
        return int(d)
    terms = _poly(d)
    if all(c > 0 for c in terms.values()):
        return sum(c * min((_least(a) for a in m), default=1) for m, c in terms.items())
    return 0


def dim_min(a, b):
    """`min(a, b)` for dimensions: the smaller where the sizes cannot change which it is, else a `MinDim`."""
    if _is_int(a) and _is_int(b):
        return min(int(a), int(b))
    if a == b:
        return a
    for smaller, other in ((a, b), (b, a)):
        try:
            if smaller <= other:
                return smaller
        except TypeError:
            pass
    return MinDim(tuple(sorted((a, b), key=lambda d: (_is_int(d), str(d)))))


def _divide_monomial(m: _Monomial, by: _Monomial) -> _Monomial | None:
    rest = list(m)
    for atom in by:
        if atom not in rest:
            return None
        rest.remove(atom)
    return tuple(rest)


def floor_divide(a, b):
    """`a // b` for dimensions: exact when `b` divides every term of `a`, else a `FloorDiv`."""
    if _is_int(a) and _is_int(b):
        return int(a) // int(b)
    if not (_is_int(a) or isinstance(a, _DimArithmetic)) or not (_is_int(b) or isinstance(b, _DimArithmetic)):
        return NotImplemented
    if _is_int(b) and b == 0:
        raise ZeroDivisionError(f"dimension {a} divided by 0")
    if a == b:
        return 1
    num, den = _poly(a), _poly(b)
    if len(den) == 1:
        ((by, k),) = den.items()
        quotient = {}
        for m, c in num.items():
            rest = _divide_monomial(m, by)
            if rest is None or c % k:
                break
            quotient[rest] = c // k
        else:
            return _from_poly(quotient)
    return FloorDiv(a, b)


Any = AnyDim()
Dim = Union[int, SizeVar, DimExpr, FloorDiv, MinDim, AnyDim]
SymbolicDim = (SizeVar, DimExpr, FloorDiv, MinDim)


def dim_value(d: Dim, size: int, named: Mapping[str, int] | None = None) -> int:
    """The length `d` has when every size variable (and every `Any`) is `size`, or its entry in
    `named`: how estimates and test inputs size a symbolic dimension, consistently (`N * 2048` is
    `2048 * size`)."""
    if isinstance(d, SizeVar):
        return named.get(d.name, size) if named else size
    if isinstance(d, AnyDim):
        return size
    if isinstance(d, FloorDiv):
        return dim_value(d.numerator, size, named) // max(dim_value(d.denominator, size, named), 1)
    if isinstance(d, MinDim):
        return min(dim_value(e, size, named) for e in d.dims)
    if isinstance(d, DimExpr):
        return sum(c * int(np.prod([dim_value(a, size, named) for a in m], dtype=np.int64)) for m, c in d.terms)
    return int(d)


def normalize_dim(d) -> Dim:
    if isinstance(d, (SizeVar, DimExpr, FloorDiv, MinDim, AnyDim)):
        return d
    if isinstance(d, str):
        return Any if d in ("?", "Any") else SizeVar(d)
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise TypeError(f"a dimension must be an int, a symbolic dimension or Any, got {d!r}")
    if d < 0:
        raise ValueError(f"a dimension must not be negative, got {d}")
    return int(d)


def normalize_shape(shape) -> tuple[Dim, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    return tuple(normalize_dim(d) for d in shape)


#: the element types the IR has: those of ONNX's standard ops (bfloat16 needs `ml_dtypes`, which onnx installs)
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64")


def normalize_dtype(dtype) -> str:
    """Canonical dtype name (`"float32"`, `"int64"`, `"bool"`, ...; None is float32). One the IR has not
    (complex, strings, objects) or that is no dtype at all is a `ValueError` naming it."""
    if dtype is None:
        return "float32"
    if str(dtype) == "bfloat16":
        try:
            import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy, for the arrays of such tensors)
        except ImportError:
            raise ValueError("dtype bfloat16 needs the ml_dtypes package (installed with onnx)") from None
        return "bfloat16"
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not supported; the IR has {', '.join(DTYPES)}")
    return name


def is_static(shape: tuple[Dim, ...]) -> bool:
    return all(isinstance(d, int) for d in shape)


def dim_str(d: Dim) -> str:
    return str(d)


class Type:
    """Base class of IR types."""


@dataclass(frozen=True)
class TensorType(Type):
    """A tensor of `shape` (static ints, `SizeVar`s or `Any`) and `dtype`."""

    shape: tuple[Dim, ...]
    dtype: str = "float32"

    def __init__(self, shape=(), dtype="float32"):
        object.__setattr__(self, "shape", normalize_shape(shape))
        object.__setattr__(self, "dtype", normalize_dtype(dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def concrete_shape(self) -> tuple[int, ...]:
        """The shape as ints; raises when a dimension is symbolic."""
        if not is_static(self.shape):
            raise ValueError(f"shape {self.shape_str()} is not static")
        return self.shape  # type: ignore[return-value]

    def num_elements(self) -> int | None:
        return math.prod(int(d) for d in self.shape) if is_static(self.shape) else None  # exact, never wraps

    def shape_str(self) -> str:
        inner = ", ".join(dim_str(d) for d in self.shape)
        return f"({inner},)" if len(self.shape) == 1 else f"({inner})"

    def __str__(self) -> str:
        return f"Tensor[{self.shape_str()}, {self.dtype}]"


@dataclass(frozen=True)
class TupleType(Type):
    """The type of a tuple value: one type per field."""

    fields: tuple[Type, ...]

    def __init__(self, fields):
        object.__setattr__(self, "fields", tuple(fields))

    def __str__(self) -> str:
        return "(" + ", ".join(str(f) for f in self.fields) + ("," if len(self.fields) == 1 else "") + ")"


@dataclass(frozen=True)
class FuncType(Type):
    """The type of a function: argument types and the return type."""

    arg_types: tuple[Type, ...]
    ret_type: Type

    def __init__(self, arg_types, ret_type):
        object.__setattr__(self, "arg_types", tuple(arg_types))
        object.__setattr__(self, "ret_type", ret_type)

    def __str__(self) -> str:
        return "fn (" + ", ".join(str(a) for a in self.arg_types) + f") -> {self.ret_type}"
