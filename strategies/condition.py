"""Specialized conditions: conjunctions of clauses, each a disjunction of predicates over input shapes.

`InputDim(i, axis)` reads a dimension of input `i`; arithmetic and comparisons on it build shape
expressions and predicates: `InputDim(0, 0) > 16`, `(InputDim(0, -1) % 8 == 0) | (InputDim(0, -1) < 4)`.
A condition decides to True or False when the dimensions it reads are known, and stays undecided
(None) while one is symbolic, so a program with symbolic shapes decides it at run time.
"""

from __future__ import annotations

import contextvars
import operator
from dataclasses import dataclass
from typing import Any, Sequence

from ir.types import TensorType, Type

__all__ = ["ShapeExpr", "InputDim", "Predicate", "Clause", "SpecializedCondition", "Shapes", "input_shapes"]

Shapes = Sequence[Sequence[Any] | None]  # one shape per input (None for a tuple-valued input)


def input_shapes(types: Sequence[Type]) -> list[tuple | None]:
    """The shape of each input type (None for a tuple-typed input), as conditions read them."""
    return [t.shape if isinstance(t, TensorType) else None for t in types]


# -- shape expressions and predicates -----------------------------------------------------------

_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}
_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne}


class ShapeExpr:
    """An integer expression over input dimensions; comparing one builds a `Predicate`."""

    def value(self, shapes: Shapes) -> int | None:
        """The value for these input shapes; None when a dimension it reads is symbolic."""
        raise NotImplementedError

    def _arith(self, op: str, other: "ShapeExpr | int", reverse: bool = False) -> "ShapeExpr":
        other = other if isinstance(other, ShapeExpr) else _Const(int(other))
        return _Arith(op, other, self) if reverse else _Arith(op, self, other)

    def __add__(self, other): return self._arith("+", other)
    def __radd__(self, other): return self._arith("+", other, reverse=True)
    def __sub__(self, other): return self._arith("-", other)
    def __mul__(self, other): return self._arith("*", other)
    def __rmul__(self, other): return self._arith("*", other, reverse=True)
    def __floordiv__(self, other): return self._arith("//", other)
    def __mod__(self, other): return self._arith("%", other)

    def _compare(self, op: str, other: "ShapeExpr | int") -> "Predicate":
        return Predicate(op, self, other if isinstance(other, ShapeExpr) else _Const(int(other)))

    def __lt__(self, other): return self._compare("<", other)
    def __le__(self, other): return self._compare("<=", other)
    def __gt__(self, other): return self._compare(">", other)
    def __ge__(self, other): return self._compare(">=", other)
    def __eq__(self, other): return self._compare("==", other)  # type: ignore[override]
    def __ne__(self, other): return self._compare("!=", other)  # type: ignore[override]
    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class _Const(ShapeExpr):
    number: int

    def value(self, shapes: Shapes) -> int:
        return self.number

    def __str__(self) -> str:
        return str(self.number)


@dataclass(frozen=True, eq=False)
class InputDim(ShapeExpr):
    """Dimension `axis` of input `input_index` (negative axes count from the end)."""

    input_index: int
    axis: int

    def value(self, shapes: Shapes) -> int | None:
        shape = shapes[self.input_index]
        if shape is None:
            raise ValueError(f"input {self.input_index} is a tuple; a condition can only read tensor dimensions")
        dim = shape[self.axis]
        return dim if isinstance(dim, int) else None

    def __str__(self) -> str:
        return f"in{self.input_index}.shape[{self.axis}]"


@dataclass(frozen=True, eq=False)
class _Arith(ShapeExpr):
    op: str
    lhs: ShapeExpr
    rhs: ShapeExpr

    def value(self, shapes: Shapes) -> int | None:
        a, b = self.lhs.value(shapes), self.rhs.value(shapes)
        return None if a is None or b is None else _ARITH[self.op](a, b)

    def __str__(self) -> str:
        return f"({self.lhs} {self.op} {self.rhs})"


@dataclass(frozen=True, eq=False)
class Predicate:
    """`lhs op rhs` over shape expressions; `p | q` builds a clause (a disjunction)."""

    op: str
    lhs: ShapeExpr
    rhs: ShapeExpr

    def decide(self, shapes: Shapes) -> bool | None:
        """True or False for these shapes; None when a dimension it reads is symbolic."""
        a, b = self.lhs.value(shapes), self.rhs.value(shapes)
        return None if a is None or b is None else _COMPARE[self.op](a, b)

    def __or__(self, other: "Predicate | Clause") -> "Clause":
        return Clause((self,)) | other

    def __str__(self) -> str:
        return f"{self.lhs} {self.op} {self.rhs}"


@dataclass(frozen=True)
class Clause:
    """A disjunction of predicates: true when any predicate is."""

    predicates: tuple[Predicate, ...]

    def __or__(self, other: "Predicate | Clause") -> "Clause":
        more = other.predicates if isinstance(other, Clause) else (other,)
        return Clause(self.predicates + more)

    def decide(self, shapes: Shapes) -> bool | None:
        results = [p.decide(shapes) for p in self.predicates]
        if any(r is True for r in results):
            return True
        return False if all(r is False for r in results) else None

    def __str__(self) -> str:
        return " or ".join(str(p) for p in self.predicates)


_CONDITION: contextvars.ContextVar["SpecializedCondition | None"] = contextvars.ContextVar(
    "strategies_condition", default=None)


class SpecializedCondition:
    """A condition in conjunctive normal form over input shapes: every clause must hold.

    Used as a context manager while building a strategy, it guards the implementations added
    inside the block. `decide(shapes)` is True, False, or None while a dimension is symbolic.
    """

    def __init__(self, clauses: Sequence[Predicate | Clause] | Predicate | Clause):
        if isinstance(clauses, (Predicate, Clause)):
            clauses = [clauses]
        normalized = []
        for c in clauses:
            if isinstance(c, Predicate):
                c = Clause((c,))
            if not isinstance(c, Clause):
                raise TypeError(f"a condition's clauses are shape predicates such as InputDim(0, 0) > 16, got {c!r}")
            normalized.append(c)
        self.clauses: tuple[Clause, ...] = tuple(normalized)
        self._token: contextvars.Token | None = None

    def decide(self, shapes: Shapes) -> bool | None:
        results = [c.decide(shapes) for c in self.clauses]
        if any(r is False for r in results):
            return False
        return True if all(r is True for r in results) else None

    @staticmethod
    def current() -> "SpecializedCondition | None":
        """The condition of the innermost `with SpecializedCondition(...)` block, if any."""
        return _CONDITION.get()

    def __enter__(self) -> "SpecializedCondition":
        self._token = _CONDITION.set(self)
        return self

    def __exit__(self, *exc) -> None:
        _CONDITION.reset(self._token)

    def __eq__(self, other) -> bool:
        return isinstance(other, SpecializedCondition) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __str__(self) -> str:
        return " and ".join(f"({c})" for c in self.clauses)

    def __repr__(self) -> str:
        return f"SpecializedCondition({self})"
