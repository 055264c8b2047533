"""Declarative term patterns and templates for rewrite rules (`compiled.py` turns left sides into queries).

    x, a, w = pvars("x a w")
    nn.relu(nn.relu(x))                        # relu(relu(x)): `ops.<op>` / `nn.<op>` name every IR op
    x * ops.sigmoid(x)                         # + - * / @ and unary - build add, ..., nn.matmul, negative
    ops.power(x, 3.0)                          # a literal (below)
    ops.transpose(x, axes=avar("p"))           # binds the attribute to "p"
    x * const_pat("c")                         # any constant operand, its value in m.const("c")
    x * const_pat("c", 1.0)                    # a literal with a name, for a guard to read
    ops.concatenate(many(nn.relu(a)))          # a tuple of 2 or more fields, each a relu (below)
    choose(attr("mm", "transpose_b"), w, ops.transpose(w))   # on a right side: a form picked by the match

A template (right-hand side) uses the same builders; an attribute there may be a literal, an
`avar`, another call's attribute (`alpha=attr("act", "alpha")`) or a function of the match
(`axes=lambda m: compose(m["p"], m["q"])`).

Literals. On a left side a number matches a constant of any shape and dtype every element of which
equals it exactly; a float zero matches only float zeros of its own sign (`x + -0.0` matches -0.0,
`x + 0.0` matches +0.0), while an integer zero has no sign and matches either. Broadcasting is not
looked at: where a constant of more axes than the other operand changes the result's shape, the
rule's `when` says so (or the runner's type check refuses the result). On a right side a literal is
a rank-0 constant of the dtype of the root class the template rewrites; a match whose dtype cannot
hold the literal exactly is declined.

Attributes. A template call without `attrs_from` copies the attributes of the left side's call of
the same op when the left side has exactly one (inside `many`: exactly one in the part); attribute
arguments of the template call override single values. With several, `bind_attrs="a"` on one of
them and `attrs_from="a"` in the template say which.

Variadic tuples. `many(p)` is a tuple of `min_parts` to `MAX_PARTS` fields, each matching `p`; the
variables in `p` are bound once per field, as `name.0`, `name.1`, ... (`Match.each(name)` lists
them), and `many(q)` in the template builds one field per matched field. A rule is searched at the
tuple sizes its e-graph holds when the rule is installed.
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

import numpy as np

from ir import Constant, Expr, Tuple, TupleGetItem, get_op
from ir.dtype_info import is_float, numpy_dtype
from ir.errors import OpNotFoundError
from ir.op.registry import list_ops, make_call

from ..errors import RuleError
from .match import Match

__all__ = [
    "Pat", "PVar", "PConst", "PLit", "PCall", "PTuple", "PGetItem", "PMany", "PChoose", "AVar", "MAX_PARTS", "pvars",
    "avar", "attr", "const_pat", "call", "tuple_pat", "getitem", "many", "choose", "ops", "nn", "walk", "instantiate",
    "check_template", "variables", "copy_attributes", "name_literals", "expand", "variadic", "literal_matches",
]

MAX_PARTS = 64
"""the most fields a `many` tuple matches (DenseNet-201's dense blocks concatenate up to 49)."""

Number = int | float


class Pat:
    """Base class of pattern terms; arithmetic operators build calls of the IR's arithmetic ops."""

    def __getitem__(self, index: int) -> "PGetItem":
        return PGetItem(self, index)

    def __add__(self, other: "Pat | Number") -> "PCall":
        return call("add", self, other)

    def __radd__(self, other: Number) -> "PCall":
        return call("add", other, self)

    def __sub__(self, other: "Pat | Number") -> "PCall":
        return call("subtract", self, other)

    def __rsub__(self, other: Number) -> "PCall":
        return call("subtract", other, self)

    def __mul__(self, other: "Pat | Number") -> "PCall":
        return call("multiply", self, other)

    def __rmul__(self, other: Number) -> "PCall":
        return call("multiply", other, self)

    def __truediv__(self, other: "Pat | Number") -> "PCall":
        return call("divide", self, other)

    def __rtruediv__(self, other: Number) -> "PCall":
        return call("divide", other, self)

    def __matmul__(self, other: "Pat") -> "PCall":
        return call("nn.matmul", self, other)

    def __neg__(self) -> "PCall":
        return call("negative", self)


@dataclass(frozen=True)
class PVar(Pat):
    """Any value; every use of one name must be the same e-class."""

    name: str


@dataclass(frozen=True)
class PConst(Pat):
    """A constant tensor (its class holds a constant node); the value is `m.const(name)`."""

    name: str


@dataclass(frozen=True, eq=False)
class PLit(PConst):
    """A literal number (see the module docstring); `name` is given when its rule is compiled."""

    value: Number = 0

    def _key(self) -> tuple:
        return self.name, float(self.value), math.copysign(1.0, self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PLit) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


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


@dataclass(frozen=True)
class PChoose(Pat):
    """A template part: `then` where `test(match)` holds, else `otherwise` (right sides only)."""

    test: Callable[[Match], Any]
    then: Pat
    otherwise: Pat


@dataclass(frozen=True)
class PMany(Pat):
    """A tuple of `min_parts` to `MAX_PARTS` fields, each matching `part` with its own variables."""

    part: Pat
    min_parts: int = 2


def pvars(names: str) -> tuple[PVar, ...]:
    """`x, y = pvars("x y")`."""
    return tuple(PVar(n) for n in names.split())


def avar(name: str) -> AVar:
    return AVar(name)


def const_pat(name: str, value: Number | None = None) -> PConst:
    """A constant, its value `m.const(name)`; with `value`, a literal a guard can read by `name`."""
    return PConst(name) if value is None else replace(_pat(value), name=name)


def attr(bound: str, key: str) -> Callable[[Match], Any]:
    """A template attribute's value: attribute `key` of the `Attrs` bound to `bound` (`bind_attrs`)."""
    return lambda m: getattr(m[bound], key)


def _pat(arg: Pat | Number) -> Pat:
    """`arg` as a pattern: a number becomes a literal."""
    if isinstance(arg, Pat):
        return arg
    if isinstance(arg, (int, float, np.number)) and not isinstance(arg, bool):
        if math.isnan(arg):
            raise RuleError("a NaN literal matches nothing (NaN equals no value)")
        return PLit("", arg.item() if isinstance(arg, np.number) else arg)
    raise RuleError(f"a pattern operand must be a pattern or a number, got {type(arg).__name__} {arg!r}")


def call(op: str, *args: Pat | Number, bind_attrs: str | None = None, attrs_from: str | None = None,
         **attrs: Any) -> PCall:
    """A call pattern/template; the op must be registered and take `len(args)` inputs.

    `bind_attrs="a"` (left sides only) makes the call's whole `Attrs` available as `m["a"]`;
    `attrs_from="a"` (templates only) copies them, with `attrs` overriding single values:
    `call("nn.conv2d_bias_act", x, w, b, attrs_from="c", activation="none")`.
    """
    try:
        registered = get_op(op)
    except OpNotFoundError:
        raise _unknown_op(op, list_ops()) from None
    if len(args) != registered.num_inputs:
        raise RuleError(f"{op} takes {registered.num_inputs} input(s), the pattern gives {len(args)}")
    known = {f.name for f in registered.attr_fields}
    unknown = sorted(set(attrs) - known)
    if unknown:
        raise RuleError(f"{op}: unknown attribute(s) {unknown} in a pattern; known: {sorted(known)}")
    return PCall(op, tuple(_pat(a) for a in args), tuple(sorted(attrs.items())), bind_attrs, attrs_from)


def choose(test: Callable[[Match], Any], then: Pat | Number, otherwise: Pat | Number) -> PChoose:
    """A right side's part whose form the match decides: `then` where `test(m)` holds, else `otherwise`."""
    return PChoose(test, _pat(then), _pat(otherwise))


def _unknown_op(name: str, known: list[str]) -> RuleError:
    close = difflib.get_close_matches(name, known, n=3)
    return RuleError(f"unknown op {name!r} in a pattern" + (f"; did you mean {', '.join(close)}?" if close else ""))


def tuple_pat(*fields: Pat) -> PTuple:
    return PTuple(tuple(fields))


def getitem(tup: Pat, index: int) -> PGetItem:
    return PGetItem(tup, index)


def many(part: Pat, min_parts: int = 2) -> PMany:
    """A tuple of `min_parts` to `MAX_PARTS` fields, each matching `part` (see the module docstring)."""
    if not 1 <= min_parts <= MAX_PARTS:
        raise RuleError(f"many(): min_parts must be within 1..{MAX_PARTS}, got {min_parts}")
    return PMany(_pat(part), min_parts)


class _Ops:
    """Pattern builders named like the IR's ops: `ops.transpose(x, axes=...)`, `ops.nn.relu(x)`.

    Every registered op is reachable; an unknown name raises `RuleError` where the rule is written.
    """

    def __init__(self, prefix: str = "") -> None:
        self._prefix = prefix

    def __getattr__(self, name: str) -> "Callable[..., PCall] | _Ops":
        if name.startswith("_"):
            raise AttributeError(name)
        full = self._prefix + name
        names = list_ops()
        if full in names:
            def build(*args: Pat | Number, **attrs: Any) -> PCall:
                return call(full, *args, **attrs)
            build.__name__, build.__doc__ = name, f"A `{full}` call pattern (see `call`)."
            return build
        if any(n.startswith(full + ".") for n in names):
            return _Ops(full + ".")
        raise _unknown_op(full, names)

    def __dir__(self) -> list[str]:
        inside = (n[len(self._prefix):] for n in list_ops() if n.startswith(self._prefix))
        return sorted({n.split(".")[0] for n in inside})


ops = _Ops()
"""every op: `ops.add`, `ops.transpose`, `ops.nn.conv2d`, `ops.dyn.reshape`, ..."""
nn = _Ops("nn.")
"""the `nn.` ops: `nn.relu`, `nn.conv2d`, ..."""


# -- walking and rewriting pattern trees -----------------------------------------------------------

def walk(p: Pat) -> Iterator[Pat]:
    """Every sub-pattern, parents before children."""
    yield p
    for kid in _children(p):
        yield from walk(kid)


def _children(p: Pat) -> tuple[Pat, ...]:
    if isinstance(p, PCall):
        return p.args
    if isinstance(p, PTuple):
        return p.fields
    if isinstance(p, PGetItem):
        return (p.tup,)
    if isinstance(p, PMany):
        return (p.part,)
    if isinstance(p, PChoose):
        return p.then, p.otherwise
    return ()


def _rebuild(p: Pat, fn: Callable[[Pat], Pat]) -> Pat:
    """`p` with `fn` applied to every sub-pattern, children first."""
    if isinstance(p, PCall):
        p = replace(p, args=tuple(_rebuild(a, fn) for a in p.args))
    elif isinstance(p, PTuple):
        p = PTuple(tuple(_rebuild(f, fn) for f in p.fields))
    elif isinstance(p, PGetItem):
        p = PGetItem(_rebuild(p.tup, fn), p.index)
    elif isinstance(p, PMany):
        p = PMany(_rebuild(p.part, fn), p.min_parts)
    elif isinstance(p, PChoose):
        p = PChoose(p.test, _rebuild(p.then, fn), _rebuild(p.otherwise, fn))
    return fn(p)


def variables(p: Pat) -> set[str]:
    """Names of pattern and attribute variables in `p` (literals have none)."""
    out: set[str] = set()
    for q in walk(p):
        if isinstance(q, (PVar, PConst)) and not isinstance(q, PLit):
            out.add(q.name)
        elif isinstance(q, PCall):
            out.update(v.name for _, v in q.attrs if isinstance(v, AVar))
            out.update(n for n in (q.bind_attrs, q.attrs_from) if n)
    return out


def check_template(template: Pat, bound: set[str], where: str) -> None:
    """Raise when `template` uses a variable the left side does not bind."""
    unbound = sorted(variables(template) - bound)
    if unbound:
        raise RuleError(f"{where}: right side uses unbound {unbound}")


def name_literals(roots: tuple[Pat, ...]) -> tuple[Pat, ...]:
    """`roots` with every literal without a name named `#0`, `#1`, ... in order (each its own constant)."""
    counter = iter(range(1 << 30))

    def name(p: Pat) -> Pat:
        return replace(p, name=f"#{next(counter)}") if isinstance(p, PLit) and not p.name else p
    return tuple(_rebuild(r, name) for r in roots)


def _calls(p: Pat, inside: bool = False) -> Iterator[tuple[PCall, bool]]:
    """Every call in `p`, and whether it lies inside a `many`."""
    if isinstance(p, PCall):
        yield p, inside
    for kid in _children(p):
        yield from _calls(kid, inside or isinstance(p, PMany))


def copy_attributes(lhs: tuple[Pat, ...], rhs: tuple[Pat, ...]) -> tuple[tuple[Pat, ...], tuple[Pat, ...]]:
    """`lhs` and `rhs` with default attribute copying made explicit (see the module docstring): the
    left call a template call copies gets a `bind_attrs` name if it has none, the template call the
    matching `attrs_from`."""
    counts = Counter((c.op, inside) for r in lhs for c, inside in _calls(r))
    wanted = {(c.op, inside) for t in rhs for c, inside in _calls(t)
              if c.attrs_from is None and counts[(c.op, inside)] == 1}
    names: dict[tuple[str, bool], str] = {}

    def bind(p: Pat, inside: bool) -> Pat:
        if isinstance(p, PCall) and (p.op, inside) in wanted:
            names[(p.op, inside)] = p.bind_attrs or f"@{p.op}"
            p = replace(p, bind_attrs=names[(p.op, inside)])
        if isinstance(p, PCall):
            return replace(p, args=tuple(bind(a, inside) for a in p.args))
        if isinstance(p, PMany):
            return PMany(bind(p.part, True), p.min_parts)
        if isinstance(p, PTuple):
            return PTuple(tuple(bind(f, inside) for f in p.fields))
        if isinstance(p, PGetItem):
            return PGetItem(bind(p.tup, inside), p.index)
        return p

    def copy(p: Pat, inside: bool) -> Pat:
        if isinstance(p, PCall):
            source = names.get((p.op, inside)) if p.attrs_from is None else p.attrs_from
            return replace(p, args=tuple(copy(a, inside) for a in p.args), attrs_from=source)
        if isinstance(p, PMany):
            return PMany(copy(p.part, True), p.min_parts)
        if isinstance(p, PTuple):
            return PTuple(tuple(copy(f, inside) for f in p.fields))
        if isinstance(p, PGetItem):
            return PGetItem(copy(p.tup, inside), p.index)
        if isinstance(p, PChoose):
            return PChoose(p.test, copy(p.then, inside), copy(p.otherwise, inside))
        return p

    lhs = tuple(bind(r, False) for r in lhs)
    return lhs, tuple(copy(t, False) for t in rhs)


# -- variadic tuples ---------------------------------------------------------------------------------

def variadic(roots: tuple[Pat, ...]) -> int | None:
    """The fewest fields of the one `many` in `roots`, or None without one (two raise `RuleError`)."""
    found = [q for r in roots for q in walk(r) if isinstance(q, PMany)]
    if len(found) > 1:
        raise RuleError(f"a left side may hold one many() tuple, this one holds {len(found)}")
    if found and any(isinstance(q, PMany) for q in walk(found[0].part)):
        raise RuleError("many() cannot nest")
    return found[0].min_parts if found else None


def _suffixed(p: Pat, suffix: str) -> Pat:
    """`p` with every variable name (and attribute binding) followed by `suffix`."""
    def rename(q: Pat) -> Pat:
        if isinstance(q, (PVar, PConst)) and q.name:
            return replace(q, name=q.name + suffix)
        if isinstance(q, PCall):
            attrs = tuple((k, AVar(v.name + suffix) if isinstance(v, AVar) else v) for k, v in q.attrs)
            return replace(q, attrs=attrs, bind_attrs=q.bind_attrs and q.bind_attrs + suffix,
                           attrs_from=q.attrs_from and q.attrs_from + suffix)
        return q
    return _rebuild(p, rename)


def expand(p: Pat, parts: int) -> Pat:
    """`p` with its `many` tuple spelled out as `parts` fields, named `.0`, `.1`, ..."""
    def spell(q: Pat) -> Pat:
        return PTuple(tuple(_suffixed(q.part, f".{i}") for i in range(parts))) if isinstance(q, PMany) else q
    return _rebuild(p, spell)


# -- literals ----------------------------------------------------------------------------------------

def literal_matches(data: np.ndarray, value: Number) -> bool:
    """Whether every element of `data` equals `value` exactly, a float zero's sign included."""
    data = np.asarray(data)
    if data.size and data.reshape(-1)[0] != value or not np.all(data == value):
        return False
    if value != 0 or not is_float(data.dtype.name):
        return True
    return bool(np.all(np.signbit(data.astype(np.float64)) == (math.copysign(1.0, value) < 0)))


# -- building right sides ----------------------------------------------------------------------------

def _literal_constant(value: Number, dtype: str) -> Constant | None:
    """`value` as a rank-0 constant of `dtype`, or None when `dtype` cannot hold it exactly."""
    try:
        data = np.asarray(value, numpy_dtype(dtype))
    except (OverflowError, ValueError):
        return None
    return Constant(data) if literal_matches(data, value) else None


def instantiate(template: Pat, m: Match, root: int = 0) -> Expr | None:
    """The IR expression of `template` (rewriting root `root`) under `m`, bound leaves as `m.expr(name)`
    placeholders; None when a literal does not fit the root's dtype."""
    if m.parts is not None:
        template = expand(template, m.parts)
    dtype = getattr(m.root_type(root), "dtype", None) if any(isinstance(q, PLit) for q in walk(template)) else None

    def attr_value(v: Any) -> Any:
        if isinstance(v, AVar):
            return m.values[v.name]
        if callable(v):
            return v(m)
        return v

    def build(p: Pat) -> Expr | None:
        if isinstance(p, PLit):
            return _literal_constant(p.value, dtype) if dtype else None
        if isinstance(p, (PVar, PConst)):
            return m.expr(p.name)
        if isinstance(p, PChoose):
            return build(p.then if p.test(m) else p.otherwise)
        parts = [build(q) for q in _children(p)]
        if any(q is None for q in parts):
            return None
        if isinstance(p, PCall):
            attrs = dict(m.values[p.attrs_from]) if p.attrs_from else {}
            attrs.update((k, attr_value(v)) for k, v in p.attrs)
            return make_call(p.op, parts, attrs)
        if isinstance(p, PTuple):
            return Tuple(parts)
        if isinstance(p, PGetItem):
            return TupleGetItem(parts[0], p.index)
        raise RuleError(f"cannot build {p!r} in a template")

    return build(template)
