"""Declarative term patterns and templates for rewrite rules, and their compilation to queries.

    x, w, v = pvars("x w v")
    call("nn.relu", call("nn.relu", x))                      # relu(relu(x))
    call("transpose", x, axes=avar("p"))                     # binds the attribute to "p"
    call("multiply", x, const_pat("c"))                      # a constant operand, value in m.const("c")

A template (right-hand side) uses the same builders; an attribute there may be a literal, an
`avar`, or a function of the match (`axes=lambda m: compose(m["p"], m["q"])`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from ir import Expr, Tuple, TupleGetItem, get_op
from ir.op.registry import make_call

from ..egraph.query import QueryBuilder, QVar, Query
from ..egraph.terms import Kind
from ..errors import RuleError
from .match import Match

__all__ = [
    "Pat", "PVar", "PConst", "PCall", "PTuple", "PGetItem", "AVar", "pvars", "avar", "const_pat", "call",
    "tuple_pat", "getitem", "CompiledPattern", "compile_patterns", "instantiate", "check_template", "variables",
]


class Pat:
    """Base class of pattern terms."""

    def __getitem__(self, index: int) -> "PGetItem":
        return PGetItem(self, index)


@dataclass(frozen=True)
class PVar(Pat):
    """Any value; every use of one name must be the same e-class."""

    name: str


@dataclass(frozen=True)
class PConst(Pat):
    """A constant tensor (its class holds a constant node); the value is `m.const(name)`."""

    name: str


@dataclass(frozen=True)
class AVar:
    """An attribute variable: binds a call attribute's value on the left, reuses it on the right."""

    name: str


@dataclass(frozen=True)
class PCall(Pat):
    """A call of `op`; `attrs` constrain (literal), bind (`AVar`) or, in templates, compute values."""

    op: str
    args: tuple[Pat, ...]
    attrs: tuple[tuple[str, Any], ...] = ()
    bind_attrs: str | None = None
    """on a left side: bind the call's whole `Attrs` to this attribute variable."""
    attrs_from: str | None = None
    """in a template: start from the `Attrs` bound to this name (`bind_attrs`), then apply `attrs`."""


@dataclass(frozen=True)
class PTuple(Pat):
    fields: tuple[Pat, ...]


@dataclass(frozen=True)
class PGetItem(Pat):
    tup: Pat
    index: int


def pvars(names: str) -> tuple[PVar, ...]:
    """`x, y = pvars("x y")`."""
    return tuple(PVar(n) for n in names.split())


def avar(name: str) -> AVar:
    return AVar(name)


def const_pat(name: str) -> PConst:
    return PConst(name)


def call(op: str, *args: Pat, bind_attrs: str | None = None, attrs_from: str | None = None, **attrs: Any) -> PCall:
    """A call pattern/template; the op must be registered and take `len(args)` inputs.

    `bind_attrs="a"` (left sides only) makes the call's whole `Attrs` available as `m["a"]`;
    `attrs_from="a"` (templates only) copies them, with `attrs` overriding single values:
    `call("nn.conv2d_bias_act", x, w, b, attrs_from="c", activation="none")`.
    """
    registered = get_op(op)
    if len(args) != registered.num_inputs:
        raise RuleError(f"{op} takes {registered.num_inputs} input(s), the pattern gives {len(args)}")
    known = {f.name for f in registered.attr_fields}
    unknown = sorted(set(attrs) - known)
    if unknown:
        raise RuleError(f"{op}: unknown attribute(s) {unknown} in a pattern; known: {sorted(known)}")
    return PCall(op, tuple(args), tuple(sorted(attrs.items())), bind_attrs, attrs_from)


def tuple_pat(*fields: Pat) -> PTuple:
    return PTuple(tuple(fields))


def getitem(tup: Pat, index: int) -> PGetItem:
    return PGetItem(tup, index)


def walk(p: Pat) -> Iterator[Pat]:
    """Every sub-pattern, parents before children."""
    yield p
    if isinstance(p, PCall):
        for a in p.args:
            yield from walk(a)
    elif isinstance(p, PTuple):
        for f in p.fields:
            yield from walk(f)
    elif isinstance(p, PGetItem):
        yield from walk(p.tup)


def variables(p: Pat) -> set[str]:
    """Names of pattern and attribute variables in `p`."""
    out: set[str] = set()
    for q in walk(p):
        if isinstance(q, (PVar, PConst)):
            out.add(q.name)
        elif isinstance(q, PCall):
            out.update(v.name for _, v in q.attrs if isinstance(v, AVar))
            out.update(n for n in (q.bind_attrs, q.attrs_from) if n)
    return out


@dataclass(frozen=True)
class CompiledPattern:
    """A query for one or more root patterns, and how to turn each row into a `Match`."""

    query: Query
    n_roots: int
    var_columns: tuple[tuple[str, int], ...]
    const_columns: tuple[tuple[str, int], ...]
    attr_checks: tuple[tuple[int, tuple[tuple[str, Any], ...], str | None], ...]
    """attrs column, constraints on single attributes, name binding the whole `Attrs`."""

    def decode(self, egraph, row: tuple) -> Match | None:
        """The match of a row, or None when an attribute constraint fails."""
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
        m = Match(egraph, tuple(row[:self.n_roots]), {n: row[c] for n, c in self.var_columns}, values)
        for name, col in self.const_columns:
            m.constants[name] = egraph.constants[row[col]]
        return m


def compile_patterns(roots: tuple[Pat, ...]) -> CompiledPattern:
    """One conjunctive query matching all `roots` at once (shared variables join them)."""
    qb = QueryBuilder()
    bound: dict[str, QVar] = {}
    const_keys: dict[str, QVar] = {}
    attr_checks: list[tuple[QVar, tuple, str | None]] = []

    def emit(p: Pat) -> QVar:
        if isinstance(p, PVar):
            if p.name not in bound:
                bound[p.name] = qb.fresh()
            return bound[p.name]
        if isinstance(p, PConst):
            if p.name in bound:
                return bound[p.name]
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
        raise RuleError(f"cannot match {p!r}: patterns are built from pvars, call, const_pat, tuple_pat, getitem")

    root_vars = []
    for r in roots:
        if isinstance(r, PVar):
            raise RuleError(f"a rule's left side must not be a bare variable ({r.name!r}): it would match every class")
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
                           tuple(checks))


def instantiate(template: Pat, m: Match) -> Expr:
    """The IR expression of `template` under `m` (bound leaves are `m.expr(name)` placeholders)."""
    def attr_value(v: Any) -> Any:
        if isinstance(v, AVar):
            return m.values[v.name]
        if callable(v):
            return v(m)
        return v

    def build(p: Pat) -> Expr:
        if isinstance(p, (PVar, PConst)):
            return m.expr(p.name)
        if isinstance(p, PCall):
            attrs = dict(m.values[p.attrs_from]) if p.attrs_from else {}
            attrs.update((k, attr_value(v)) for k, v in p.attrs)
            return make_call(p.op, [build(a) for a in p.args], attrs)
        if isinstance(p, PTuple):
            return Tuple([build(f) for f in p.fields])
        if isinstance(p, PGetItem):
            return TupleGetItem(build(p.tup), p.index)
        raise RuleError(f"cannot build {p!r} in a template")

    return build(template)


def check_template(template: Pat, bound: set[str], where: str) -> None:
    """Raise when `template` uses a variable the left side does not bind."""
    unbound = sorted(variables(template) - bound)
    if unbound:
        raise RuleError(f"{where}: right side uses unbound {unbound}")
