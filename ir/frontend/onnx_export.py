"""IR -> ONNX: `to_onnx(mod, params)` gives a checked `onnx.ModelProto` that ONNX Runtime runs.

    model = to_onnx(mod, params)                     # opset 17 unless `opset=` says otherwise
    onnx.save(model, "optimized.onnx")
    model = to_onnx(mod, params, contrib=True)       # fused forms as ONNX Runtime contrib ops

`main`'s parameters named in `params` become initializers, the others graph inputs (a `SizeVar`
dimension becomes a `dim_param`), and those `main` names in `ir.INPUT_DEFAULTS` both (an input with
a default value); constants become initializers. Every registered op has an
emitter (fused forms are decomposed into standard ONNX ops, or with `contrib=True` become ONNX
Runtime's `com.microsoft` ops where those can express them, see `export_contrib`); `Let`
bindings and calls of inner functions (e.g. partitioned composites) are inlined; `If` becomes an
ONNX `If` with subgraphs.
A node used several times is exported once. A large constant whose elements are all equal (a
zero or one fill) becomes a `ConstantOfShape` node rather than an initializer, which keeps files
small; importing folds it back into a constant.
"""

from __future__ import annotations

from collections import Counter
from typing import Collection, Mapping, Sequence

import numpy as np
import onnx

from ..errors import IRError
from ..expr import Call, Constant, Expr, Function, If, Tuple, TupleGetItem, Var
from ..module import IRModule, entry_function, input_defaults
from ..module import output_names as output_names_of
from ..op.registry import Op
from ..type_infer import infer_type, types_compatible
from ..visitor import children, post_order
from ..types import TensorType, TupleType, Type
from ..value_bounds import ValueBounds
from . import export_elemwise, export_indexing, export_nn, export_piecewise, export_tensor  # noqa: F401  (emitters)
from . import export_image  # noqa: F401  (the image.resize emitters)
from . import export_nchwc  # noqa: F401  (layout_transform and the blocked convolutions)
from . import export_attention, export_feed_forward  # noqa: F401  (register their emitters)
from . import export_dynamic  # noqa: F401  (shape_of and the dyn.* ops)
from .errors import FrontendError
from .export_context import CONTRIB_DOMAIN, EMITTERS, ONE_NODE_OPSETS, EmitContext, HeadSplit, Names, Relayout, Value
from .export_contrib import CONTRIB_EMITTERS, CONTRIB_OPSET
from .inline import inline_bindings
from .onnx_type_constraints import legalize_types
from .onnx_types import elem_of_dtype, value_info

__all__ = ["to_onnx", "DEFAULT_OPSET", "IN_MEMORY", "OLDEST_EXPORT_OPSET"]

DEFAULT_OPSET = 17  # the first with LayerNormalization
OLDEST_EXPORT_OPSET = 13
_SHARED_CONSTANT_ELEMENTS = 16  # emitter constants up to this size are shared by value
_SPLAT_MIN_ELEMENTS = 1024  # a constant this large whose elements are all equal becomes ConstantOfShape
IN_MEMORY = "in-memory"
"""the location an initializer written to `to_onnx(external=...)` names: its data is the dict's array."""
_SHARED_DTYPES = frozenset({"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                            "uint32", "uint64", "bool"})
"""dtypes whose arrays ONNX Runtime takes from numpy as they are (`OrtValue.ortvalue_from_numpy`)."""
_EXTERNAL_MIN_BYTES = 1024
"""smaller initializers stay in the model: ONNX Runtime reads shapes, axes and the like from there
when it loads a model."""


def _is_splat(data: np.ndarray) -> bool:
    """Whether every element has the first's bits (so 0.0 and -0.0 differ, and NaNs are alike when their
    bits are). The first 64 elements are read first, then the whole array in place (a transposed
    weight is not copied)."""
    bits = data.view(f"u{data.dtype.itemsize}")
    first = bits.flat[0]
    return bool(np.all(bits.flat[:64] == first)) and bool(np.all(bits == first))


def _flatten(value: Value) -> list[str]:
    return [value] if isinstance(value, str) else [n for v in value for n in _flatten(v)]


def _flatten_type(ty: Type) -> list[TensorType]:
    if isinstance(ty, TupleType):
        return [t for f in ty.fields for t in _flatten_type(f)]
    if not isinstance(ty, TensorType):
        raise FrontendError(f"only tensors and tuples of tensors can be exported, got a value of type {ty}")
    return [ty]


def _unflatten(names: list[str], ty: Type) -> Value:
    if not isinstance(ty, TupleType):
        return names.pop(0)
    return tuple(_unflatten(names, f) for f in ty.fields)


def _describe(call: Call) -> str:
    inputs = ", ".join(str(a.checked_type) for a in call.args)
    return f"{call.op.name} (inputs {inputs})"


class _Scope:
    """The ONNX values of IR nodes in one graph or subgraph; a subgraph sees its parents' values."""

    def __init__(self, parent: "_Scope | None" = None):
        self.parent = parent
        self.values: dict[Expr, Value] = {}
        self.nodes: list[onnx.NodeProto] = []

    @property
    def root(self) -> "_Scope":
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def find(self, expr: Expr) -> Value | None:
        scope: _Scope | None = self
        while scope is not None:
            if expr in scope.values:
                return scope.values[expr]
            scope = scope.parent
        return None


class _GraphExporter:
    """Walks the (inlined, typed) body of `main` and emits ONNX nodes, constants and subgraphs."""

    def __init__(self, opset: int, contrib: bool, readers: Mapping[Expr, int], bounds: ValueBounds):
        self.opset = opset
        self.contrib = contrib
        self.readers = readers
        self.names = Names()
        self.initializers: dict[str, np.ndarray] = {}
        self._constant_names: dict[Expr, str] = {}
        self._shared_constants: dict[tuple, str] = {}
        self.views: dict[str, str] = {}
        self.relayouts: dict[str, Relayout] = {}
        self.bypassable: dict[str, str] = {}
        self.head_splits: dict[str, HeadSplit] = {}
        self.shared: dict[tuple, str] = {}
        self.bounds = bounds

    def add_initializer(self, name: str, value: np.ndarray) -> None:
        elem_of_dtype(value.dtype.name, f"constant {name!r}")
        self.initializers[name] = value

    def write_initializers(self, graph: onnx.GraphProto, external: dict[str, np.ndarray] | None = None) -> None:
        """Add the initializers some node reads to `graph` in place (weights can be large: each is copied
        once; one an emitter replaced by its slices, or a parameter nothing uses, is left out). With
        `external`, those of a dtype numpy and ONNX Runtime share and of `_EXTERNAL_MIN_BYTES` or more
        are written as references to data held in memory (`IN_MEMORY`) and their arrays put in
        `external`, not copied."""
        used = _read_names(graph)
        for name, value in self.initializers.items():
            if name not in used:
                continue
            tensor = graph.initializer.add()
            tensor.name = name
            tensor.data_type = elem_of_dtype(value.dtype.name, name)
            tensor.dims.extend(value.shape)
            data = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
            if external is not None and value.dtype.name in _SHARED_DTYPES and data.nbytes >= _EXTERNAL_MIN_BYTES:
                tensor.data_location = onnx.TensorProto.EXTERNAL
                tensor.external_data.add(key="location", value=IN_MEMORY)
                external[name] = data
            else:
                tensor.raw_data = data.tobytes()

    def context(self, scope: _Scope) -> EmitContext:
        """An emitter context that appends to the nodes of `scope`."""
        return EmitContext(self.opset, self.names, scope.nodes, self.small_constant, self.initializers.get, self.views,
                           self.relayouts, self.bypassable, self.readers, self.head_splits, self.shared, self.bounds)

    def small_constant(self, value: np.ndarray) -> str:
        key = (value.dtype.str, value.shape, value.tobytes()) if value.size <= _SHARED_CONSTANT_ELEMENTS else None
        if key is not None and key in self._shared_constants:
            return self._shared_constants[key]
        name = self.names.fresh("const")
        self.add_initializer(name, value)
        if key is not None:
            self._shared_constants[key] = name
        return name

    def constant(self, constant: Constant, scope: _Scope) -> str:
        """The name of a constant, exported once: an initializer, or a fill node in the root graph
        (which every subgraph sees)."""
        if constant not in self._constant_names:
            data = np.asarray(constant.data)
            if data.size >= _SPLAT_MIN_ELEMENTS and _is_splat(data):
                ctx = self.context(scope.root)
                fill = onnx.numpy_helper.from_array(data.reshape(-1)[:1])
                name = ctx.node("ConstantOfShape", [ctx.ints(data.shape)], value=fill)
            else:
                name = self.names.fresh("const")
                self.add_initializer(name, data)
            self._constant_names[constant] = name
        return self._constant_names[constant]

    def export(self, expr: Expr, scope: _Scope) -> Value:
        for node in self._order(expr, scope):
            scope.values[node] = self._emit(node, scope)
        return scope.find(expr)

    def _order(self, expr: Expr, scope: _Scope) -> list[Expr]:
        """Nodes not yet exported in `scope`, children first; If branches are left to subgraphs."""
        return list(post_order(expr, self._inputs, stop=lambda node: scope.find(node) is not None))

    @staticmethod
    def _inputs(node: Expr) -> tuple[Expr, ...]:
        if isinstance(node, Call) and not isinstance(node.op, Op):
            raise FrontendError(f"a call of a {type(node.op).__name__} (not an inlinable function) cannot be "
                                f"exported; only calls of ops and of function literals are supported")
        if isinstance(node, Function):
            raise FrontendError("a function value (one that is not called) cannot be exported")
        if isinstance(node, If):
            return (node.cond,)
        return children(node)

    def _emit(self, node: Expr, scope: _Scope) -> Value:
        if isinstance(node, Constant):
            return self.constant(node, scope)
        if isinstance(node, Var):
            raise FrontendError(f"variable %{node.name_hint} is not a parameter of main; it cannot be exported")
        if isinstance(node, Tuple):
            return tuple(scope.find(f) for f in node.fields)
        if isinstance(node, TupleGetItem):
            return scope.find(node.tuple_value)[node.index]
        if isinstance(node, If):
            return self._emit_if(node, scope)
        return self._emit_call(node, scope)

    def _emit_call(self, call: Call, scope: _Scope) -> Value:
        emitter = EMITTERS.get(call.op.name)
        if emitter is None:
            raise FrontendError(f"op {call.op.name} has no ONNX export")
        ctx = self.context(scope)
        args = [scope.find(a) for a in call.args]
        contrib = CONTRIB_EMITTERS.get(call.op.name) if self.contrib else None

        def emit(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
            value = contrib(ctx, call, args) if contrib is not None else None
            return emitter(ctx, call, args) if value is None else value
        try:
            blocked = export_nchwc.on_blocked_tensors(ctx, call, args, emit) if self.contrib else None
            return emit(ctx, call, args) if blocked is None else blocked
        except IRError as err:
            raise FrontendError(f"exporting {_describe(call)}: {err}") from None

    def _emit_if(self, node: If, scope: _Scope) -> Value:
        cond_type = node.cond.checked_type
        if not isinstance(cond_type, TensorType) or any(d != 1 for d in cond_type.shape):
            raise FrontendError(f"an If condition must hold one bool value to export, got {cond_type}")
        branches = []
        for name, branch in (("then", node.true_branch), ("else", node.false_branch)):
            child = _Scope(scope)
            results = _flatten(self.export(branch, child))
            outputs = [self.names.fresh(f"{name}_out") for _ in results]
            for result, out in zip(results, outputs):  # a subgraph output must be produced inside it
                child.nodes.append(onnx.helper.make_node("Identity", [result], [out], name=out))
            infos = [value_info(o, t) for o, t in zip(outputs, _flatten_type(branch.checked_type))]
            branches.append(onnx.helper.make_graph(child.nodes, self.names.fresh(f"{name}_branch"), [], infos))
        ctx = self.context(scope)
        count = len(_flatten_type(node.checked_type))
        outputs = ctx.node("If", [scope.find(node.cond)], outputs=count, then_branch=branches[0],
                           else_branch=branches[1])
        return _unflatten([outputs] if count == 1 else list(outputs), node.checked_type)


def _check_param(var: Var, value: np.ndarray) -> None:
    ty = var.checked_type
    if not types_compatible(TensorType(value.shape, value.dtype.name), ty):
        raise FrontendError(f"params[{var.name_hint!r}] has shape {value.shape} and dtype {value.dtype.name}, "
                            f"but the parameter is {ty}")


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    return [g for attr in node.attribute for g in (*([attr.g] if attr.HasField("g") else []), *attr.graphs)]


def _read_names(graph: onnx.GraphProto) -> set[str]:
    """The value names the nodes of `graph` read, subgraphs included."""
    return {name for node in graph.node for name in node.input}.union(
        *(_read_names(sub) for node in graph.node for sub in _subgraphs(node)))


def _drop_unread_views(nodes: list[onnx.NodeProto], views: Collection[str],
                       outputs: Sequence[str]) -> list[onnx.NodeProto]:
    """`nodes` without the view, relayout and bypassable nodes (`EmitContext.views`, `.relayouts`,
    `.bypassable`) whose value no node and no graph output reads, also once the nodes reading it are
    left out."""
    while True:
        read = set(outputs).union(*(_read_names(sub) for node in nodes for sub in _subgraphs(node)))
        read.update(name for node in nodes for name in node.input)
        kept = [node for node in nodes if not (len(node.output) == 1 and node.output[0] in views
                                               and node.output[0] not in read)]
        if len(kept) == len(nodes):
            return kept
        nodes = kept


def _domains(graph: onnx.GraphProto) -> set[str]:
    """The operator domains of the graph's nodes, subgraphs included."""
    return {node.domain for node in graph.node}.union(
        *(_domains(sub) for node in graph.node for sub in _subgraphs(node)))


def _named_as_imported(nodes: list[onnx.NodeProto], results: list[str], wanted: Sequence[str], inputs: Sequence[str],
                       initializers: Mapping[str, np.ndarray]) -> list[str]:
    """The graph's output names: those of the model the program was imported from (`ir.output_names`),
    the nodes that make them renamed in place, where there are as many, distinct, and no other value
    has one; else `results` as they are (a graph with subgraphs, which may read outer names, too)."""
    if len(wanted) != len(results) or len(set(wanted)) != len(wanted) or list(wanted) == results:
        return results
    taken = {n for node in nodes for n in (*node.input, *node.output)} | set(inputs) | set(initializers)
    if (set(wanted) - set(results)) & taken or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                                                   for node in nodes for a in node.attribute):
        return results
    renamed = dict(zip(results, wanted))
    for node in nodes:
        node.input[:] = [renamed.get(n, n) for n in node.input]
        node.output[:] = [renamed.get(n, n) for n in node.output]
    return list(wanted)


def to_onnx(mod: IRModule | Expr, params: Mapping[str, np.ndarray] | None = None, opset: int | None = None,
            name: str = "main", contrib: bool = False, check: bool = True,
            external: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """Export `mod["main"]` (or an expression) as an ONNX model checked by `onnx.checker` (unless not
    `check`: for a model that goes straight into ONNX Runtime, which checks what it loads).

    `external` (a dict, filled here) keeps the weights' data out of the model (initializers of 1 KiB
    or more): each becomes a reference to data held in memory and its array an entry of `external`,
    which an ONNX Runtime session takes as it is (`SessionOptions.add_external_initializers`); such
    a model is not checked.

    `params` maps parameter names to arrays (anything with `.numpy()` works too); those become
    initializers. `opset` defaults to 17, or to the first opset that writes each op of the program
    as one node where a newer one does (23 for attention and RMS norm); 13 to the newest the installed `onnx`
    defines are accepted. A tuple result becomes several graph outputs (nested tuples are flattened).
    `contrib=True` exports the fused forms as ONNX Runtime contrib ops where it can and imports
    the `com.microsoft` domain; such a model runs in ONNX Runtime only.
    """
    newest = onnx.defs.onnx_opset_version()
    if opset is not None and not OLDEST_EXPORT_OPSET <= opset <= newest:
        raise FrontendError(f"cannot export to opset {opset}: choose one from {OLDEST_EXPORT_OPSET} to {newest}")
    main = entry_function(mod)
    func = infer_type(Function(main.params, inline_bindings(main.body)))
    body = list(post_order(func.body))
    if opset is None:
        opset = min(newest, max([DEFAULT_OPSET] + [ONE_NODE_OPSETS.get(n.op.name, DEFAULT_OPSET) for n in body
                                                    if isinstance(n, Call) and isinstance(n.op, Op)]))
    values = {k: v.numpy() if hasattr(v, "numpy") and not isinstance(v, np.ndarray) else np.asarray(v)
              for k, v in (params or {}).items()}
    by_name = {p.name_hint: p for p in func.params}
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        raise FrontendError(f"params {unknown} are not parameters of main; its parameters are {sorted(by_name)}")

    readers = Counter(child for node in body for child in children(node))
    readers[func.body] += 1
    weights = {param: values[param.name_hint] for param in func.params if param.name_hint in values}
    exporter = _GraphExporter(opset, contrib, readers, ValueBounds(weights.get))
    root = _Scope()
    inputs = []
    defaulted = input_defaults(main)
    for param in func.params:
        exporter.names.reserve(param.name_hint)
        root.values[param] = param.name_hint
        if param.name_hint in values:
            _check_param(param, values[param.name_hint])
            exporter.add_initializer(param.name_hint, values[param.name_hint])
        if param.name_hint in values and param.name_hint not in defaulted:
            continue
        if isinstance(param.checked_type, TensorType):
            inputs.append(value_info(param.name_hint, param.checked_type))
        else:
            raise FrontendError(f"parameter %{param.name_hint} has type {param.checked_type}; "
                                f"graph inputs must be tensors")

    results = _flatten(exporter.export(func.body, root))
    produced = {n for node in root.nodes for n in node.output}
    output_names: list[str] = []
    for result in results:  # a graph output must be a node output, and each one distinct
        if result not in produced or result in output_names:
            renamed = exporter.names.fresh("output")
            root.nodes.append(onnx.helper.make_node("Identity", [result], [renamed], name=renamed))
            result = renamed
        output_names.append(result)
    output_names = _named_as_imported(root.nodes, output_names, output_names_of(main), [i.name for i in inputs],
                                      exporter.initializers)
    outputs = [value_info(n, t) for n, t in zip(output_names, _flatten_type(func.body.checked_type))]

    elidable = (exporter.views.keys() | exporter.relayouts.keys() | exporter.bypassable.keys()
                | exporter.head_splits.keys())
    graph = onnx.helper.make_graph(_drop_unread_views(root.nodes, elidable, output_names), name, inputs, outputs)
    opset_ids = [onnx.helper.make_opsetid("", opset)]
    ir_version = onnx.helper.find_min_ir_version_for(opset_ids)
    if contrib:
        opset_ids.append(onnx.helper.make_opsetid(CONTRIB_DOMAIN, CONTRIB_OPSET))
        if export_nchwc.NCHWC_DOMAIN in _domains(graph):
            opset_ids.append(onnx.helper.make_opsetid(export_nchwc.NCHWC_DOMAIN, CONTRIB_OPSET))
    model = onnx.helper.make_model(graph, opset_imports=opset_ids, producer_name="relay-eqsat",
                                   ir_version=ir_version)
    exporter.write_initializers(model.graph, external)
    legalize_types(model)  # ONNX's type constraints: a legal (widened) form, or a FrontendError naming the node
    try:
        if check and external is None:
            onnx.checker.check_model(model)
    except onnx.checker.ValidationError as err:
        raise FrontendError(f"the exported model does not pass onnx.checker: {err}") from None
    return model
