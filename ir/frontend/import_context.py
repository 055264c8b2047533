"""What an ONNX op converter sees: the node, its attributes and inputs, and typed IR builders.

A converter is a function `NodeContext -> Expr | Sequence[Expr]` (one expression per ONNX output it
supports), registered for one or more op types with `@converter("Relu", ...)`. Every call it builds
through `ctx.call` is typed at once, so a shape error surfaces while the culprit node is known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import onnx

from ..expr import Call, Constant, Expr, If, Tuple, TupleGetItem, Var
from ..op.registry import Op, make_call
from ..type_infer import infer_type
from ..types import TensorType, TupleType, Type, is_static
from .errors import FrontendError
from .onnx_types import array_of

if TYPE_CHECKING:
    from .onnx_import import GraphImporter

__all__ = ["NodeContext", "Converter", "CONVERTERS", "converter", "TypeCache"]

Converter = Callable[["NodeContext"], "Expr | Sequence[Expr]"]

#: ONNX op type (default domain) -> converter
CONVERTERS: dict[str, Converter] = {}


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of `op_types`."""
    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            if op_type in CONVERTERS:
                raise ValueError(f"ONNX op {op_type} already has a converter")
            CONVERTERS[op_type] = fn
        return fn
    return register


class TypeCache:
    """Types of the IR nodes built during one import, each computed once from its inputs' types.

    `ir.infer_type` walks a whole graph; calling it per node would make import quadratic. Here a
    call is typed by running `ir.infer_type` on a copy whose arguments are fresh variables of the
    arguments' known types, so the error (if any) is exactly the one `ir.infer_type` gives.
    """

    def __init__(self) -> None:
        self._types: dict[Expr, Type] = {}

    def type_of(self, expr: Expr) -> Type:
        ty = self._types.get(expr)
        if ty is None:
            ty = self._compute(expr)
            self._types[expr] = ty
        return ty

    def _compute(self, expr: Expr) -> Type:
        if isinstance(expr, Var):
            if expr.type_annotation is None:
                raise FrontendError(f"variable {expr.name_hint!r} has no type")
            return expr.type_annotation
        if isinstance(expr, Constant):
            return TensorType(expr.shape, expr.dtype)
        if isinstance(expr, Call) and isinstance(expr.op, Op):
            stand_ins = [Var(f"arg{i}", self.type_of(a)) for i, a in enumerate(expr.args)]
            return infer_type(Call(expr.op, stand_ins, expr.attrs)).checked_type
        if isinstance(expr, Tuple):
            return TupleType([self.type_of(f) for f in expr.fields])
        if isinstance(expr, TupleGetItem):
            tuple_type = self.type_of(expr.tuple_value)
            if not isinstance(tuple_type, TupleType) or not 0 <= expr.index < len(tuple_type.fields):
                raise FrontendError(f"item {expr.index} of a value of type {tuple_type}")
            return tuple_type.fields[expr.index]
        if isinstance(expr, If):
            return self.type_of(expr.true_branch)
        raise FrontendError(f"cannot type a {type(expr).__name__} during import")


_MISSING = object()


def _attribute_value(attr: onnx.AttributeProto, where: str) -> Any:
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return array_of(value, f"{where} attribute {attr.name!r}")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8") for v in value]
    return value


class NodeContext:
    """One ONNX node under conversion: its attributes, inputs, opset and typed IR builders."""

    def __init__(self, graph: "GraphImporter", node: onnx.NodeProto, opset: int):
        self.graph = graph
        self.node = node
        self.opset = opset
        self.op_type = node.op_type
        self.name = node.name or (node.output[0] if node.output else node.op_type)
        self._attrs = {a.name: a for a in node.attribute}

    def describe(self) -> str:
        """How error messages name this node."""
        return f"node {self.name!r} ({self.op_type}, opset {self.opset})"

    # -- attributes -----------------------------------------------------------------------------
    def attr(self, key: str, default: Any = _MISSING) -> Any:
        """An attribute as a Python value (strings decoded, tensors as numpy arrays)."""
        if key in self._attrs:
            return _attribute_value(self._attrs[key], self.describe())
        if default is _MISSING:
            raise FrontendError(f"required attribute {key!r} is missing")
        return default

    def has_attr(self, key: str) -> bool:
        return key in self._attrs

    def unsupported(self, key: str, value: Any, supported: str) -> FrontendError:
        """The error for an attribute value the converter cannot express."""
        return FrontendError(f"attribute {key}={value!r} is not supported ({supported})")

    # -- inputs and outputs ---------------------------------------------------------------------
    def has_input(self, index: int) -> bool:
        """Whether optional input `index` is given (ONNX leaves out trailing ones, or names them '')."""
        return index < len(self.node.input) and self.node.input[index] != ""

    def input(self, index: int) -> Expr:
        if not self.has_input(index):
            raise FrontendError(f"required input {index} is missing")
        return self.graph.lookup(self.node.input[index])

    def inputs(self) -> list[Expr]:
        """Every given input, in order."""
        return [self.graph.lookup(name) for name in self.node.input if name]

    def static_input(self, index: int, what: str) -> np.ndarray:
        """The value of input `index` (`what` it gives, for the error), which must be known at import."""
        value = self.graph.static_value(self.input(index))
        if value is None:
            raise FrontendError(f"input {index} ({self.node.input[index]!r}, the {what}) must be a constant "
                                f"or computable from constants, but it depends on graph inputs")
        return value

    def optional_static(self, index: int, what: str) -> np.ndarray | None:
        return self.static_input(index, what) if self.has_input(index) else None

    @property
    def num_outputs(self) -> int:
        """How many outputs the node declares (trailing unnamed ones excluded)."""
        return len(self.node.output)

    # -- types ----------------------------------------------------------------------------------
    def type_of(self, expr: Expr) -> TensorType:
        ty = self.graph.types.type_of(expr)
        if not isinstance(ty, TensorType):
            raise FrontendError(f"expected a tensor, got a value of type {ty}")
        return ty

    def static_shape(self, expr: Expr, what: str) -> tuple[int, ...]:
        """The shape of `expr`, which must be static because the conversion needs `what`."""
        ty = self.type_of(expr)
        if not is_static(ty.shape):
            raise FrontendError(f"{what} needs a static shape, but the input has shape {ty.shape_str()}")
        return ty.concrete_shape

    # -- builders -------------------------------------------------------------------------------
    def typed(self, expr: Expr) -> Expr:
        """`expr`, after checking that it type-checks (its type is kept for later queries)."""
        self.graph.types.type_of(expr)
        return expr

    def call(self, op: str, *args: Any, **attrs: Any) -> Call:
        """A typed call of IR op `op` (positional values past the inputs fill attributes)."""
        return self.typed(make_call(op, args, attrs))

    def item(self, value: Expr, index: int) -> Expr:
        return self.typed(TupleGetItem(value, index))

    @staticmethod
    def const(value: Any, dtype: str | None = None) -> Constant:
        """A constant that keeps numpy's dtype unless `dtype` is given."""
        arr = np.asarray(value)
        return Constant(arr if dtype is None else arr.astype(dtype))

    def constant_value(self, expr: Expr) -> np.ndarray | None:
        """The value constant folding sees: a constant's, or an integer initializer's even when
        unfrozen; None when `expr` is computed at run time."""
        return self.graph.foldable_value(expr)
