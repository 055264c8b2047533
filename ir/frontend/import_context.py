"""What an ONNX op converter sees: the node, its attributes and inputs, and typed IR builders.

A converter is a function `NodeContext -> Expr | Sequence[Expr]` (one expression per ONNX output it
supports), registered for one or more op types with `@converter("Relu", ...)`. Every call it builds
through `ctx.call` is typed at once, so a shape error surfaces while the culprit node is known.

Tensor data is read by a `TensorReader`, which checks a tensor's declared dims against the data it
holds before allocating, and reads external data only from files inside the model's folder.
Constants folded at import are capped at `MAX_FOLDED_BYTES` (see `NodeContext.check_fold`). A call
whose inputs are all known folds as it is built (`import_fold`); a folded value holding symbolic
dimensions (a shape over a symbolic batch) becomes a placeholder variable that only folding reads.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import onnx
from onnx.external_data_helper import uses_external_data

from ..expr import Call, Constant, Expr, If, Tuple, TupleGetItem, Var
from ..op.registry import Op, make_call
from ..type_infer import infer_type
from ..types import TensorType, TupleType, Type, is_static
from .errors import FrontendError
from .import_fold import MAX_FOLDED_ELEMENTS, fold_call, is_symbolic, symbolic_names
from .onnx_types import array_of, bounded, dtype_of_elem

if TYPE_CHECKING:
    from .onnx_import import GraphImporter

__all__ = ["NodeContext", "Converter", "CONVERTERS", "converter", "TypeCache", "TensorReader", "node_name",
           "node_label", "MAX_FOLDED_BYTES"]

#: the default cap on the size of one constant folded at import (a `from_onnx` keyword overrides it)
MAX_FOLDED_BYTES = 256 * 2**20

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
            if isinstance(ty, TensorType):
                bounded(ty, f"the result of {expr.op.name}" if isinstance(expr, Call) and isinstance(expr.op, Op)
                        else "a value")
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


def node_name(node: onnx.NodeProto) -> str:
    """An ONNX node's name, or its first output's when it has none."""
    return node.name or (node.output[0] if node.output else node.op_type)


def node_label(node: onnx.NodeProto) -> str:
    """How errors name an ONNX node: its name and op type."""
    return f"node {node_name(node)!r} ({node.op_type})"


class TensorReader:
    """Reads the values of initializers and tensor attributes.

    A tensor's declared dims must match the data it holds, which is checked before anything is
    allocated. External data is read only from files inside `base_dir` (the model file's folder);
    with no `base_dir` (a model given as bytes or a `ModelProto`) external data is refused.
    """

    def __init__(self, base_dir: str | os.PathLike | None):
        self.base_dir = None if base_dir is None else Path(base_dir).resolve()

    def array(self, tensor: onnx.TensorProto, what: str) -> np.ndarray:
        """The value of `tensor`; `what` names it in errors (e.g. "initializer 'w'")."""
        dtype = np.dtype(dtype_of_elem(tensor.data_type, what))
        if any(d < 0 for d in tensor.dims):
            raise FrontendError(f"{what} declares negative dims {list(tensor.dims)}")
        count = math.prod(tensor.dims)
        if uses_external_data(tensor):
            data = self._external_bytes(tensor, what, count * dtype.itemsize)
            return np.frombuffer(data, dtype.newbyteorder("<")).astype(dtype).reshape(tuple(tensor.dims))
        if tensor.HasField("raw_data"):
            held, expected, unit = len(tensor.raw_data), count * dtype.itemsize, "bytes of raw data"
        else:
            held, expected, unit = len(getattr(tensor, onnx.helper.tensor_dtype_to_field(tensor.data_type))), count, "elements"
        if held != expected:
            raise FrontendError(f"{what} declares dims {list(tensor.dims)} ({count} elements, "
                                f"{count * dtype.itemsize} bytes) but holds {held} {unit}")
        return array_of(tensor, what)

    def _external_bytes(self, tensor: onnx.TensorProto, what: str, size: int) -> bytes:
        """The `size` bytes of a tensor's external data, from a file inside `base_dir`."""
        info = {entry.key: entry.value for entry in tensor.external_data}
        location = info.get("location", "")
        if self.base_dir is None:
            raise FrontendError(f"{what} keeps its data in external file {location!r}, but the model was not "
                                f"read from a file: pass base_dir=, the folder that holds its external data")
        if not location:
            raise FrontendError(f"{what} uses external data but gives no location")
        if os.path.isabs(location) or Path(location).drive:
            raise FrontendError(f"{what}: external data location {location!r} is an absolute path; only files "
                                f"inside the model's folder {str(self.base_dir)!r} are read")
        path = (self.base_dir / location).resolve()
        if not path.is_relative_to(self.base_dir):
            raise FrontendError(f"{what}: external data location {location!r} resolves to {str(path)!r}, outside "
                                f"the model's folder {str(self.base_dir)!r}")
        if not path.is_file():
            raise FrontendError(f"{what}: external data file {location!r} does not exist in {str(self.base_dir)!r}")
        try:
            offset, length = int(info.get("offset", 0)), info.get("length")
            file_size = path.stat().st_size
            length = file_size - offset if length is None else int(length)
        except ValueError as err:
            raise FrontendError(f"{what}: external data offset or length is not an integer ({err})") from None
        if offset < 0 or length != size or offset + length > file_size:
            raise FrontendError(f"{what} declares {size} bytes, but its external data is {length} bytes at offset "
                                f"{offset} of file {location!r} ({file_size} bytes)")
        try:
            with open(path, "rb") as file:
                file.seek(offset)
                return file.read(length)
        except OSError as err:
            raise FrontendError(f"{what}: cannot read external data file {location!r}: {err}") from None


_MISSING = object()


def _attribute_value(attr: onnx.AttributeProto, reader: TensorReader) -> Any:
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return reader.array(value, f"attribute {attr.name!r}")
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
        self.name = node_name(node)
        self._attrs = {a.name: a for a in node.attribute}

    def describe(self) -> str:
        """How error messages name this node."""
        return f"node {self.name!r} ({self.op_type}, opset {self.opset})"

    # -- attributes -----------------------------------------------------------------------------
    def attr(self, key: str, default: Any = _MISSING) -> Any:
        """An attribute as a Python value (strings decoded, tensors as numpy arrays)."""
        if key in self._attrs:
            return _attribute_value(self._attrs[key], self.graph.reader)
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

    def call(self, op: str, *args: Any, **attrs: Any) -> Expr:
        """A typed call of IR op `op` (positional values past the inputs fill attributes), folded to a
        constant when its inputs are known at import and its result is small."""
        call = self.typed(make_call(op, args, attrs))
        values = [self.constant_value(arg) for arg in call.args]
        ty = self.graph.types.type_of(call)
        if any(v is None for v in values) or not isinstance(ty, TensorType):
            return call
        size = ty.num_elements()
        if size is None or size > MAX_FOLDED_ELEMENTS:
            return call
        value = fold_call(call.op.name, values, call.attrs, ty.dtype)
        return call if value is None else self.const(value, ty.dtype)

    def item(self, value: Expr, index: int) -> Expr:
        return self.typed(TupleGetItem(value, index))

    def const(self, value: Any, dtype: str | None = None) -> Expr:
        """A constant that keeps numpy's dtype unless `dtype` is given; one over the fold cap is refused
        (see `check_fold`) before it is copied. A symbolic shape value becomes a placeholder variable
        of an integer type, which folding reads and which must not reach the imported program."""
        arr = np.asarray(value)
        if arr.dtype == object:
            if not is_symbolic(arr):
                return self.const(np.array(arr.tolist()), dtype)
            if dtype is not None and np.dtype(dtype).kind not in "iu":
                raise FrontendError(f"cannot convert symbolic dimensions ({symbolic_names(arr)}) to {dtype}")
            return self.graph.symbolic_value(arr, dtype or "int64", self.describe())
        self.check_fold(arr.shape, arr.dtype if dtype is None else np.dtype(dtype))
        return Constant(arr if dtype is None else arr.astype(dtype))

    def fits_fold(self, shape: Sequence[int], dtype: np.dtype | str) -> bool:
        """Whether a folded constant of `shape` and `dtype` is within the import's fold cap, or no larger
        than one of the node's inputs (a re-layout of data already in memory, e.g. a transposed weight)."""
        if any(d < 0 for d in shape):
            raise FrontendError(f"cannot fold a constant of shape {list(shape)}: dims must be non-negative")
        size = math.prod(shape) * np.dtype(dtype).itemsize
        if size <= self.graph.max_folded_bytes:
            return True
        largest = max((v.nbytes for v in map(self.graph.static_value, self.inputs()) if v is not None), default=0)
        return size <= largest

    def check_fold(self, shape: Sequence[int], dtype: np.dtype | str) -> None:
        """Refuse a folded constant that does not `fits_fold`. Converters whose folding allocates
        (ranges, tiles) call this before computing."""
        if not self.fits_fold(shape, dtype):
            size, limit = math.prod(shape) * np.dtype(dtype).itemsize, self.graph.max_folded_bytes
            raise FrontendError(f"folding gives a constant of shape {list(shape)} and dtype {np.dtype(dtype).name} "
                                f"({size} bytes), over the {limit}-byte cap on folded constants "
                                f"(from_onnx(max_folded_bytes=...) raises it)")

    def constant_value(self, expr: Expr) -> np.ndarray | None:
        """The value constant folding sees: a constant's, or an integer initializer's even when
        unfrozen; None when `expr` is computed at run time."""
        return self.graph.foldable_value(expr)
