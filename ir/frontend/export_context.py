"""What an op emitter sees while exporting: ONNX node and constant builders for one IR call.

An emitter is a function `(ctx, call, args) -> Value` registered for IR op names with
`@emits("nn.conv2d", ...)`. `args` holds the ONNX value of each argument of `call`: a name for a
tensor, a tuple of values for a tuple (e.g. the fields of `concatenate`'s input). It appends ONNX
nodes through `ctx.node` and returns the value of the call.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple, Sequence, Union

import numpy as np
import onnx

from ..expr import Call, Expr
from ..types import TensorType, is_static
from ..value_bounds import ValueBounds
from .errors import FrontendError
from .onnx_types import elem_of_dtype

__all__ = ["Value", "Emitter", "EMITTERS", "ONE_NODE_OPSETS", "emits", "Names", "EmitContext", "CONTRIB_DOMAIN",
           "Relayout", "HeadSplit"]

Value = Union[str, tuple["Value", ...]]
Emitter = Callable[["EmitContext", Call, Sequence[Value]], Value]


class Relayout(NamedTuple):
    """A value that is `base` (of static shape `shape`) after static `steps`: ("reshape", new shape) or
    ("transpose", perm), in order. Tracked only for values of at most `MAX_ELEMENTS` elements."""

    base: str
    shape: tuple[int, ...]
    steps: tuple[tuple[str, tuple[int, ...]], ...] = ()

    #: the most elements a tracked value has (its positions are an int32 array of that size at export)
    MAX_ELEMENTS = 1 << 22

    def then(self, kind: str, arg: Sequence[int]) -> "Relayout":
        return self._replace(steps=self.steps + ((kind, tuple(int(a) for a in arg)),))

    def positions(self) -> np.ndarray:
        """Where in `base` (flat, row-major) each element of the value comes from."""
        out = np.arange(int(np.prod(self.shape)), dtype=np.int32).reshape(self.shape)
        for kind, arg in self.steps:
            out = out.reshape(arg) if kind == "reshape" else out.transpose(arg)
        return out

    def is_plain_reshape(self) -> bool:
        """Whether the value holds `base`'s elements in their order: a reshape of it, no copy."""
        if all(kind == "reshape" for kind, _ in self.steps):
            return True
        positions = self.positions()
        return bool(np.array_equal(positions.reshape(-1), np.arange(positions.size)))


class HeadSplit(NamedTuple):
    """A (batch, heads, sequence, size) value whose rows are known only when the model runs, made from the
    (batch, sequence, heads x size) value `tokens` by `split` (a Reshape to (batch, sequence, heads,
    size)) and a Transpose of `split`'s sequence and head axes."""

    tokens: str
    split: str
    heads: int
    size: int


#: IR op name -> emitter
EMITTERS: dict[str, Emitter] = {}
#: IR op name -> the first opset that writes it as one node, where an older one spells it out;
#: `to_onnx` without an explicit opset rises to the largest the program needs
ONE_NODE_OPSETS: dict[str, int] = {}

#: the operator domain of ONNX Runtime's contrib ops (`FusedConv`, `SkipLayerNormalization`, ...)
CONTRIB_DOMAIN = "com.microsoft"


def emits(*op_names: str) -> Callable[[Emitter], Emitter]:
    """Register the decorated function as the emitter of IR ops `op_names`."""
    def register(fn: Emitter) -> Emitter:
        for name in op_names:
            if name in EMITTERS:
                raise ValueError(f"IR op {name} already has an emitter")
            EMITTERS[name] = fn
        return fn
    return register


class Names:
    """Unique ONNX value names across a model and its subgraphs; `fresh("Conv")` -> `Conv_0`, ..."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._counters: dict[str, int] = {}

    def reserve(self, name: str) -> None:
        if name in self._used:
            raise FrontendError(f"two graph inputs or parameters are named {name!r}; ONNX names must be unique")
        self._used.add(name)

    def fresh(self, base: str) -> str:
        while True:
            index = self._counters.get(base, 0)
            self._counters[base] = index + 1
            name = f"{base}_{index}"
            if name not in self._used:
                self._used.add(name)
                return name


class EmitContext:
    """Builds the ONNX nodes of one IR call into the node list of the current (sub)graph."""

    def __init__(self, opset: int, names: Names, nodes: list[onnx.NodeProto],
                 add_constant: Callable[[np.ndarray], str],
                 constant_value: Callable[[str], np.ndarray | None] = lambda name: None,
                 views: dict[str, str] | None = None, relayouts: dict[str, Relayout] | None = None,
                 bypassable: dict[str, str] | None = None, readers: Mapping[Expr, int] | None = None,
                 head_splits: dict[str, HeadSplit] | None = None, shared: dict[tuple, str] | None = None,
                 bounds: ValueBounds | None = None):
        self.opset = opset
        self.names = names
        self.nodes = nodes
        self._add_constant = add_constant
        self._constant_value = constant_value
        #: value -> the earlier value it reshapes without copying (shared by the whole export): an emitter
        #: that can read either takes the earlier one, and a view node that nothing reads is left out
        self.views: dict[str, str] = {} if views is None else views
        #: value -> the earlier value it rearranges by static reshapes and transposes only, that value's
        #: shape and the steps (`Relayout`); shared by the whole export. A reshape or transpose that
        #: undoes such steps reshapes the earlier value instead, and a relayout node that nothing reads
        #: is left out of the model
        self.relayouts: dict[str, Relayout] = {} if relayouts is None else relayouts
        #: value -> the value the node that made it reads, where a later node may read that one and do
        #: the node's work itself (ReorderInput pads channels with zeros, ReorderOutput crops them);
        #: shared by the whole export, and such a node that nothing reads is left out of the model
        self.bypassable: dict[str, str] = {} if bypassable is None else bypassable
        #: expression -> how many expressions (and graph outputs) of the exported function read it; an
        #: emitter may change the node that computes a value only one reader reads
        self.readers: Mapping[Expr, int] = {} if readers is None else readers
        #: a head-split value and its `split` -> how it was made (`HeadSplit`); shared by the whole export.
        #: A Transpose back and a Reshape merging the heads read `split` and `tokens` instead, and such a
        #: node that nothing reads is left out of the model
        self.head_splits: dict[str, HeadSplit] = {} if head_splits is None else head_splits
        #: (the (sub)graph's node list, op, inputs, attributes) -> the value `shared_node` made for them
        self.shared: dict[tuple, str] = {} if shared is None else shared
        #: bounds of the program's values (`ir.value_bounds`): which guards a kernel can do without
        self.bounds = ValueBounds() if bounds is None else bounds

    def node(self, op_type: str, inputs: Sequence[str], outputs: int = 1, domain: str = "", **attrs: Any) -> Any:
        """Append an ONNX node of `domain` (default: the standard one); returns its output name, or a
        list of names when `outputs` > 1. An input named '' is an omitted optional input; attributes
        given as None are left out."""
        out_names = [self.names.fresh(op_type) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(onnx.helper.make_node(op_type, list(inputs), out_names, name=out_names[0],
                                                domain=domain or None, **attrs))
        return out_names[0] if outputs == 1 else out_names

    def shared_node(self, op_type: str, inputs: Sequence[str], **attrs: Any) -> str:
        """`node` of a standard op with one output and no side effects, made once per (sub)graph for the
        same inputs and attributes (e.g. the rotary caches that Q's and K's kernels both read)."""
        key = (id(self.nodes), op_type, tuple(inputs), repr(sorted(attrs.items())))
        if key not in self.shared:
            self.shared[key] = self.node(op_type, inputs, **attrs)
        return self.shared[key]

    def producer(self, value: Value) -> onnx.NodeProto | None:
        """The node of the current (sub)graph that computes `value`; None for an input, a constant or a tuple."""
        if isinstance(value, str):
            for node in reversed(self.nodes):
                if value in node.output:
                    return node
        return None

    def transposed(self, value: Value) -> tuple[str, list[int]] | None:
        """(its input, its perm) where `value` is the output of a Transpose node; else None."""
        node = self.producer(value)
        if node is None or node.op_type != "Transpose":
            return None
        return node.input[0], next((list(a.ints) for a in node.attribute if a.name == "perm"), [])

    def const(self, value: Any, dtype: str | None = None) -> str:
        """The name of an initializer holding `value` (small equal constants are shared)."""
        arr = np.asarray(value) if dtype is None else np.asarray(value).astype(dtype)
        return self._add_constant(arr)

    def value_of(self, name: Value) -> np.ndarray | None:
        """The array an initializer named `name` holds (a weight, a constant); None for a computed value."""
        return self._constant_value(name) if isinstance(name, str) else None

    def gemm_weight(self, weight: Value) -> tuple[Value, int]:
        """A `Gemm`'s B for the (units, depth) weight `weight`, and its `transB`: where the weight's
        array is a transposed view of a (depth, units) one (an imported MatMul's weight), that array
        as it is (transB 0: no transposed copy is written); else the weight itself (transB 1)."""
        value = self.value_of(weight)
        if value is not None and value.ndim == 2 and not value.flags.c_contiguous and value.T.flags.c_contiguous:
            return self.const(value.T), 0
        return weight, 1

    def ints(self, values: Sequence[int]) -> str:
        """A 1-D int64 initializer, the form ONNX takes shapes, axes and pads in."""
        return self.const(np.asarray(list(values), dtype="int64").reshape(-1))

    @staticmethod
    def type_of(expr: Expr) -> TensorType:
        ty = expr.checked_type
        if not isinstance(ty, TensorType):
            raise FrontendError(f"expected a tensor argument, got a value of type {ty}")
        return ty

    def static_shape(self, expr: Expr, what: str) -> tuple[int, ...]:
        ty = self.type_of(expr)
        if not is_static(ty.shape):
            raise FrontendError(f"{what} needs a static shape, but the argument has shape {ty.shape_str()}")
        return ty.concrete_shape

    @staticmethod
    def elem(dtype: str) -> int:
        return elem_of_dtype(dtype, "cast")
