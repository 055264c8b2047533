"""A rule's left sides compiled to one conjunctive e-matching query, and its rows decoded to matches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..egraph.query import QueryBuilder, QVar, Query
from ..egraph.terms import Kind
from ..errors import RuleError
from .match import Match
from .pattern import (AVar, Number, Pat, PCall, PChoose, PConst, PGetItem, PLit, PTuple, PVar, expand, literal_matches,
                      name_literals)

__all__ = ["CompiledPattern", "compile_patterns", "tuple_arities"]


@dataclass(frozen=True)
class CompiledPattern:
    """A query for one or more root patterns, and how to turn each row into a `Match`."""

    query: Query
    n_roots: int
    var_columns: tuple[tuple[str, int], ...]
    const_columns: tuple[tuple[str, int], ...]
    attr_checks: tuple[tuple[int, tuple[tuple[str, Any], ...], str | None], ...]
    """attrs column, constraints on single attributes, name binding the whole `Attrs`."""
    literals: tuple[tuple[str, Number], ...] = ()
    """constant name -> the literal its every element must equal."""
    parts: int | None = None
    """the field count of the left side's `many` tuple in this query."""

    def decode(self, egraph, row: tuple) -> Match | None:
        """The match of a row, or None when an attribute or literal constraint fails."""
        values: dict[str, Any] = {}
        for col, constraints, whole in self.attr_checks:
            attrs = egraph.attrs[row[col]]
            if whole is not None:
                values[whole] = attrs
            for key, want in constraints:
                got = attrs[key]
                if isinstance(want, AVar):
                    if values.setdefault(want.name, got) != got:
                        return None
                elif got != want:
                    return None
        m = Match(egraph, tuple(row[:self.n_roots]), {n: row[c] for n, c in self.var_columns}, values,
                  parts=self.parts)
        for name, col in self.const_columns:
            m.constants[name] = egraph.constants[row[col]]
        if not all(literal_matches(m.constants[name].data, value) for name, value in self.literals):
            return None
        return m


def compile_patterns(roots: tuple[Pat, ...], parts: int | None = None) -> CompiledPattern:
    """One conjunctive query matching all `roots` at once (shared variables join them); `parts` is
    the field count of their `many` tuple, if they have one."""
    if parts is not None:
        roots = tuple(expand(r, parts) for r in roots)
    roots = name_literals(roots)
    qb = QueryBuilder()
    bound: dict[str, QVar] = {}
    const_keys: dict[str, QVar] = {}
    literals: list[tuple[str, Number]] = []
    attr_checks: list[tuple[QVar, tuple, str | None]] = []

    def emit(p: Pat) -> QVar:
        if isinstance(p, PVar):
            if p.name not in bound:
                bound[p.name] = qb.fresh()
            return bound[p.name]
        if isinstance(p, PConst):
            if p.name in bound:
                return bound[p.name]
            if isinstance(p, PLit):
                literals.append((p.name, p.value))
            key = qb.fresh("String")
            const_keys[p.name] = key
            bound[p.name] = qb.atom(Kind.CONST, (key,), ())
            return bound[p.name]
        if isinstance(p, PCall):
            kids = tuple(emit(a) for a in p.args)
            attrs = qb.fresh("String")
            if p.attrs or p.bind_attrs:
                attr_checks.append((attrs, p.attrs, p.bind_attrs))
            return qb.atom(Kind.CALL, (p.op, attrs), kids)
        if isinstance(p, PTuple):
            tail = qb.atom(Kind.NIL, (), ())
            for f in reversed(p.fields):
                tail = qb.atom(Kind.CONS, (), (emit(f), tail))
            return qb.atom(Kind.TUPLE, (), (tail,))
        if isinstance(p, PGetItem):
            return qb.atom(Kind.GETITEM, (p.index,), (emit(p.tup),))
        if isinstance(p, PChoose):
            raise RuleError("choose() picks a right side's form; a left side cannot hold one")
        raise RuleError(f"cannot match {p!r}: patterns are built from pvars, call, const_pat, numbers, tuple_pat, "
                        "many, getitem")

    root_vars = []
    for r in roots:
        if isinstance(r, PVar):
            raise RuleError(f"a left side must not be a bare variable ({r.name!r}): it would match every class")
        root_vars.append(emit(r))
    columns = list(root_vars)
    var_columns, const_columns, checks = [], [], []
    for name, qv in sorted(bound.items()):
        var_columns.append((name, len(columns)))
        columns.append(qv)
    for name, qv in sorted(const_keys.items()):
        const_columns.append((name, len(columns)))
        columns.append(qv)
    for qv, constraints, whole in attr_checks:
        checks.append((len(columns), constraints, whole))
        columns.append(qv)
    return CompiledPattern(qb.build(tuple(columns)), len(roots), tuple(var_columns), tuple(const_columns),
                           tuple(checks), tuple(literals), parts)


def tuple_arities(egraph) -> set[int]:
    """The field counts of the tuples in `egraph`."""
    nodes = egraph.class_nodes()

    def length(lst) -> int:
        count = 0
        while (cell := nodes[lst][0]).kind is Kind.CONS:
            count, lst = count + 1, cell.children[1]
        return count
    return {length(t.children[-1]) for terms in nodes.values() for t in terms if t.kind is Kind.TUPLE}
