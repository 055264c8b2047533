"""The e-graph as Python sees it: handles, the type of every e-class, and the IR side tables.

`EGraph` wraps the egglog backend. Python adds every e-node (lowering and rule results alike),
so it knows each node's type when the node is made: the type relation of the op, applied to the
types of the child classes. That table is the shape/dtype analysis; `union` refuses to merge
classes whose types differ, so an ill-typed rewrite never enters the e-graph.
"""

from __future__ import annotations

import enum
import hashlib
from typing import Iterable, Mapping

from ir import Attrs, Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var, get_op
from ir.op.registry import Op
from ir.structural import structural_equal, structural_hash
from ir.type_infer import types_compatible
from ir.types import TupleType, Type

from ..errors import LoweringError
from .backend import Backend, Frozen
from .terms import MAX_CALL_ARITY, Handle, Kind, Term
from .view import EGraphView, Exclusion

__all__ = ["EGraph", "Merge", "constant_key", "attrs_key", "build_node"]


class Merge(enum.Enum):
    """What `EGraph.union` did."""

    MERGED = "merged"                  # queued: the classes were different
    ALREADY_EQUAL = "already_equal"    # same class as of the last refresh; nothing to do
    TYPE_MISMATCH = "type_mismatch"    # refused: the classes have different types


def constant_key(c: Constant) -> str:
    """Content digest of a constant (dtype, shape and bytes): equal tensors share one e-node."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{c.dtype}{c.shape}".encode())
    h.update(c.data.tobytes())
    return h.hexdigest()


def attrs_key(attrs: Attrs) -> str:
    """The canonical text of a call's attributes (schema order, as `Call` normalizes them)."""
    return repr(tuple(attrs.items()))


class EGraph:
    """An egglog e-graph of IR programs plus the Python tables that give its nodes meaning."""

    def __init__(self) -> None:
        self._backend = Backend()
        self._types: list[Type] = []
        self._terms: list[Term] = []
        self._memo: dict[Term, Handle] = {}
        self._pending_terms: list[tuple[Handle, Term]] = []
        self._pending_unions: list[tuple[Handle, Handle]] = []
        self._canon: dict[Handle, Handle] = {}
        self.variables: dict[str, Var] = {}
        self._var_names: dict[int, str] = {}
        self.constants: dict[str, Constant] = {}
        self.functions: dict[str, Function] = {}
        self.attrs: dict[str, Attrs] = {}
        self._exclusions: list[tuple[Term, frozenset[Handle]]] = []
        self._rules: dict[int, tuple[object, str, list[tuple[str, object]]]] = {}
        self._reps: dict[Handle, object] = {}
        self._rep_class: dict[int, Handle] = {}
        self.snapshot_cache: dict[str, object] = {}
        """values derived from the current e-graph (e.g. a graph index); cleared by every refresh."""
        self.roots: list[Handle] = []
        """classes of the program's outputs (set by `lower`); dominator checks see the graph below them."""

    @property
    def backend(self) -> Backend:
        return self._backend

    # -- classes and types --------------------------------------------------------------------
    def type_of(self, handle: Handle) -> Type:
        """The type of the e-class named by `handle` (the same for every handle of the class)."""
        return self._types[handle]

    def canonical(self, handle: Handle) -> Handle:
        """The smallest handle of the class, as of the last `refresh`."""
        return self._canon.get(handle, handle)

    # -- adding nodes --------------------------------------------------------------------------
    def add(self, term: Term, ty: Type) -> Handle:
        """The class of e-node `term` (of type `ty`); new nodes wait for `flush`."""
        term = Term(term.kind, term.payload, tuple(self.canonical(c) for c in term.children))
        known = self._memo.get(term)
        if known is not None:
            return known
        handle = len(self._types)
        self._types.append(ty)
        self._terms.append(term)
        self._memo[term] = handle
        self._pending_terms.append((handle, term))
        return handle

    def union(self, a: Handle, b: Handle) -> Merge:
        """Merge two classes if their types agree (queued until `flush`)."""
        if not types_compatible(self._types[a], self._types[b]):
            return Merge.TYPE_MISMATCH
        if self.canonical(a) == self.canonical(b):
            return Merge.ALREADY_EQUAL
        self._pending_unions.append((a, b))
        return Merge.MERGED

    def flush(self) -> bool:
        """Send pending nodes and unions to egglog (one batch); True if the e-graph changed."""
        terms, unions = self._pending_terms, self._pending_unions
        self._pending_terms, self._pending_unions = [], []
        return self._backend.insert(terms, unions)

    def add_expr(self, expr: Expr, leaves: Mapping[int, Handle] | None = None) -> Handle:
        """Lower a typed IR expression; nodes whose `id` is in `leaves` stand for existing classes.

        Inner functions are atomic (see `terms`). Every node must have its type inferred.
        """
        leaves = dict(leaves or {})
        done: dict[int, Handle] = dict(leaves)
        for node in _post_order(expr, leaves):
            done[id(node)] = self._lower_node(node, done)
        return done[id(expr)]

    def _lower_node(self, node: Expr, done: Mapping[int, Handle]) -> Handle:
        if not node.type_inferred:
            raise LoweringError(f"{node!r} has no type; run ir.infer_type on the program before lowering")
        ty = node.checked_type
        if isinstance(node, Var):
            return self.add(Term(Kind.VAR, (self._var_name(node),)), ty)
        if isinstance(node, Constant):
            key = constant_key(node)
            self.constants.setdefault(key, node)
            return self.add(Term(Kind.CONST, (key,)), ty)
        if isinstance(node, Function):
            return self.add(Term(Kind.FUNC, (self._function_key(node),)), ty)
        if isinstance(node, Call):
            args = [done[id(a)] for a in node.args]
            if isinstance(node.op, Op):
                if len(args) > MAX_CALL_ARITY:
                    raise LoweringError(f"{node.op.name} has {len(args)} inputs; the e-graph supports at most "
                                        f"{MAX_CALL_ARITY}")
                key = attrs_key(node.attrs)
                self.attrs.setdefault(key, node.attrs)
                return self.add(Term(Kind.CALL, (node.op.name, key), tuple(args)), ty)
            if len(node.attrs):
                raise LoweringError(f"a call of a function value carries attributes {dict(node.attrs)}; "
                                    "only op calls may have attributes")
            return self.add(Term(Kind.APPLY, (), (done[id(node.op)], self.add_list(args))), ty)
        if isinstance(node, Tuple):
            return self.add(Term(Kind.TUPLE, (), (self.add_list([done[id(f)] for f in node.fields]),)), ty)
        if isinstance(node, TupleGetItem):
            return self.add(Term(Kind.GETITEM, (node.index,), (done[id(node.tuple_value)],)), ty)
        if isinstance(node, If):
            kids = (node.cond, node.true_branch, node.false_branch)
            return self.add(Term(Kind.IF, (), tuple(done[id(k)] for k in kids)), ty)
        if isinstance(node, Let):
            kids = (node.var, node.value, node.body)
            return self.add(Term(Kind.LET, (), tuple(done[id(k)] for k in kids)), ty)
        raise LoweringError(f"cannot lower a {type(node).__name__} node ({node!r}) into the e-graph")

    def add_list(self, items: list[Handle]) -> Handle:
        """The class of the argument/field list `items` (a cons list)."""
        tail = self.add(Term(Kind.NIL), TupleType([]))
        for h in reversed(items):
            tail = self.add(Term(Kind.CONS, (), (h, tail)), TupleType([self._types[h], *self._types[tail].fields]))
        return tail

    def _var_name(self, var: Var) -> str:
        name = self._var_names.get(id(var))
        if name is None:
            name, k = var.name_hint, 0
            while name in self.variables:
                k += 1
                name = f"{var.name_hint}#{k}"
            self.variables[name] = var
            self._var_names[id(var)] = name
        return name

    def _function_key(self, fn: Function) -> str:
        base = f"{structural_hash(fn, map_free_vars=True):016x}"
        key, k = base, 0
        while key in self.functions and not structural_equal(self.functions[key], fn, map_free_vars=True):
            k += 1
            key = f"{base}-{k}"
        self.functions.setdefault(key, fn)
        return key

    def variable_name(self, var: Var) -> str | None:
        """The e-graph's name of a lowered variable (None when `var` was never lowered)."""
        return self._var_names.get(id(var))

    def function_key(self, fn: Function) -> str | None:
        """The key of a lowered function structurally equal to `fn` (None when there is none)."""
        base = f"{structural_hash(fn, map_free_vars=True):016x}"
        return next((k for k, f in self.functions.items() if k.split("-")[0] == base
                     and structural_equal(f, fn, map_free_vars=True)), None)

    # -- constraints ---------------------------------------------------------------------------
    def exclude(self, node: Handle, interior: Iterable[Handle]) -> None:
        """Record that the e-node added as `node` replaces a region whose `interior` classes must not
        be used by any other extracted node (an escaping-intermediate constraint)."""
        self._exclusions.append((self._terms[node], frozenset(interior)))

    # -- rules --------------------------------------------------------------------------------
    def register_rule(self, rule) -> tuple[str, list[tuple[str, object]]]:
        """Install a rule's queries once; returns its backend key and (query name, query) pairs."""
        entry = self._rules.get(id(rule))
        if entry is None:
            key = f"rule{len(self._rules)}"
            queries = [(f"{key}_{i}", mq) for i, mq in enumerate(rule.queries(self))]
            self._backend.add_rule_queries(key, {name: mq.query for name, mq in queries})
            entry = self._rules[id(rule)] = (rule, key, queries)
        return entry[1], entry[2]

    # -- reading --------------------------------------------------------------------------------
    def refresh(self, queries: Iterable[str] = (), read_terms: bool = False) -> Frozen:
        """Read egglog's database (flushing first): class ids, and optionally nodes and matches."""
        self.flush()
        frozen = self._backend.freeze(read_terms, queries)
        self._canon = dict(frozen.handles)
        self._reps.clear()
        self._rep_class.clear()
        self.snapshot_cache.clear()
        return frozen

    # -- representatives ---------------------------------------------------------------------------
    def representative(self, handle: Handle) -> Expr:
        """IR of a class's first e-node, children likewise (one IR node per class; cached until the
        next refresh). For a lowered program and its classes this is the program as it was lowered."""
        order: list[Handle] = []
        stack = [(self.canonical(handle), False)]
        while stack:
            h, expanded = stack.pop()
            if h in self._reps:
                continue
            if expanded:
                order.append(h)
                term = self._terms[h]
                kids = [self._reps[self.canonical(c)] for c in term.children]
                payload = term.payload
                if term.kind is Kind.CALL:
                    payload = (payload[0], self.attrs[payload[1]])
                expr = build_node(self, term.kind, payload, kids)
                self._reps[h] = expr
                self._rep_class[id(expr)] = h
                continue
            stack.append((h, True))
            stack.extend((self.canonical(c), False) for c in self._terms[h].children
                         if self.canonical(c) not in self._reps)
        return self._reps[self.canonical(handle)]  # type: ignore[return-value]

    def representative_term(self, handle: Handle) -> Term:
        """The first e-node made in the class of `handle`."""
        return self._terms[self.canonical(handle)]

    def class_of_representative(self, expr: object) -> Handle | None:
        """The class whose representative is `expr` (an IR node from `representative`)."""
        return self._rep_class.get(id(expr))

    def enode_count(self) -> int:
        """Number of e-nodes in egglog (pending nodes are flushed first)."""
        self.flush()
        return self._backend.enode_count()

    def eclass_count(self) -> int:
        return len(set(self.refresh().handles.values()))

    @property
    def num_pending(self) -> int:
        """Nodes added since the last flush (an upper bound on what the flush will add)."""
        return len(self._pending_terms)

    @property
    def num_pending_changes(self) -> int:
        """Nodes and unions waiting for the next flush."""
        return len(self._pending_terms) + len(self._pending_unions)

    def view(self, roots: Iterable[Handle]) -> EGraphView:
        """A plain-data snapshot of the whole e-graph for extraction (classes named by handles)."""
        frozen = self.refresh(read_terms=True)
        canon = frozen.handles
        nodes = []
        for term, cls in zip(frozen.terms, frozen.term_class):
            payload = term.payload
            if term.kind is Kind.CALL:
                payload = (payload[0], self.attrs[payload[1]])
            nodes.append((term.kind, payload, term.children, cls))
        types = {cls: self._types[cls] for cls in set(frozen.term_class)}
        index = {(t.kind, t.payload, t.children): i for i, t in enumerate(frozen.terms)}
        exclusions = []
        for term, interior in self._exclusions:
            key = (term.kind, term.payload, tuple(canon.get(c, c) for c in term.children))
            if key in index:
                exclusions.append(Exclusion(index[key], frozenset(canon.get(c, c) for c in interior)))
        return EGraphView.build(nodes, types, [canon.get(r, r) for r in roots], exclusions,
                                variables=self.variables, constants=self.constants, functions=self.functions)


def build_node(tables: "EGraphView | EGraph", kind: Kind, payload: tuple, kids: list) -> object:
    """The IR node of one e-node (`payload` with decoded `Attrs`); lists come back as Python tuples."""
    if kind is Kind.VAR:
        return tables.variables[payload[0]]
    if kind is Kind.CONST:
        return tables.constants[payload[0]]
    if kind is Kind.FUNC:
        return tables.functions[payload[0]]
    if kind is Kind.CALL:
        return Call(get_op(payload[0]), kids, payload[1])
    if kind is Kind.APPLY:
        return Call(kids[0], kids[1])
    if kind is Kind.TUPLE:
        return Tuple(kids[0])
    if kind is Kind.NIL:
        return ()
    if kind is Kind.CONS:
        return (kids[0], *kids[1])
    if kind is Kind.GETITEM:
        return TupleGetItem(kids[0], payload[0])
    if kind is Kind.IF:
        return If(*kids)
    if kind is Kind.LET:
        return Let(*kids)
    raise LoweringError(f"cannot lift an e-node of kind {kind}")


def _post_order(root: Expr, leaves: Mapping[int, Handle]) -> list[Expr]:
    """Nodes of `root` children first; inner functions and `leaves` are not entered."""
    from ir.visitor import children
    order: list[Expr] = []
    seen: set[int] = set(leaves)
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        if isinstance(node, Function):
            continue
        kids = children(node)
        if isinstance(node, Let):
            kids = (node.var, *kids)
        for child in reversed(kids):
            if id(child) not in seen:
                stack.append((child, False))
    return order
