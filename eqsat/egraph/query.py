"""Conjunctive e-matching queries as plain data; the backend turns them into egglog rules.

A query is a list of atoms `out = ctor(payload..., children...)` over variables. A variable used
in several places must take the same value there, which is how sharing in a pattern
(`add(x, x)`) and multi-pattern rules (two roots that share an input) are expressed. Each match
of the query records the values of its `columns`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, Union

from .terms import Kind

__all__ = ["QVar", "Atom", "Query", "QueryBuilder", "is_plain_literal"]

_PLAIN = re.compile(r"^[A-Za-z0-9_.:\-]+$")


def is_plain_literal(text: str) -> bool:
    """Whether `text` may appear as a string literal in a query (op names, keys); others need a variable."""
    return bool(_PLAIN.match(text))

Sort = Literal["T", "String", "i64"]


@dataclass(frozen=True, slots=True)
class QVar:
    """A query variable: an e-class (`T`), a string (op name, attrs key, name) or an integer."""

    name: str
    sort: Sort = "T"


Arg = Union[QVar, str, int]


@dataclass(frozen=True, slots=True)
class Atom:
    """`out` is an e-node of `kind` with this payload (literals or variables) and these children."""

    kind: Kind
    payload: tuple[Arg, ...]
    children: tuple[QVar, ...]
    out: QVar


@dataclass(frozen=True)
class Query:
    """Atoms that must all hold; `columns` are the variables each match reports, in order."""

    atoms: tuple[Atom, ...]
    columns: tuple[QVar, ...]

    def __post_init__(self) -> None:
        bound = {a.out for a in self.atoms}
        for a in self.atoms:
            bound.update(a.children)
            bound.update(p for p in a.payload if isinstance(p, QVar))
        loose = [c.name for c in self.columns if c not in bound]
        if loose:
            raise ValueError(f"query columns {loose} are not bound by any atom")
        if not self.atoms:
            raise ValueError("a query needs at least one atom")


@dataclass
class QueryBuilder:
    """Collects atoms with fresh variable names; `build` freezes them into a `Query`."""

    atoms: list[Atom] = field(default_factory=list)
    _count: int = 0

    def fresh(self, sort: Sort = "T") -> QVar:
        self._count += 1
        return QVar(f"v{self._count}", sort)

    def atom(self, kind: Kind, payload: tuple[Arg, ...], children: tuple[QVar, ...], out: QVar | None = None) -> QVar:
        out = out or self.fresh("T")
        self.atoms.append(Atom(kind, payload, children, out))
        return out

    def build(self, columns: tuple[QVar, ...]) -> Query:
        return Query(tuple(self.atoms), columns)
