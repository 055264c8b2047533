"""IR module <-> e-graph: `lower` puts a program in, `lift` takes an extracted choice back out.

Sharing survives both ways: lowering hash-conses equal sub-terms (structurally equal nodes
become one e-class; constants are keyed by content), and lifting builds one IR node per chosen
e-class, so a DAG never expands into a tree. Lifting the unsaturated e-graph gives a program
structurally equal to the input (`ir.structural_equal`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

import ir
from ir import Attrs, Call, Constant, Expr, Function, If, IRModule, Let, Tuple, TupleGetItem, Var
from ir.expr import as_array
from ir.op.registry import Op
from ir.types import TupleType, Type
from ir.visitor import bind, children, free_vars, post_order
from strategies.constants import folded

from ..errors import LoweringError
from .egraph import Application, EGraph, build_node
from .terms import MAX_CALL_ARITY, Handle, Kind, Term
from .view import ClassId, EGraphView, NodeId

__all__ = ["Lowered", "lower", "lift", "lift_params", "lift_expr", "add_program", "add_expr"]


# -- IR -> e-nodes ---------------------------------------------------------------------------------

def add_program(egraph: EGraph, expr: Expr) -> Handle:
    """Lower a typed program (`add_expr`) and remember it as an input: its e-nodes are the ones
    `EGraph.input_enodes` reports, and `EGraph.program_nodes` maps its classes back to its IR nodes."""
    done: dict[int, Handle] = {}
    nodes: dict[Handle, list[Expr]] = {}
    for node in _post_order(expr, {}):
        handle = done[id(node)] = _lower_node(egraph, node, done)
        nodes.setdefault(handle, []).append(node)
    egraph.record_program(expr, nodes)
    return done[id(expr)]


def add_expr(egraph: EGraph, expr: Expr, leaves: Mapping[int, Handle] | None = None,
             origin: str | None = None) -> Handle:
    """Lower a typed IR expression; nodes whose `id` is in `leaves` stand for existing classes.

    Inner functions are atomic (see `terms`). Every node must have its type inferred. `origin`
    (a rule name) is recorded for the e-nodes this call makes, and reported by `EGraph.view`.
    """
    done: dict[int, Handle] = dict(leaves or {})
    first_new = egraph.size
    for node in _post_order(expr, done):
        done[id(node)] = _lower_node(egraph, node, done)
    if origin is not None and egraph.size > first_new:
        egraph.record_application(Application(origin, first_new, egraph.size, done[id(expr)]))
    return done[id(expr)]


def _lower_node(egraph: EGraph, node: Expr, done: Mapping[int, Handle]) -> Handle:
    if not node.type_inferred:
        raise LoweringError(f"{node!r} has no type; run ir.infer_type on the program before lowering")
    ty = node.checked_type
    if isinstance(node, Var):
        return egraph.add(Term(Kind.VAR, (egraph.intern_variable(node),)), ty)
    if isinstance(node, Constant):
        return egraph.add(Term(Kind.CONST, (egraph.intern_constant(node),)), ty)
    if isinstance(node, Function):
        return egraph.add(Term(Kind.FUNC, (egraph.intern_function(node),)), ty)
    if isinstance(node, Call):
        args = [done[id(a)] for a in node.args]
        if isinstance(node.op, Op):
            if len(args) > MAX_CALL_ARITY:
                raise LoweringError(f"{node.op.name} has {len(args)} inputs; the e-graph supports at most "
                                    f"{MAX_CALL_ARITY}")
            return egraph.add(Term(Kind.CALL, (node.op.name, egraph.intern_attrs(node.attrs)), tuple(args)), ty)
        if len(node.attrs):
            raise LoweringError(f"a call of a function value carries attributes {dict(node.attrs)}; "
                                "only op calls may have attributes")
        return egraph.add(Term(Kind.APPLY, (), (done[id(node.op)], _add_list(egraph, args))), ty)
    if isinstance(node, Tuple):
        return egraph.add(Term(Kind.TUPLE, (), (_add_list(egraph, [done[id(f)] for f in node.fields]),)), ty)
    if isinstance(node, TupleGetItem):
        return egraph.add(Term(Kind.GETITEM, (node.index,), (done[id(node.tuple_value)],)), ty)
    if isinstance(node, If):
        kids = (node.cond, node.true_branch, node.false_branch)
        return egraph.add(Term(Kind.IF, (), tuple(done[id(k)] for k in kids)), ty)
    if isinstance(node, Let):
        kids = (node.var, node.value, node.body)
        return egraph.add(Term(Kind.LET, (), tuple(done[id(k)] for k in kids)), ty)
    raise LoweringError(f"cannot lower a {type(node).__name__} node ({node!r}) into the e-graph")


def _add_list(egraph: EGraph, items: list[Handle]) -> Handle:
    """The class of the argument/field list `items` (a cons list)."""
    tail = egraph.add(Term(Kind.NIL), TupleType([]))
    for h in reversed(items):
        fields = TupleType([egraph.type_of(h), *egraph.type_of(tail).fields])
        tail = egraph.add(Term(Kind.CONS, (), (h, tail)), fields)
    return tail


def _post_order(root: Expr, leaves: Mapping[int, Handle]) -> list[Expr]:
    """Nodes of `root` children first; inner functions and `leaves` are not entered."""
    return list(post_order(root, _lowering_operands, stop=lambda node: id(node) in leaves))


def _lowering_operands(node: Expr) -> tuple[Expr, ...]:
    if isinstance(node, Function):
        return ()
    if isinstance(node, Let):
        return (node.var, *children(node))
    return children(node)


# -- modules ---------------------------------------------------------------------------------------


@dataclass
class Lowered:
    """An e-graph holding a module's `main`, its root class and what lifting needs to rebuild it."""

    egraph: EGraph
    root: Handle
    params: tuple[ir.Var, ...]
    """`main`'s parameters that were not bound to values."""
    ret_type: Type | None
    attrs: Attrs
    other_functions: dict[str, Function] = field(default_factory=dict)
    input_params: tuple[ir.Var, ...] = ()
    """all of `main`'s parameters, bound or not, in their order."""
    bound: dict[str, tuple[ir.Var, np.ndarray]] = field(default_factory=dict)
    """constant key -> the parameter bound to that value and the value (the first, for equal values)."""
    defaults: dict[str, object] = field(default_factory=dict)
    """parameter name -> the default value of an input that has one (`ir.INPUT_DEFAULTS`): never bound."""
    values: dict[str, object] = field(default_factory=dict)
    """parameter name -> the value it was given: a bound one as its constant holds it (a read-only copy,
    which running the input program again can share instead of copying), a default as given."""

    @property
    def roots(self) -> tuple[Handle, ...]:
        return (self.root,)

    def view(self) -> EGraphView:
        return self.egraph.view(self.roots)


def _bind(main: Function, params: Mapping[str, object]
          ) -> tuple[Function, dict[str, tuple[ir.Var, np.ndarray]], dict[str, np.ndarray]]:
    """`main` with the named parameters replaced by constants, constant key -> (parameter, value), and
    parameter name -> value (as the constant holds it)."""
    by_name = {p.name_hint: p for p in main.params}
    unknown = sorted(set(params) - set(by_name))
    if unknown:
        raise LoweringError(f"params {unknown} are not parameters of main; its parameters are {sorted(by_name)}")
    binds: dict[ir.Var, Constant] = {}
    bound: dict[str, tuple[ir.Var, np.ndarray]] = {}
    for name, value in params.items():
        const = binds[by_name[name]] = Constant(as_array(value))
        bound.setdefault(const.digest, (by_name[name], const.data))  # read-only: shared, not copied, by later binds
    return bind(main, binds), bound, {p.name_hint: c.data for p, c in binds.items()}  # type: ignore[return-value]


def lower(program: IRModule | Expr, params: Mapping[str, object] | None = None,
          egraph: EGraph | None = None) -> Lowered:
    """Lower `main` (or a bare expression) into a new e-graph, binding `params` as constants first
    (so that rules can read weights, e.g. to fold batch norms); the default value of an input that
    has one (`ir.INPUT_DEFAULTS`) is kept aside, never bound, and given back by `lift_params`."""
    mod = program if isinstance(program, IRModule) else IRModule.from_expr(program)
    main = mod["main"]
    input_params = main.params
    defaulted = ir.input_defaults(main)
    defaults = {k: v for k, v in (params or {}).items() if k in defaulted}
    params = {k: v for k, v in (params or {}).items() if k not in defaulted}
    main, bound, values = _bind(main, params) if params else (main, {}, {})
    try:
        ir.infer_type(main)
    except ir.IRError as err:
        raise LoweringError(f"cannot lower an ill-typed program: {err}") from err
    egraph = egraph or EGraph()
    root = add_program(egraph, main.body)
    egraph.roots.append(root)
    egraph.flush()
    others = {k: f for k, f in mod.functions.items() if k != "main"}
    return Lowered(egraph, root, main.params, main.ret_type, main.attrs, others, input_params, bound, defaults,
                   {**values, **defaults})


def lift_expr(view: EGraphView, node_of: Mapping[ClassId, NodeId], root: ClassId,
              constants: Mapping[str, Expr] | None = None, built: dict[ClassId, object] | None = None,
              fold: Callable[[Expr], Expr | None] | None = None) -> Expr:
    """The IR expression of `root` under a choice of one node per class (one IR node per class);
    constant nodes whose key is in `constants` become that expression instead, and `fold`, when
    given, may replace each node built (its children already replaced). `built`, when given,
    receives every class lifted -> its IR node (argument lists: Python tuples)."""
    constants = constants or {}
    built = {} if built is None else built
    stack: list[tuple[ClassId, bool]] = [(root, False)]
    while stack:
        cls, expanded = stack.pop()
        if cls in built:
            continue
        node = view.nodes[node_of[cls]]
        if not expanded:
            stack.append((cls, True))
            stack.extend((c, False) for c in reversed(node.children) if c not in built)
            continue
        if node.kind is Kind.CONST and node.payload[0] in constants:
            built[cls] = constants[node.payload[0]]
        else:
            built[cls] = build_node(view, node.kind, node.payload, [built[c] for c in node.children])
            if fold is not None and isinstance(built[cls], Expr):
                built[cls] = fold(built[cls]) or built[cls]
    return built[root]  # type: ignore[return-value]


def lift(lowered: Lowered, view: EGraphView, node_of: Mapping[ClassId, NodeId]) -> IRModule:
    """The module whose `main` is the chosen program for the lowered root (bound params inline)."""
    body = lift_expr(view, node_of, view.roots[0])
    main = Function(lowered.params, body, lowered.ret_type, lowered.attrs)
    return IRModule({"main": main, **lowered.other_functions})


def lift_params(lowered: Lowered, view: EGraphView, node_of: Mapping[ClassId, NodeId],
                built: dict[ClassId, object] | None = None,
                fold_constants: bool = False) -> tuple[IRModule, dict[str, np.ndarray]]:
    """Like `lift`, but every constant that is a bound parameter's value becomes that parameter again.

    Returns the module and the values of the parameters it still uses, so that it runs and exports
    like the input (`strategies.build(mod, params=...)`, `to_onnx(mod, params)`). Constants that
    rules computed (e.g. folded weights) stay inline. With `fold_constants`, so does the value of
    every call on constants and parameters alone (the cost models price such calls at zero: this
    makes that true wherever the program runs, ONNX Runtime with its optimizer off included).
    `built` receives class -> IR node (`lift_expr`).
    """
    as_params = {key: var for key, (var, _) in lowered.bound.items()}
    values = {var: value for var, value in lowered.bound.values()}
    fold = (lambda node: folded(node, values)) if fold_constants else None
    body = lift_expr(view, node_of, view.roots[0], as_params, built, fold)
    used = set(free_vars(body)) & set(as_params.values())
    params = [p for p in lowered.input_params if p in lowered.params or p in used]
    main = Function(params, body, lowered.ret_type, lowered.attrs)
    values = {var.name_hint: value for var, value in lowered.bound.values() if var in used}
    values.update({name: np.asarray(lowered.defaults[name]) for name in (p.name_hint for p in params)
                   if name in lowered.defaults})
    return IRModule({"main": main, **lowered.other_functions}), values
