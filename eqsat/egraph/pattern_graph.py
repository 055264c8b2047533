"""An e-graph view as the values and forms that `ir.dataflow_pattern.explain` walks.

A value is an e-class; its forms are its e-nodes, each as a one-level IR node whose operands
are placeholder variables standing for the child classes (`value_of` maps them back). Leaves
(variables, constants, inner functions) are their own IR objects. With `before`, only e-nodes
made before that handle count, which is how provenance looks at the e-graph as a rule saw it.

Dominator post-dominance depends on which users the extracted program keeps; given the lowered
`program` (`EGraph.program_nodes`), `escape` decides it there, as `rules.callback.find_matches`
does, and otherwise reports nothing.

`snapshot_forms` gives the current snapshot of a live e-graph this way, for the e-matching
compiler to walk a pattern kind it has no query for.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ir import Call, Expr, If, Let, Tuple, TupleGetItem, Var, get_op
from ir.dataflow_pattern.walk import ExprGraph
from ir.types import Type

from .egraph import EGraph, build_node
from .terms import Kind
from .view import ClassId, EGraphView, NodeId

__all__ = ["EGraphForms", "snapshot_forms"]


class EGraphForms:
    """The classes of `view` as pattern-walk values (see the module docstring)."""

    def __init__(self, view: EGraphView, names: Mapping[ClassId, str] | None = None, before: int | None = None,
                 program: tuple[Expr, Mapping[ClassId, list[Expr]]] | None = None):
        self.view = view
        self.program = program
        self.names = names or {}
        """class -> the name of its node in the input program (`%5`), for messages."""
        self.before = before
        self._forms: dict[ClassId, tuple[Expr, ...]] = {}
        self._node_of_form: dict[int, NodeId] = {}
        self._placeholders: dict[ClassId, Var] = {}
        self._class_of: dict[int, ClassId] = {}

    def node_of(self, form: Expr) -> NodeId | None:
        """The e-node a form was built from (None for forms that are not e-nodes)."""
        return self._node_of_form.get(id(form))

    def forms(self, value: Any) -> Sequence[Expr]:
        if isinstance(value, Expr):
            return (value,)
        forms = self._forms.get(value)
        if forms is None:
            view, births = self.view, self.view.births
            nodes = sorted(view.classes[value], key=lambda n: births[n] if births else n)
            built = []
            for n in nodes:
                if self.before is not None and births and births[n] >= self.before:
                    continue
                form = self._form(n)
                if form is not None:
                    self._node_of_form[id(form)] = n
                    built.append(form)
            forms = self._forms[value] = tuple(built)
        return forms

    def _placeholder(self, c: ClassId) -> Var:
        var = self._placeholders.get(c)
        if var is None:
            var = self._placeholders[c] = Var(f"?{c}", self.view.types.get(c))
            self._class_of[id(var)] = c
        return var

    def _list(self, c: ClassId) -> list[Var]:
        """The classes of a cons list, as placeholders."""
        out = []
        while True:
            cell = self.view.nodes[self.view.classes[c][0]]
            if cell.kind is not Kind.CONS:
                return out
            out.append(self._placeholder(cell.children[0]))
            c = cell.children[1]

    def _form(self, n: NodeId) -> Expr | None:
        node = self.view.nodes[n]
        kids = [self._placeholder(c) for c in node.children]
        if node.kind in (Kind.VAR, Kind.CONST, Kind.FUNC):
            return build_node(self.view, node.kind, node.payload, [])
        if node.kind is Kind.CALL:
            return Call(get_op(node.op), kids, node.attrs)
        if node.kind is Kind.APPLY:
            return Call(kids[0], self._list(node.children[1]))
        if node.kind is Kind.TUPLE:
            return Tuple(self._list(node.children[0]))
        if node.kind is Kind.GETITEM:
            return TupleGetItem(kids[0], node.payload[0])
        if node.kind is Kind.IF:
            return If(*kids)
        if node.kind is Kind.LET:
            return Let(*kids)
        return None  # argument lists are not values

    def value_of(self, operand: Expr) -> Any:
        return self._class_of.get(id(operand), operand)

    def type_of(self, value: Any) -> Type | None:
        if isinstance(value, Expr):
            return value.checked_type if value.type_inferred else None
        return self.view.types.get(value)

    def inputs(self, value: Any) -> tuple[Any, ...]:
        forms = self.forms(value)
        if not forms or isinstance(value, Expr):
            return ()
        form = forms[0]
        if isinstance(form, Call):
            return tuple(self.value_of(a) for a in form.args)
        if isinstance(form, Tuple):
            return tuple(self.value_of(f) for f in form.fields)
        if isinstance(form, TupleGetItem):
            return (self.value_of(form.tuple_value),)
        if isinstance(form, If):
            return tuple(self.value_of(k) for k in (form.cond, form.true_branch, form.false_branch))
        return ()

    def escape(self, child: Any, parent: Any, region: Sequence[Any]) -> tuple[Any, Any] | None:
        if self.program is None:
            return None
        root, by_class = self.program
        graph = ExprGraph(root)
        class_of = {id(n): c for c, nodes in by_class.items() for n in nodes}
        inside = [n for c in region for n in by_class.get(c, ())]
        found = None
        for c in by_class.get(child, ()):
            for p in by_class.get(parent, ()):
                escaped = graph.escape(c, p, [p, *inside])
                if escaped is None:
                    return None
                found = found or escaped
        if found is None:
            return None
        return tuple(class_of.get(id(n), n) for n in found)

    def describe(self, value: Any) -> str:
        if isinstance(value, Expr):
            return ExprGraph(value).describe(value)
        name = self.names.get(value)
        return f"e-class {value}" + (f" ({name} in the input)" if name else "")


def snapshot_forms(egraph: EGraph) -> EGraphForms:
    """The classes of `egraph`'s current snapshot as pattern-walk values (read from its Python
    tables, no egglog read), kept until the next refresh."""
    forms = egraph.snapshot_cache.get("pattern-forms")
    if forms is None:
        classes = egraph.class_nodes()
        nodes = [(t.kind, (t.payload[0], egraph.attrs[t.payload[1]]) if t.kind is Kind.CALL else t.payload,
                  t.children, c) for c, terms in classes.items() for t in terms]
        view = EGraphView.build(nodes, {c: egraph.type_of(c) for c in classes}, (), variables=egraph.variables,
                                constants=egraph.constants, functions=egraph.functions)
        forms = egraph.snapshot_cache["pattern-forms"] = EGraphForms(view)
    return forms  # type: ignore[return-value]
