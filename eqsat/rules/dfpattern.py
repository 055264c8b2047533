"""Dataflow patterns (`ir.dataflow_pattern`) compiled into e-matching queries.

A pattern becomes one or more conjunctive queries (alternatives multiply out); what a query
cannot say is checked in Python on each row; what no single match can decide is left to
extraction. A query matches e-nodes, so every sub-pattern may meet any equivalent form of its
class, not only the form that was lowered. The semantics come from the pattern walk's
table (`ir.dataflow_pattern.semantics`), never restated here: argument orders (`argument_orders`),
re-association (`reassociations`), attribute and type tests (`attr_mismatch`, the `TypeCheck`
entries of `KINDS`), and the walk itself on lowered leaves and on kinds with no query here, so
a kind added to `KINDS` compiles with no code here. Per pattern kind:

| pattern                              | in the query                            | checked in Python per match    |
|--------------------------------------|-----------------------------------------|--------------------------------|
| `wildcard()`                         | a class variable; at the root, one query per kind of node | -            |
| redirected `wildcard()`, no cycle    | its target                              | -                              |
| `is_var(name)`                       | a `Var` node                            | the pattern walk on the variable |
| `is_constant()`                      | a `Const` node                          | -                              |
| `is_expr(e)`                         | `e`'s structure, its leaves by identity | call attributes equal `e`'s    |
| `is_op(o)(args)`, `is_op(o)(None)`   | a `Call{n}` node of op `o`              | -                              |
| callee `wildcard()` or alternatives  | any op at every arity, or a function call | op or function attributes    |
| `is_op("add")` / `is_op("multiply")` | also with the two arguments swapped     | -                              |
| `divide` / `multiply` association    | TVM's re-associated forms too           | -                              |
| `FunctionPattern`                    | an (atomic) function node               | the pattern walk on it         |
| `is_tuple`, `is_tuple_get_item`      | the node and its children               | -                              |
| `is_if`, `is_let`                    | the node and its children               | -                              |
| alternatives, `optional`             | one query per alternative               | -                              |
| `has_attr`                           | -                                       | call, op or function attributes |
| `has_type`, `has_dtype`, `has_shape`, any `TypeCheck` kind | -                 | the class's type (the analysis) |
| `dominates(parent, path, child)`     | the child                               | parent and path: the region search of `dominator`, over every form of every class |
| any other kind in `KINDS`            | a class variable                        | the pattern walk on the class; its sub-patterns stay out of the query |

A recursive pattern (a wildcard redirected, through `redirect_to`, to a pattern containing it)
is refused with a `PatternCompileError`: a query is a finite conjunction of atoms, and a
recursive pattern stands for unboundedly many (one per trip around its cycle). Unrolling it to a
fixed depth would miss longer chains the direct matcher finds, and the rule is that both paths
agree wherever both accept a pattern; and where a class holds a node over itself (once `cast(x)`
is merged with `x`), a walk of the recursion need not end. Use `rewrite` or `partition` on the IR.

Decided at extraction, not per match (the answer depends on which users the extracted program
keeps): escaping intermediates (an inner node of a callback's match used outside it) and the
dominator's post-dominance (the child post-dominates the parent). A callback's result carries
the match's inner classes and the dominator's parent and path classes as an extraction
constraint, a closed region (`ClosedRegion`), instead (see `callback`); `find_matches` decides
post-dominance in the lowered program.

Differences from the direct matcher, all from the e-graph holding values rather than nodes:
structurally equal sub-graphs are one class (lowering hash-conses them), so a pattern cannot tell
twins apart (e.g. a dominator whose parent is a wildcard accepts `add(f(x), f(x))`, where the
direct matcher binds the parent to the first twin and fails on the second); leaves are classes,
and a callback sees a placeholder for a leaf class that is neither a constant nor a variable.
On an unsaturated e-graph without such twins the matches are the direct matcher's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ir import Attrs, Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, Var, get_op
from ir.dataflow_pattern import (
    AltPattern, AttrPattern, CallPattern, ConstantPattern, DFPattern, DominatorPattern, ExprPattern,
    FunctionPattern, IfPattern, LetPattern, TupleGetItemPattern, TuplePattern, VarPattern, WildcardPattern,
    is_recursive, match,
)
from ir.dataflow_pattern.semantics import (
    KINDS, MISSING, TypeCheck, argument_orders, attr_lookup, attr_mismatch, reassociations,
)
from ir.dataflow_pattern.walk import Walker

from ..egraph.egraph import EGraph
from ..egraph.pattern_graph import snapshot_forms
from ..egraph.query import Atom, QVar, Query, is_plain_literal
from ..egraph.terms import MAX_CALL_ARITY, Handle, Kind, Term
from ..errors import PatternCompileError

__all__ = ["CompiledDFPattern", "compile_dfpattern"]

Check = Callable[[EGraph, dict], bool]


@dataclass
class _Variant:
    """One conjunctive query under construction (copied whenever the pattern branches)."""

    atoms: list[Atom] = field(default_factory=list)
    count: int = 0
    bound: dict[DFPattern, QVar] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    dominators: list[tuple[DominatorPattern, QVar]] = field(default_factory=list)

    def copy(self) -> "_Variant":
        return _Variant(list(self.atoms), self.count, dict(self.bound), list(self.checks), list(self.dominators))

    def fresh(self, sort: str = "T") -> QVar:
        self.count += 1
        return QVar(f"v{self.count}", sort)  # type: ignore[arg-type]

    def atom(self, kind: Kind, payload: tuple, children: tuple[QVar, ...], out: QVar | None = None) -> QVar:
        out = out or self.fresh()
        self.atoms.append(Atom(kind, payload, children, out))
        return out

    def defining(self, var: QVar) -> list[Atom]:
        return [a for a in self.atoms if a.out == var]


Emitted = list[tuple[_Variant, QVar]]


class _Compiler:
    """Turns one pattern into query variants for one e-graph (names of its variables and functions)."""

    def __init__(self, egraph: EGraph):
        self.egraph = egraph

    # -- dispatch -------------------------------------------------------------------------------
    def emit(self, p: DFPattern, v: _Variant) -> Emitted:
        if p in v.bound:
            return [(v, v.bound[p])]
        out = []
        for v2, var in self._emit_new(p, v):
            v2.bound[p] = var
            out.append((v2, var))
        return out

    def emit_all(self, patterns: tuple[DFPattern, ...], v: _Variant) -> list[tuple[_Variant, list[QVar]]]:
        """All ways to emit `patterns` in order (a product over their alternatives)."""
        partial: list[tuple[_Variant, list[QVar]]] = [(v, [])]
        for p in patterns:
            partial = [(v3, vars_ + [var]) for v2, vars_ in partial for v3, var in self.emit(p, v2.copy())]
        return partial

    def _emit_new(self, p: DFPattern, v: _Variant) -> Emitted:
        kind = KINDS.get(type(p))
        if isinstance(kind, TypeCheck):  # has_type, has_dtype, has_shape, ...: the class's type is tested
            out = self.emit(p.pattern, v)
            for v2, var in out:
                v2.checks.append(_type_check(kind, p, var))
            return out
        if isinstance(p, WildcardPattern):
            return [(v, v.fresh())] if p.redirect is None else self.emit(p.redirect, v)
        if isinstance(p, (VarPattern, FunctionPattern)):
            return self._leaf(p, v)
        if isinstance(p, ConstantPattern):
            return [(v, v.atom(Kind.CONST, (v.fresh("String"),), ()))]
        if isinstance(p, ExprPattern):
            return self._expr(p.expr, v)
        if isinstance(p, CallPattern):
            return self._call(p, v, associate=True)
        if isinstance(p, TuplePattern):
            return self._tuple(p, v)
        if isinstance(p, TupleGetItemPattern):
            index: Any = v.fresh("i64") if p.index is None else p.index
            return [(v2, v2.atom(Kind.GETITEM, (index,), (t,))) for v2, t in self.emit(p.tuple, v)]
        if isinstance(p, IfPattern):
            return [(v2, v2.atom(Kind.IF, (), tuple(kids)))
                    for v2, kids in self.emit_all((p.cond, p.true_branch, p.false_branch), v)]
        if isinstance(p, LetPattern):
            return [(v2, v2.atom(Kind.LET, (), tuple(kids))) for v2, kids in self.emit_all((p.var, p.value, p.body), v)]
        if isinstance(p, AltPattern):
            return self.emit(p.left, v.copy()) + self.emit(p.right, v.copy())
        if isinstance(p, AttrPattern):
            return self._attr(p, v)
        if isinstance(p, DominatorPattern):
            out = self.emit(p.child, v)
            for v2, var in out:
                v2.dominators.append((p, var))
            return out
        if kind is not None:  # a kind with no query of its own: any class, where the pattern walk matches
            var = v.fresh()
            v.checks.append(lambda eg, vals: Walker(snapshot_forms(eg), record=False).visit(
                p, eg.canonical(vals[var.name])) is None)
            return [(v, var)]
        raise PatternCompileError(f"cannot compile a {type(p).__name__} into an e-matching query")

    # -- leaves and expressions -----------------------------------------------------------------
    def _literal(self, v: _Variant, value: str) -> Any:
        """`value` as a query literal, or (when it cannot be written in egglog) a checked variable."""
        if is_plain_literal(value):
            return value
        var = v.fresh("String")
        v.checks.append(lambda eg, vals: vals[var.name] == value)
        return var

    def _expr(self, e: Expr, v: _Variant) -> Emitted:
        """An expression matched by structure; graph variables and constants by identity of value."""
        eg = self.egraph
        if isinstance(e, Var):
            name = eg.variable_name(e)
            return [] if name is None else [(v, v.atom(Kind.VAR, (self._literal(v, name),), ()))]
        if isinstance(e, Constant):
            return [(v, v.atom(Kind.CONST, (e.digest,), ()))]
        if isinstance(e, Function):
            key = eg.function_key(e)
            return [] if key is None else [(v, v.atom(Kind.FUNC, (self._literal(v, key),), ()))]
        if isinstance(e, Call) and isinstance(e.op, Op):
            attrs, wanted = v.fresh("String"), e.attrs
            out = []
            for v2, kids in self._exprs(e.args, v):
                v2.checks.append(lambda eg_, vals: eg_.attrs[vals[attrs.name]] == wanted)
                out.append((v2, v2.atom(Kind.CALL, (e.op.name, attrs), tuple(kids))))
            return out
        if isinstance(e, Call):
            return [(v3, v3.atom(Kind.APPLY, (), (f, lst))) for v2, f in self._expr(e.op, v)
                    for v3, lst in self._list_of(self._exprs(e.args, v2))]
        if isinstance(e, Tuple):
            return [(v3, v3.atom(Kind.TUPLE, (), (lst,))) for v3, lst in self._list_of(self._exprs(e.fields, v))]
        if isinstance(e, TupleGetItem):
            return [(v2, v2.atom(Kind.GETITEM, (e.index,), (t,))) for v2, t in self._expr(e.tuple_value, v)]
        if isinstance(e, If):
            return [(v2, v2.atom(Kind.IF, (), tuple(k))) for v2, k in
                    self._exprs((e.cond, e.true_branch, e.false_branch), v)]
        if isinstance(e, Let):
            return [(v2, v2.atom(Kind.LET, (), tuple(k))) for v2, k in self._exprs((e.var, e.value, e.body), v)]
        return []  # an op used as a value never appears in the e-graph

    def _exprs(self, exprs, v: _Variant) -> list[tuple[_Variant, list[QVar]]]:
        partial: list[tuple[_Variant, list[QVar]]] = [(v, [])]
        for e in exprs:
            partial = [(v3, vs + [var]) for v2, vs in partial for v3, var in self._expr(e, v2.copy())]
        return partial

    @staticmethod
    def _list_of(items: list[tuple[_Variant, list[QVar]]]) -> Emitted:
        out = []
        for v, vars_ in items:
            tail = v.atom(Kind.NIL, (), ())
            for var in reversed(vars_):
                tail = v.atom(Kind.CONS, (), (var, tail))
            out.append((v, tail))
        return out

    # -- calls ----------------------------------------------------------------------------------
    def _callees(self, op: DFPattern) -> list[tuple[str, Any, list]]:
        """("op", name or None, op-attribute constraints) or ("value", pattern of a function value)."""
        if isinstance(op, ExprPattern) and isinstance(op.expr, Op):
            return [("op", op.expr.name, [])]
        if isinstance(op, WildcardPattern) and op.redirect is not None:
            return self._callees(op.redirect)
        if isinstance(op, WildcardPattern):
            return [("op", None, []), ("value", op, [])]
        if isinstance(op, AltPattern):
            return self._callees(op.left) + self._callees(op.right)
        if isinstance(op, AttrPattern):
            out = []
            for kind, what, attrs in self._callees(op.pattern):
                if kind == "op":
                    out.append((kind, what, attrs + [op.attrs]))
                else:
                    out.append((kind, AttrPattern(what, op.attrs), attrs))
            return out
        return [("value", op, [])]

    def _call(self, p: CallPattern, v: _Variant, associate: bool) -> Emitted:
        out: Emitted = []
        for kind, what, op_attrs in self._callees(p.op):
            if kind == "op":
                out += self._op_call(p, what, op_attrs, v.copy())
            else:
                out += self._function_call(p, what, v.copy())
        if associate:
            for alt in reassociations(p):
                out += self._call(alt, v.copy(), associate=False)
        return out

    def _op_call(self, p: CallPattern, name: str | None, op_attrs: list[Attrs], v: _Variant) -> Emitted:
        if p.args is not None:
            arities = [len(p.args)]
        elif name is not None:
            arities = [get_op(name).num_inputs]
        else:
            arities = list(range(MAX_CALL_ARITY + 1))
        out: Emitted = []
        for n in arities:
            if name is not None and get_op(name).num_inputs != n:
                continue
            if name is not None and any(attr_mismatch(w, attr_lookup(get_op(name))) is not None for w in op_attrs):
                continue
            for args in argument_orders(p):  # (b, a) against the arguments in order, for add and multiply
                if args is None:
                    branch = v.copy()
                    branches = [(branch, [branch.fresh() for _ in range(n)])]
                else:
                    branches = self.emit_all(args, v.copy())
                for v2, kids in branches:
                    op: Any = name
                    if name is None:
                        op = v2.fresh("String")
                        v2.checks.extend(_op_attr_check(op, w) for w in op_attrs)
                    out.append((v2, v2.atom(Kind.CALL, (op, v2.fresh("String")), tuple(kids))))
        return out

    def _function_call(self, p: CallPattern, callee: DFPattern, v: _Variant) -> Emitted:
        out: Emitted = []
        for v2, f in self.emit(callee, v):
            if p.args is None:
                out.append((v2, v2.atom(Kind.APPLY, (), (f, v2.fresh()))))
                continue
            for v3, lst in self._list_of(self.emit_all(p.args, v2)):
                out.append((v3, v3.atom(Kind.APPLY, (), (f, lst))))
        return out

    @staticmethod
    def _leaf(p: VarPattern | FunctionPattern, v: _Variant) -> Emitted:
        """A variable or (atomic) function node, which the pattern walk checks on the lowered leaf."""
        key = v.fresh("String")
        kind, table = (Kind.VAR, "variables") if isinstance(p, VarPattern) else (Kind.FUNC, "functions")
        v.checks.append(lambda eg, vals: match(p, getattr(eg, table)[vals[key.name]]))
        return [(v, v.atom(kind, (key,), ()))]

    def _tuple(self, p: TuplePattern, v: _Variant) -> Emitted:
        if p.fields is None:
            return [(v, v.atom(Kind.TUPLE, (), (v.fresh(),)))]
        return [(v3, v3.atom(Kind.TUPLE, (), (lst,))) for v3, lst in self._list_of(self.emit_all(p.fields, v))]

    # -- properties -----------------------------------------------------------------------------
    def _attr(self, p: AttrPattern, v: _Variant) -> Emitted:
        """Attributes of whatever node the inner pattern matched: a call, or a function."""
        out: Emitted = []
        for v2, var in self.emit(p.pattern, v):
            if v2.defining(var):
                out += self._attr_on(v2, var, p.attrs)
                continue
            # a bare wildcard: the class must hold a call (any op, any arity) or a function
            for n in range(MAX_CALL_ARITY + 1):
                v3 = v2.copy()
                v3.atom(Kind.CALL, (v3.fresh("String"), v3.fresh("String")), tuple(v3.fresh() for _ in range(n)), var)
                out += self._attr_on(v3, var, p.attrs)
            v3 = v2.copy()
            v3.atom(Kind.FUNC, (v3.fresh("String"),), (), var)
            out += self._attr_on(v3, var, p.attrs)
        return out

    @staticmethod
    def _attr_on(v: _Variant, var: QVar, wanted: Attrs) -> Emitted:
        atom = v.defining(var)[-1]
        if atom.kind is Kind.CALL:
            attrs = atom.payload[1]
            v.checks.append(lambda eg, vals: attr_mismatch(wanted, lambda k: eg.attrs[vals[attrs.name]].get(k, MISSING))
                            is None)
            return [(v, var)]
        if atom.kind is Kind.FUNC:
            key = atom.payload[0]

            def check(eg: EGraph, vals: dict) -> bool:
                fn = eg.functions[vals[key.name] if isinstance(key, QVar) else key]
                return attr_mismatch(wanted, attr_lookup(fn)) is None
            v.checks.append(check)
            return [(v, var)]
        return []  # variables, constants, tuples, ... carry no attributes: never a match


def _type_check(kind: TypeCheck, p: DFPattern, var: QVar) -> Check:
    """The kind's type test on the class `var` matched."""
    return lambda eg, vals: kind.test(p, eg.type_of(vals[var.name])) is None


def _op_attr_check(op: QVar, wanted: Attrs) -> Check:
    return lambda eg, vals: attr_mismatch(wanted, attr_lookup(get_op(vals[op.name]))) is None


@dataclass(frozen=True)
class CompiledDFPattern:
    """One query variant of a pattern: the query, Python checks, and how to rebuild the match in IR."""

    pattern: DFPattern
    query: Query
    root: QVar
    bound: tuple[tuple[DFPattern, QVar], ...]
    checks: tuple[Check, ...]
    dominators: tuple[tuple[DominatorPattern, QVar], ...]
    """dominator sub-patterns and the variable their child matched (decided by `rules.dominator`)."""

    def values(self, row: tuple) -> dict[str, Any]:
        return {c.name: v for c, v in zip(self.query.columns, row)}

    def accepts(self, egraph: EGraph, vals: dict[str, Any]) -> bool:
        """The Python-side checks of one row (attributes, names, types); dominators are not included."""
        return all(check(egraph, vals) for check in self.checks)

    def enodes(self, egraph: EGraph, vals: dict[str, Any]) -> dict[QVar, Term]:
        """The matched e-node of every atom's output variable (children as canonical handles)."""
        def value(arg: Any) -> Any:
            return vals[arg.name] if isinstance(arg, QVar) else arg
        return {a.out: Term(a.kind, tuple(value(p) for p in a.payload),
                            tuple(egraph.canonical(vals[c.name]) for c in a.children))
                for a in self.query.atoms}

    def interior(self, egraph: EGraph, vals: dict[str, Any]) -> set[Handle]:
        """Inner classes of the match: classes of its computed nodes other than the root."""
        inner = {vals[a.out.name] for a in self.query.atoms
                 if a.kind in (Kind.CALL, Kind.APPLY, Kind.TUPLE, Kind.GETITEM, Kind.IF, Kind.LET)}
        inner.discard(vals[self.root.name])
        return {egraph.canonical(h) for h in inner}


_VALUE_KINDS = (Kind.VAR, Kind.CONST, Kind.FUNC, Kind.APPLY, Kind.TUPLE, Kind.GETITEM, Kind.IF, Kind.LET)


def _anchored(emitted: Emitted) -> Emitted:
    """Variants whose root is a bare wildcard (e.g. `has_dtype("float32")`) get one variant per kind
    of IR value the root class can hold, so that the query has an atom to start from."""
    out: Emitted = []
    for v, root in emitted:
        if v.defining(root):
            out.append((v, root))
            continue
        shapes = [(Kind.CALL, n) for n in range(MAX_CALL_ARITY + 1)] + [(k, None) for k in _VALUE_KINDS]
        for kind, arity in shapes:
            v2 = v.copy()
            if kind is Kind.CALL:
                payload, kids = (v2.fresh("String"), v2.fresh("String")), tuple(v2.fresh() for _ in range(arity))
            elif kind in (Kind.VAR, Kind.CONST, Kind.FUNC):
                payload, kids = (v2.fresh("String"),), ()
            elif kind is Kind.GETITEM:
                payload, kids = (v2.fresh("i64"),), (v2.fresh(),)
            else:
                payload, kids = (), tuple(v2.fresh() for _ in range({Kind.APPLY: 2, Kind.TUPLE: 1}.get(kind, 3)))
            v2.atom(kind, payload, kids, root)
            out.append((v2, root))
    return out


def compile_dfpattern(pattern: DFPattern, egraph: EGraph) -> list[CompiledDFPattern]:
    """The query variants of `pattern` for `egraph` (empty when it can never match there)."""
    if not isinstance(pattern, DFPattern):
        raise PatternCompileError(f"expected a dataflow pattern, got {type(pattern).__name__} {pattern!r}")
    if is_recursive(pattern):
        text = "; ".join(repr(pattern).splitlines())
        raise PatternCompileError(f"recursive patterns (redirect_to) match through the direct matcher, rewrite() "
                                  f"and partition(); the e-graph path cannot compile a cyclic pattern: {text}")
    out = []
    for v, root in _anchored(_Compiler(egraph).emit(pattern, _Variant())):
        bound = tuple((p, var) for p, var in v.bound.items() if var.sort == "T")
        referenced = {var for a in v.atoms
                      for var in (a.out, *a.children, *(x for x in a.payload if isinstance(x, QVar)))}
        columns = tuple(sorted(referenced, key=lambda q: int(q.name[1:])))
        out.append(CompiledDFPattern(pattern, Query(tuple(v.atoms), columns), root, bound, tuple(v.checks),
                                     tuple(v.dominators)))
    return out
