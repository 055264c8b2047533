"""The e-graph as Python sees it: handles, the type of every e-class, and the IR side tables.

`EGraph` wraps the egglog backend. Python adds every e-node (lowering and rule results alike),
so it knows each node's type when the node is made: the type relation of the op, applied to the
types of the child classes. That table is the shape/dtype analysis; `union` refuses to merge
classes whose types differ, so an ill-typed rewrite never enters the e-graph.

Between two refreshes the e-graph is a fixed *snapshot* (`generation` counts them). From its own
tables Python answers, per snapshot and without reading egglog, which e-nodes each class holds
(`class_nodes`) and which of them came from the programs lowered as input (`input_enodes`);
dominator regions, callback leaves and `rewrite_once` are decided on them. It also remembers
which rule made each e-node (one `Application` per rule result), which the view reports as
`origins`, with each e-node's creation order as `births`. Lowering IR into e-nodes
(`add_program`, `add_expr`) lives in `lower.py` and fills the leaf tables through `intern_*`.
"""

from __future__ import annotations

import bisect
import enum
import hashlib
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from ir import Attrs, Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var, get_op
from ir.structural import structural_equal, structural_hash
from ir.type_infer import types_compatible
from ir.types import Type

from ..errors import LoweringError
from .backend import Backend, Frozen, is_row_safe
from .class_values import has_any, refine_types
from .terms import Handle, Kind, Term
from .view import EGraphView, ClosedRegion

__all__ = ["EGraph", "Merge", "Application", "attrs_key", "build_node"]


class Merge(enum.Enum):
    """What `EGraph.union` did."""

    MERGED = "merged"                  # queued: the classes were different
    ALREADY_EQUAL = "already_equal"    # same class as of the last refresh; nothing to do
    TYPE_MISMATCH = "type_mismatch"    # refused: the classes have different types


@dataclass(frozen=True)
class Application:
    """One rule result lowered into the e-graph: the rule, the handles `first` (inclusive) to `end`
    (exclusive) of the e-nodes it made, and the handle of the result's root."""

    rule: str
    first: Handle
    end: Handle
    root: Handle


def attrs_key(attrs: Attrs) -> str:
    """The canonical text of a call's attributes (schema order, as `Call` normalizes them); a digest
    of that text when it cannot be stored in egglog as it is (e.g. a multi-line value)."""
    text = repr(tuple(attrs.items()))
    return text if is_row_safe(text) else "attrs-" + hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


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
        self._regions: list[tuple[Term, frozenset[Handle]]] = []
        self.applications: list[Application] = []
        """every rule result that made e-nodes, in the order they were added."""
        self._snapshot_sizes: list[int] = [0]
        """how many e-nodes egglog held at each refresh (increasing): what each search could see."""
        self.installed_rules: dict[int, tuple[object, str, list[tuple[str, object]]]] = {}
        """id(rule) -> (rule, backend key, its queries), filled by `eqsat.rules.install.install_rule`."""
        self.call_shapes: set[tuple[str, int]] = set()
        """(op, number of arguments) of every call e-node added."""
        self.prepared_rules: dict[int, tuple[object, list, list[frozenset[tuple[str, int]]]]] = {}
        """id(rule) -> (rule, its queries, per query the call shapes it names): `eqsat.rules.install`."""
        self._flushed_terms = 0        # terms egglog holds as of the last refresh
        self._stale = False            # a flush happened after the last refresh
        self._programs: list[tuple[Expr, dict[Handle, list[Expr]]]] = []
        self.generation = 0
        """counts refreshes: values derived from one snapshot of the e-graph are valid while it stays."""
        self.snapshot_cache: dict[object, object] = {}
        """values derived from the current snapshot (class index, graph indexes); cleared by every refresh."""
        self.indexes: dict[object, object] = {}
        """indexes that keep themselves current across snapshots (e.g. where a sub-pattern matches)."""
        self.roots: list[Handle] = []
        """classes of the program's outputs (set by `lower`)."""
        self.imprecise: set[Handle] = set()
        """handles whose class type may still have `Any` dimensions to fill (`refine_types`)."""

    @property
    def backend(self) -> Backend:
        return self._backend

    # -- classes and types --------------------------------------------------------------------
    def type_of(self, handle: Handle) -> Type:
        """The type of the e-class named by `handle` (the same for every handle of the class): the
        type it was made with, its `Any` dimensions filled at each refresh (`class_values.refine_types`)."""
        return self._types[self.canonical(handle)]

    def refine_type(self, handle: Handle, ty: Type) -> None:
        """Type the class of `handle` as `ty`, a type compatible with its own and more precise."""
        self._types[self.canonical(handle)] = ty

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
        if has_any(ty):
            self.imprecise.add(handle)
        self._terms.append(term)
        self._memo[term] = handle
        if term.kind is Kind.CALL:
            self.call_shapes.add((term.payload[0], len(term.children)))
        self._pending_terms.append((handle, term))
        return handle

    def union(self, a: Handle, b: Handle) -> Merge:
        """Merge two classes if their types agree (queued until `flush`)."""
        if not types_compatible(self.type_of(a), self.type_of(b)):
            return Merge.TYPE_MISMATCH
        if self.canonical(a) == self.canonical(b):
            return Merge.ALREADY_EQUAL
        self._pending_unions.append((a, b))
        return Merge.MERGED

    def flush(self) -> bool:
        """Send pending nodes and unions to egglog (one batch); True if the e-graph changed."""
        terms, unions = self._pending_terms, self._pending_unions
        if not terms and not unions:
            return False
        self._pending_terms, self._pending_unions = [], []
        self._stale = True
        return self._backend.insert(terms, unions)

    @property
    def size(self) -> int:
        """How many e-nodes were ever added (the next new e-node's handle)."""
        return len(self._terms)

    def record_program(self, expr: Expr, nodes: dict[Handle, list[Expr]]) -> None:
        """Remember a lowered input program and, per class, its IR nodes there (see `input_enodes`)."""
        self._programs.append((expr, nodes))

    def record_application(self, application: Application) -> None:
        """Remember that a rule result made the e-nodes `application.first` up to `application.end`."""
        self.applications.append(application)

    def visible_before(self, handle: Handle) -> Handle:
        """The e-nodes (handles below the answer) of the last snapshot taken before `handle` was made:
        what the search that led to it could see."""
        return self._snapshot_sizes[bisect.bisect_right(self._snapshot_sizes, handle) - 1]

    def registered_rules(self) -> dict[str, object]:
        """Rule name -> rule, for every rule a saturation of this e-graph ran, installed or not
        (`eqsat.rules.install`: a rule is installed when it first could match)."""
        return {rule.name: rule for rule, _, _ in self.prepared_rules.values()}

    def application_of(self, handle: Handle) -> int | None:
        """The index in `applications` of the rule result that made `handle` (None: lowered from the input)."""
        i = bisect.bisect_right(self.applications, handle, key=lambda a: a.first) - 1
        return i if i >= 0 and handle < self.applications[i].end else None

    # -- leaves: one table entry per variable, constant, attribute set and inner function --------
    def intern_variable(self, var: Var) -> str:
        """The e-graph's name of `var` (made unique among the lowered variables)."""
        name = self._var_names.get(id(var))
        if name is None:
            base = var.name_hint if is_row_safe(var.name_hint) else repr(var.name_hint)
            name, k = base, 0
            while name in self.variables:
                k += 1
                name = f"{base}#{k}"
            self.variables[name] = var
            self._var_names[id(var)] = name
        return name

    def intern_function(self, fn: Function) -> str:
        """The key of inner function `fn` (structurally equal functions share one)."""
        base = f"{structural_hash(fn, map_free_vars=True):016x}"
        key, k = base, 0
        while key in self.functions and not structural_equal(self.functions[key], fn, map_free_vars=True):
            k += 1
            key = f"{base}-{k}"
        self.functions.setdefault(key, fn)
        return key

    def intern_constant(self, c: Constant) -> str:
        """The key of constant `c` (equal contents share one)."""
        key = c.digest
        self.constants.setdefault(key, c)
        return key

    def intern_attrs(self, attrs: Attrs) -> str:
        """The key of an op call's attributes (equal attributes share one)."""
        key = attrs_key(attrs)
        self.attrs.setdefault(key, attrs)
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
    def close_region(self, node: Handle, interior: Iterable[Handle]) -> None:
        """Record that the e-node added as `node` replaces a region whose `interior` classes must not
        be used by any other extracted node (a closed-region constraint)."""
        self._regions.append((self._terms[node], frozenset(interior)))

    # -- reading --------------------------------------------------------------------------------
    def refresh(self, queries: Iterable[str] = (), read_terms: bool = False,
                stop: Callable[[], bool] | None = None) -> Frozen:
        """Read egglog's database (flushing first): class ids, and optionally nodes and matches
        (`stop` may end the reading of matches early; see `Backend.freeze`)."""
        self.flush()
        frozen = self._backend.freeze(read_terms, queries, stop)
        self._canon = dict(frozen.handles)
        self._flushed_terms = len(self._terms) - len(self._pending_terms)
        if self._flushed_terms > self._snapshot_sizes[-1]:
            self._snapshot_sizes.append(self._flushed_terms)
        self._stale = False
        self.snapshot_cache.clear()
        self.generation += 1
        refine_types(self)
        return frozen

    def run_queries(self, key: str, queries: list[str]) -> Frozen:
        """Run the registered queries of rule `key` on the current snapshot and read their rows.

        Pending (unflushed) changes stay pending, so rows agree with the snapshot that the
        current matches were read from; after a flush the e-graph is refreshed first.
        """
        if self._stale:
            self.refresh()
        self._backend.search([key])
        frozen = self._backend.freeze(False, queries)
        self._backend.clear_matches([key])
        return frozen

    # -- the current snapshot, class by class ---------------------------------------------------------
    def _snapshot(self, key: str, compute):
        if self._stale:
            self.refresh()
        value = self.snapshot_cache.get(key)
        if value is None:
            value = self.snapshot_cache[key] = compute()
        return value

    def class_nodes(self) -> Mapping[Handle, tuple[Term, ...]]:
        """Every class of the current snapshot -> its distinct e-nodes (children as canonical handles),
        in the order they were made. Read from Python's own tables, so it costs no egglog read."""
        def compute() -> dict[Handle, tuple[Term, ...]]:
            out: dict[Handle, dict[Term, None]] = {}
            for h in range(self._flushed_terms):
                out.setdefault(self.canonical(h), {})[self._canonical_term(self._terms[h])] = None
            return {c: tuple(ts) for c, ts in out.items()}
        return self._snapshot("class-nodes", compute)

    def input_enodes(self) -> frozenset[Term]:
        """The e-nodes of the programs added with `add_program` (children as canonical handles)."""
        def compute() -> frozenset[Term]:
            return frozenset(self._canonical_term(self._terms[h]) for _, nodes in self._programs for h in nodes)
        return self._snapshot("input-enodes", compute)

    def program_nodes(self) -> list[tuple[Expr, dict[Handle, list[Expr]]]]:
        """Per program added with `add_program`: its root and canonical class -> its IR nodes there."""
        def compute() -> list[tuple[Expr, dict[Handle, list[Expr]]]]:
            out = []
            for root, nodes in self._programs:
                by_class: dict[Handle, list[Expr]] = {}
                for h, exprs in nodes.items():
                    by_class.setdefault(self.canonical(h), []).extend(exprs)
                out.append((root, by_class))
            return out
        return self._snapshot("program-nodes", compute)

    def _canonical_term(self, term: Term) -> Term:
        return Term(term.kind, term.payload, tuple(self.canonical(c) for c in term.children))

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
        types = {cls: self.type_of(cls) for cls in set(frozen.term_class)}
        origins: list[str | None] = []
        births: list[Handle] = []
        if self.applications:  # the rule that made each e-node: the one of its earliest handle
            first: dict[Term, Handle] = {}
            for h in range(len(self._terms)):
                first.setdefault(self._canonical_term(self._terms[h]), h)
            births = [first.get(t, -1) for t in frozen.terms]
            made = [self.application_of(h) for h in births]
            origins = [None if a is None else self.applications[a].rule for a in made]
        closed_regions = []
        if self._regions:
            index = {(t.kind, t.payload, t.children): i for i, t in enumerate(frozen.terms)}
            for term, interior in self._regions:
                key = (term.kind, term.payload, tuple(canon.get(c, c) for c in term.children))
                if key in index:
                    closed_regions.append(ClosedRegion(index[key], frozenset(canon.get(c, c) for c in interior)))
        return EGraphView.build(nodes, types, [canon.get(r, r) for r in roots], closed_regions, origins, births,
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
