"""ONNX -> IR: `from_onnx(model)` gives a typed `IRModule` and the weights left as parameters.

    mod, params = from_onnx("resnet50.onnx", shape={"data": (1, 3, 224, 224)})
    print(mod["main"].astext())

Opsets 9 to the newest the installed `onnx` defines are read; each converter handles the
attribute-vs-input changes of its op across those opsets. An older model (ONNX's backend test data
is mostly opset 6) is first upgraded to opset 9 by `onnx.version_converter`.

Shape computations are folded while importing, whatever ops lie between `Shape` and the argument
they compute (`Gather`, `Concat`, `Cast`, arithmetic, `Where`, reductions, ...), so e.g. a `Reshape`
target becomes an attribute; a folded constant over `max_folded_bytes` is refused before it is
allocated. A `dim_param` becomes a size variable, and a shape over it a symbolic shape value
(`import_fold`): PyTorch's `x.view(x.size(0), -1)` over a batch `N` becomes a `reshape` to
`[0, -1]` of type `(N, ...)`. A shape that only values decide (`NonZero`, a target read from an
input) imports with run-time (`?`) dimensions through `shape_of`, `argwhere` and the `dyn.*` ops.

A model is checked as ONNX Runtime checks it: a value is defined once, nodes may come in any order
but form no cycle, and each node's inputs, outputs and attribute types follow its op's schema.
External tensor data is read only from files inside the model's folder (or `base_dir`).
"""

from __future__ import annotations

import difflib
import functools
import heapq
import os
from pathlib import Path
from typing import Callable, Collection, Iterator, Mapping, Sequence

import numpy as np
import onnx
from onnx import version_converter

from ..errors import IRError, TypeInferenceError
from ..expr import Constant, Expr, Function, Tuple, Var
from ..module import INPUT_DEFAULTS, OUTPUT_NAMES, IRModule
from ..type_infer import infer_type
from ..types import SizeVar, TensorType
from ..visitor import bind, free_vars
from . import import_control, import_elemwise, import_nn, import_tensor  # noqa: F401  (register converters)
from .errors import FrontendError
from .import_context import CONVERTERS, MAX_FOLDED_BYTES, NodeContext, TensorReader, TypeCache, node_label
from .import_dims import DimensionBuilder
from .onnx_types import tensor_type_of

__all__ = ["from_onnx", "load_model", "upgrade", "GraphImporter", "OLDEST_OPSET"]

OLDEST_OPSET = 9
_DEFAULT_DOMAINS = ("", "ai.onnx")
_ATTRIBUTE_TYPES = set(onnx.AttributeProto.AttributeType.values())


def load_model(model: onnx.ModelProto | str | os.PathLike | bytes) -> onnx.ModelProto:
    """A `ModelProto` from a proto, a file path or serialized bytes.

    Bytes or files that do not parse, or parse into something without a graph, raise
    `FrontendError` saying the model could not be parsed. The model is not run through
    `onnx.checker` (which rejects, e.g., outputs without a shape that ONNX Runtime accepts):
    a value that no node defines is reported when a node uses it. External tensor data is left
    where it is; `from_onnx` reads it when it needs the values.
    """
    if isinstance(model, onnx.ModelProto):
        proto, where = model, "the given ModelProto"
    elif isinstance(model, (bytes, bytearray, memoryview)):
        proto, where = _parse(bytes(model), "the given bytes"), "the given bytes"
    elif isinstance(model, (str, os.PathLike)):
        path = Path(model)
        where = f"file {str(path)!r}"
        proto = _parse(path.read_bytes(), where)
    else:
        raise TypeError(f"from_onnx takes an onnx.ModelProto, a path or bytes, got {type(model).__name__}")
    if not proto.HasField("graph") or not proto.graph.output:
        raise FrontendError(f"the ONNX model in {where} could not be parsed: it has no graph outputs")
    return proto


def _parse(data: bytes, where: str) -> onnx.ModelProto:
    try:
        return onnx.load_model_from_string(data)
    except Exception as err:  # protobuf raises DecodeError, and RuntimeError for some truncations
        raise FrontendError(f"the ONNX model in {where} could not be parsed: {err}") from None


def _default_opset(proto: onnx.ModelProto) -> int:
    versions = [o.version for o in proto.opset_import if o.domain in _DEFAULT_DOMAINS]
    if not versions:
        raise FrontendError("the model imports no version of the default ONNX domain (opset_import is empty)")
    opset, newest = versions[0], onnx.defs.onnx_opset_version()
    if not 1 <= opset <= newest:
        raise FrontendError(f"opset {opset} is not supported: this importer reads opsets 1 to {newest} "
                            f"(below {OLDEST_OPSET} upgraded with onnx.version_converter)")
    return opset


def upgrade(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`proto` itself at opset `OLDEST_OPSET` or newer, else a copy upgraded to it by
    `onnx.version_converter`; a failed conversion names the op(s) that could not be converted."""
    opset = _default_opset(proto)
    if opset >= OLDEST_OPSET:
        return proto
    typed = _with_value_infos(proto)
    if opset < 7:
        _channel_slopes(typed)
    try:
        upgraded = version_converter.convert_version(typed, OLDEST_OPSET)
    except Exception as err:  # the converter raises RuntimeError or ValueError with its C++ assertion text
        ops = _unconvertible_ops(typed, opset)
        which = f"op(s) {', '.join(ops)}" if ops else "the model"
        raise FrontendError(f"cannot upgrade {which} from opset {opset} to opset {OLDEST_OPSET} "
                            f"(onnx.version_converter: {str(err).strip().splitlines()[-1]})") from None
    declared = {value.name for value in proto.graph.input}
    kept = [value for value in upgraded.graph.input if value.name in declared]
    del upgraded.graph.input[:]
    upgraded.graph.input.extend(kept)
    return upgraded


def _with_value_infos(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `proto` whose initializers are also graph inputs (the converter requires that of old
    models) and whose intermediate values carry the types shape inference finds."""
    typed = onnx.ModelProto()
    typed.CopyFrom(proto)
    declared = {value.name for value in typed.graph.input}
    typed.graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                             for t in typed.graph.initializer if t.name not in declared)
    try:
        return onnx.shape_inference.infer_shapes(typed)
    except Exception:  # noqa: BLE001 (the converter reports what is wrong with the model)
        return typed


def _channel_slopes(typed: onnx.ModelProto) -> None:
    """Give each PRelu a slope that broadcasts as before opset 7, where a 1-D slope (an initializer)
    ran along the channel axis (1); the version converter leaves the slope as it is."""
    graph = typed.graph
    ranks = {v.name: len(v.type.tensor_type.shape.dim) for v in [*graph.input, *graph.value_info]
             if v.type.tensor_type.HasField("shape")}
    initializers = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type != "PRelu" or len(node.input) < 2:
            continue
        slope, rank = initializers.get(node.input[1]), ranks.get(node.input[0], 0)
        if slope is None or len(slope.dims) != 1 or slope.dims[0] == 1 or rank < 3:
            continue
        values = onnx.numpy_helper.to_array(slope).reshape((-1,) + (1,) * (rank - 2))
        channel = onnx.numpy_helper.from_array(values, f"{slope.name}_per_channel")
        if channel.name not in initializers:
            graph.initializer.append(channel)
            graph.input.append(onnx.helper.make_tensor_value_info(channel.name, channel.data_type, channel.dims))
            initializers[channel.name] = channel
        node.input[1] = channel.name


def _unconvertible_ops(typed: onnx.ModelProto, opset: int) -> list[str]:
    """The op types of `typed` whose nodes, each alone in a model with its inputs' types, the version
    converter refuses."""
    graph = typed.graph
    infos = {value.name: value for value in [*graph.input, *graph.value_info, *graph.output]}
    failing: list[str] = []
    for node in graph.node:
        if node.op_type in failing:
            continue
        inputs, outputs = ([infos.get(n) or onnx.helper.make_empty_tensor_value_info(n) for n in names if n]
                           for names in (node.input, node.output))
        model = onnx.helper.make_model(onnx.helper.make_graph([node], "node", inputs, outputs),
                                       opset_imports=[onnx.helper.make_opsetid("", opset)])
        try:
            version_converter.convert_version(model, OLDEST_OPSET)
        except Exception:  # noqa: BLE001 (any refusal marks the op)
            failing.append(node.op_type)
    return failing


@functools.lru_cache(maxsize=None)
def _schema(op_type: str, opset: int, domain: str) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None


def _check_schema(node: onnx.NodeProto, opset: int) -> None:
    """Check a node's input and output counts and its attributes (names, types, required ones) against
    its op's schema at `opset`, as ONNX Runtime does before running a model."""
    schema = _schema(node.op_type, opset, "")
    if schema is None:
        raise FrontendError(f"ONNX op {node.op_type} does not exist in opset {opset}")
    for what, count, low, high in (("inputs", len(node.input), schema.min_input, schema.max_input),
                                   ("outputs", len(node.output), schema.min_output, schema.max_output)):
        if not low <= count <= high:
            bound = f"{low}" if low == high else f"{low} to {high}"
            raise FrontendError(f"{node.op_type} takes {bound} {what}, got {count}")
    seen: set[str] = set()
    for attr in node.attribute:
        spec = schema.attributes.get(attr.name)
        if spec is None:
            raise FrontendError(f"{node.op_type} has no attribute {attr.name!r} "
                                f"(its attributes: {', '.join(sorted(schema.attributes)) or 'none'})")
        if attr.name in seen:
            raise FrontendError(f"attribute {attr.name!r} is given twice")
        seen.add(attr.name)
        if attr.type != spec.type:
            given = onnx.AttributeProto.AttributeType.Name(attr.type) if attr.type in _ATTRIBUTE_TYPES else attr.type
            raise FrontendError(f"attribute {attr.name!r} must be of type {spec.type.name}, got {given}")
    missing = sorted(name for name, spec in schema.attributes.items() if spec.required and name not in seen)
    if missing:
        raise FrontendError(f"required attribute(s) {missing} are missing")


def _subgraphs(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    for attr in node.attribute:
        if attr.HasField("g"):
            yield attr.g
        yield from attr.graphs


def _used_names(node: onnx.NodeProto) -> Iterator[str]:
    """The values a node reads: its inputs, and the outer values its subgraphs use."""
    yield from (name for name in node.input if name)
    for graph in _subgraphs(node):
        inside = {v.name for v in graph.input} | {t.name for t in graph.initializer}
        inside.update(out for n in graph.node for out in n.output)
        yield from {name for n in graph.node for name in _used_names(n)} - inside


def _check_definitions(graph: onnx.GraphProto, outer: Callable[[str], bool]) -> None:
    """Refuse a value defined twice in `graph` (by graph inputs, initializers or node outputs), or
    one that shadows a value `outer` (the enclosing graphs) defines."""
    owners: dict[str, str] = {}

    def define(name: str, owner: str) -> None:
        first = owners.get(name) or ("a value of the enclosing graph" if outer(name) else None)
        if first is not None:
            raise FrontendError(f"value {name!r} is defined twice: by {first} and by {owner}; a value must be "
                                f"defined once (ONNX Runtime rejects such a model)")
        owners[name] = owner

    for value in graph.input:
        define(value.name, f"graph input {value.name!r}")
    initializers: set[str] = set()
    for tensor in graph.initializer:  # an initializer may give a graph input its default value
        if tensor.name in initializers or tensor.name not in owners:
            define(tensor.name, f"initializer {tensor.name!r}")
        initializers.add(tensor.name)
    for node in graph.node:
        for name in node.output:
            if name:
                define(name, node_label(node))


def _ordered(nodes: Sequence[onnx.NodeProto]) -> list[onnx.NodeProto]:
    """`nodes` ordered so that each comes after the nodes whose outputs it uses, in the given order
    where that allows; a cycle is an error that names its nodes."""
    producer = {name: i for i, node in enumerate(nodes) for name in node.output if name}
    deps = [{producer[name] for name in _used_names(node) if name in producer} for node in nodes]
    users: list[list[int]] = [[] for _ in nodes]
    for i, dep in enumerate(deps):
        for j in dep:
            users[j].append(i)
    waiting = [len(dep) for dep in deps]
    ready = [i for i, count in enumerate(waiting) if count == 0]
    order: list[onnx.NodeProto] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(nodes[i])
        for user in users[i]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) == len(nodes):
        return order
    path: list[int] = []  # every node left waits on another left: walking those finds a cycle
    at: dict[int, int] = {}
    i = next(i for i, count in enumerate(waiting) if count)
    while i not in at:
        at[i] = len(path)
        path.append(i)
        i = min(j for j in deps[i] if waiting[j])
    cycle = path[at[i]:]
    steps = []
    for k, user in enumerate(cycle):
        source = cycle[(k + 1) % len(cycle)]
        name = next(n for n in _used_names(nodes[user]) if producer.get(n) == source)
        steps.append(f"{node_label(nodes[user])} uses {name!r} from {node_label(nodes[source])}")
    raise FrontendError(f"the graph has a cycle: {', '.join(steps)}")


class _Unavailable:
    """An ONNX output the converter does not produce (e.g. a training-only statistic)."""

    def __init__(self, node: str, index: int):
        self.node, self.index = node, index


class GraphImporter:
    """Converts the nodes of one ONNX graph, in order; subgraphs (If branches) get a child importer
    that sees the values of its parent."""

    def __init__(self, opset: int, types: TypeCache, param_values: dict[Var, np.ndarray], reader: TensorReader,
                 max_folded_bytes: int = MAX_FOLDED_BYTES, parent: "GraphImporter | None" = None):
        self.opset = opset
        self.types = types
        self.param_values = param_values  # unfrozen initializers: read where a static value is needed
        self.reader = reader
        self.max_folded_bytes = max_folded_bytes
        self.parent = parent
        self.values: dict[str, Expr | _Unavailable] = {}
        self.inputs: list[Var] = []  # the graph inputs (of the outermost graph)
        #: placeholder -> (symbolic shape value, the node that computed it); shared with subgraphs
        self.symbolic_values: dict[Var, tuple[np.ndarray, str]] = parent.symbolic_values if parent else {}

    def defines(self, name: str) -> bool:
        """Whether this graph or an enclosing one has defined `name` so far."""
        scope: GraphImporter | None = self
        while scope is not None:
            if name in scope.values:
                return True
            scope = scope.parent
        return False

    def lookup(self, name: str) -> Expr:
        scope: GraphImporter | None = self
        while scope is not None:
            value = scope.values.get(name)
            if isinstance(value, _Unavailable):
                raise FrontendError(f"value {name!r} (output {value.index} of node {value.node!r}) is not "
                                    f"supported: only the outputs an inference graph computes are")
            if value is not None:
                return value
            scope = scope.parent
        raise FrontendError(f"value {name!r} is used but never defined")

    def static_value(self, expr: Expr) -> np.ndarray | None:
        """The value of a constant, of an unfrozen initializer or of a symbolic shape value, else None."""
        if isinstance(expr, Constant):
            return np.asarray(expr.data)
        if isinstance(expr, Var):
            if expr in self.symbolic_values:
                return self.symbolic_values[expr][0]
            return self.param_values.get(expr)
        return None

    def foldable_value(self, expr: Expr) -> np.ndarray | None:
        """The value constant folding may use: a constant's, a symbolic shape value, or an unfrozen
        integer initializer's (those feed shape computations; floating-point weights stay parameters)."""
        value = self.static_value(expr)
        if value is None or isinstance(expr, Constant) or value.dtype.kind in "biuO":
            return value
        return None

    def dimension_source(self, dim: SizeVar) -> tuple[Var, int] | None:
        """The graph input, and its axis, that first declares size variable `dim`."""
        root = self
        while root.parent is not None:
            root = root.parent
        for var in root.inputs:
            for axis, d in enumerate(var.type_annotation.shape):
                if d == dim:
                    return var, axis
        return None

    def symbolic_value(self, value: np.ndarray, dtype: str, origin: str) -> Var:
        """A placeholder of integer `dtype` standing for symbolic shape value `value`, which `origin`
        (a node) computed."""
        placeholder = Var(f"shape_value{len(self.symbolic_values)}", TensorType(value.shape, dtype))
        self.symbolic_values[placeholder] = (value, origin)
        return placeholder

    def materialize_symbolic_values(self, body: Expr) -> Expr:
        """`body` with each symbolic shape value it uses as run-time data computed from the graph
        inputs' shapes (`shape_of` and int64 arithmetic) instead of its placeholder."""
        used = [v for v in free_vars(body) if v in self.symbolic_values]
        if not used:
            return body
        builder = DimensionBuilder(self.dimension_source)
        binds = {}
        for placeholder in used:
            value, origin = self.symbolic_values[placeholder]
            try:
                binds[placeholder] = builder.value(value, placeholder.type_annotation.dtype)
            except FrontendError as err:
                raise FrontendError(f"{err} (the shape value computed by {origin})") from None
        return bind(body, binds)

    def add_initializers(self, graph: onnx.GraphProto, freeze: bool,
                         defaults: Collection[str] = ()) -> dict[str, Var]:
        """Initializers as constants, or (`freeze=False`) as parameters; returns those parameters. The
        initializers named in `defaults` give graph inputs their default values and are skipped."""
        if graph.sparse_initializer:
            raise FrontendError(f"sparse initializers are not supported ({graph.sparse_initializer[0].values.name!r})")
        params: dict[str, Var] = {}
        for tensor in graph.initializer:
            if tensor.name in defaults:
                continue
            value = self.reader.array(tensor, f"initializer {tensor.name!r}")
            if freeze:
                self.values[tensor.name] = Constant(value)
            else:
                param = Var(tensor.name, TensorType(value.shape, value.dtype.name))
                params[tensor.name] = param
                self.param_values[param] = value
                self.values[tensor.name] = param
        return params

    def convert_nodes(self, graph: onnx.GraphProto) -> list[Expr]:
        """Convert every node, after checking that each value is defined once and that the nodes form
        no cycle; returns the graph's outputs."""
        _check_definitions(graph, self.parent.defines if self.parent else lambda name: False)
        for node in _ordered(graph.node):
            self.convert(node)
        return [self.lookup(out.name) for out in graph.output]

    def import_subgraph(self, graph: onnx.GraphProto) -> list[Expr]:
        """The outputs of a subgraph (an If branch) that takes no inputs of its own."""
        if graph.input:
            raise FrontendError(f"subgraph {graph.name!r} has inputs {[v.name for v in graph.input]}; "
                                f"only If branches (which take none) are supported")
        child = GraphImporter(self.opset, self.types, self.param_values, self.reader, self.max_folded_bytes, self)
        child.add_initializers(graph, freeze=True)
        return child.convert_nodes(graph)

    def convert(self, node: onnx.NodeProto) -> None:
        ctx = NodeContext(self, node, self.opset)
        fn = CONVERTERS.get(node.op_type) if node.domain in _DEFAULT_DOMAINS else None
        if fn is None:
            op = node.op_type if node.domain in _DEFAULT_DOMAINS else f"{node.domain}.{node.op_type}"
            close = difflib.get_close_matches(node.op_type, CONVERTERS, n=3) if node.domain in _DEFAULT_DOMAINS else []
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise FrontendError(f"unsupported ONNX op {op!r} in node {ctx.name!r} (opset {self.opset}){hint}")
        try:
            _check_schema(node, self.opset)
            result = fn(ctx)
        except TypeInferenceError as err:
            raise TypeInferenceError(f"{ctx.describe()}: {err}") from None
        except IRError as err:  # FrontendError, and attribute checks of the IR builders
            raise FrontendError(f"{ctx.describe()}: {err}") from None
        outputs = [result] if isinstance(result, Expr) else list(result)
        for index, name in enumerate(node.output):
            if name:
                self.values[name] = outputs[index] if index < len(outputs) else _Unavailable(ctx.name, index)


def _defaults(proto: onnx.ModelProto, reader: TensorReader) -> dict[str, np.ndarray]:
    """Graph input name -> its default value: the initializer of the same name. Since IR version 4 an
    initializer need not be a graph input, and one that is gives an input a caller may override;
    before it, every initializer had to be listed as an input, so such a pair is a weight."""
    if proto.ir_version < 4:
        return {}
    declared = {value.name for value in proto.graph.input}
    return {t.name: reader.array(t, f"initializer {t.name!r} (the default of graph input {t.name!r})")
            for t in proto.graph.initializer if t.name in declared}


def _input_vars(graph: onnx.GraphProto, shape: Mapping[str, Sequence] | None,
                defaults: Mapping[str, np.ndarray]) -> list[Var]:
    """The graph inputs as variables; one with a default value and no declared shape takes the default's."""
    initialized = {t.name for t in graph.initializer} - set(defaults)
    inputs = [v for v in graph.input if v.name not in initialized]
    overrides = dict(shape or {})
    unknown = sorted(set(overrides) - {v.name for v in inputs})
    if unknown:
        raise FrontendError(f"shape= names {unknown}, which are not graph inputs; the inputs are "
                            f"{[v.name for v in inputs]}")
    for value in inputs:
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim if d.HasField("dim_value")]
        if value.name not in overrides and any(d < 0 for d in dims):
            raise FrontendError(f"graph input {value.name!r} declares a negative dimension ({dims}); "
                                f"give its shape with shape={{{value.name!r}: (...)}}")
    for name, value in defaults.items():
        overrides.setdefault(name, None if _has_shape(graph, name) else value.shape)
    variables = [Var(value.name, tensor_type_of(value, overrides.get(value.name))) for value in inputs]
    for var in variables:
        if var.name_hint in defaults:
            _check_default(var, defaults[var.name_hint])
    return variables


def _has_shape(graph: onnx.GraphProto, name: str) -> bool:
    value = next(v for v in graph.input if v.name == name)
    return value.type.tensor_type.HasField("shape")


def _check_default(var: Var, value: np.ndarray) -> None:
    """Refuse a default value whose dtype or shape does not fit the input's declared type."""
    ty = var.type_annotation
    fits = ty.dtype == value.dtype.name and len(ty.shape) == value.ndim and all(
        not isinstance(d, (int, np.integer)) or d == n for d, n in zip(ty.shape, value.shape))
    if not fits:
        raise FrontendError(f"graph input {var.name_hint!r} is declared {ty}, but its default value (the initializer "
                            f"of the same name) has shape {list(value.shape)} and dtype {value.dtype.name}")


def from_onnx(model: onnx.ModelProto | str | os.PathLike | bytes, shape: Mapping[str, Sequence] | None = None,
              freeze_params: bool = True, base_dir: str | os.PathLike | None = None,
              max_folded_bytes: int = MAX_FOLDED_BYTES) -> tuple[IRModule, dict[str, np.ndarray]]:
    """Import an ONNX model as an `IRModule` whose `main` is typed; returns `(mod, params)`.

    `model` is a `ModelProto`, a path or serialized bytes. `shape` overrides input shapes by
    name; otherwise a `dim_param` becomes `ir.SizeVar(name)` and an unknown dim `ir.Any`. With
    `freeze_params` (default) initializers become constants and `params` is empty; without it they
    become parameters of `main` after the graph inputs, with their values in `params`. Integer
    initializers feed shape computations, so those fold even unfrozen; one only read that way
    (e.g. a `Reshape` target) is left out of `main` and `params`. `main`
    returns the single graph output, or a tuple of them. Failures raise before anything is returned.
    A graph input that an initializer also defines (IR version 4 or newer) stays an input of `main`,
    named in its `ir.INPUT_DEFAULTS` attribute, with the initializer, its default value, in `params`.

    External tensor data is read from files inside `base_dir`, which defaults to the model file's
    folder; a model given as bytes or a `ModelProto` needs `base_dir` to use external data. A path
    that leads outside that folder (`..`, absolute, a symlink) is refused. Constants folded at
    import may be at most `max_folded_bytes` large.
    """
    proto = upgrade(load_model(model))
    if base_dir is None and isinstance(model, (str, os.PathLike)):
        base_dir = Path(model).parent
    reader = TensorReader(base_dir)
    importer = GraphImporter(_default_opset(proto), TypeCache(), {}, reader, max_folded_bytes)
    defaults = _defaults(proto, reader)
    inputs = importer.inputs = _input_vars(proto.graph, shape, defaults)
    for var in inputs:
        importer.values[var.name_hint] = var
    weights = importer.add_initializers(proto.graph, freeze_params, defaults)
    outputs = importer.convert_nodes(proto.graph)
    body = outputs[0] if len(outputs) == 1 else Tuple(outputs)
    body = importer.materialize_symbolic_values(body)
    used = {id(v) for v in free_vars(body)}
    weight_params = [v for v in weights.values() if id(v) in used]
    attrs = {OUTPUT_NAMES: tuple(o.name for o in proto.graph.output),
             **({INPUT_DEFAULTS: tuple(defaults)} if defaults else {})}
    func = Function(inputs + weight_params, body, attrs=attrs)
    mod = infer_type(IRModule({"main": func}))
    params = {**defaults, **{v.name_hint: importer.param_values[v] for v in weight_params}}
    return mod, params
