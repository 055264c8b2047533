"""Element types and tensor types, both ways between ONNX and the IR."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import onnx
from onnx import TensorProto

from ..types import Any, AnyDim, SizeVar, SymbolicDim, TensorType
from .errors import FrontendError

__all__ = ["dtype_of_elem", "elem_of_dtype", "tensor_type_of", "value_info", "array_of", "bounded", "INT64_MAX"]

#: the largest dimension, element count and byte size of a tensor the import accepts (ONNX sizes are int64)
INT64_MAX = 2**63 - 1

_ELEM_TO_DTYPE = {
    TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64", TensorProto.FLOAT16: "float16",
    TensorProto.INT8: "int8", TensorProto.INT16: "int16", TensorProto.INT32: "int32", TensorProto.INT64: "int64",
    TensorProto.UINT8: "uint8", TensorProto.UINT16: "uint16", TensorProto.UINT32: "uint32",
    TensorProto.UINT64: "uint64", TensorProto.BOOL: "bool",
}
_DTYPE_TO_ELEM = {dtype: elem for elem, dtype in _ELEM_TO_DTYPE.items()}


def dtype_of_elem(elem_type: int, what: str) -> str:
    """The IR dtype of an ONNX element type; `what` names the tensor in the error."""
    try:
        return _ELEM_TO_DTYPE[elem_type]
    except KeyError:
        name = TensorProto.DataType.Name(elem_type) if elem_type in TensorProto.DataType.values() else elem_type
        raise FrontendError(f"{what}: element type {name} is not supported "
                            f"(supported: {', '.join(sorted(_DTYPE_TO_ELEM))})") from None


def elem_of_dtype(dtype: str, what: str) -> int:
    """The ONNX element type of an IR dtype; `what` names the value in the error."""
    try:
        return _DTYPE_TO_ELEM[dtype]
    except KeyError:
        raise FrontendError(f"{what}: dtype {dtype} has no ONNX element type") from None


def bounded(ty: TensorType, what: str) -> TensorType:
    """`ty`, after checking that its static dimensions, their product and the bytes it spans fit in int64
    (`INT64_MAX`); `what` names the value in the `FrontendError` raised otherwise."""
    static = [d for d in ty.shape if isinstance(d, (int, np.integer))]
    if not static:
        return ty
    try:
        itemsize = np.dtype(ty.dtype).itemsize
    except TypeError:  # a dtype numpy does not know (bfloat16): two bytes
        itemsize = 2
    count = math.prod(int(d) for d in static)
    spanned = math.prod(max(int(d), 1) for d in static)  # numpy refuses such a shape even with a 0 in it
    if spanned * itemsize > INT64_MAX:
        raise FrontendError(f"{what} would have shape {ty.shape_str()} ({count} elements of {ty.dtype}), over the "
                            f"int64 bound on tensor sizes ({INT64_MAX} bytes)")
    return ty


def tensor_type_of(value: onnx.ValueInfoProto, shape: Sequence | None = None) -> TensorType:
    """The IR type of a graph input: `dim_param` becomes a `SizeVar`, an unset dim `Any`; a given
    `shape` replaces the declared one."""
    ty = value.type
    if ty.WhichOneof("value") != "tensor_type":
        raise FrontendError(f"graph value {value.name!r}: only tensors are supported, got {ty.WhichOneof('value')}")
    dtype = dtype_of_elem(ty.tensor_type.elem_type, f"graph value {value.name!r}")
    if shape is not None:
        try:
            return bounded(TensorType(shape, dtype), f"graph input {value.name!r}")
        except FrontendError:
            raise
        except (TypeError, ValueError) as err:
            raise FrontendError(f"shape[{value.name!r}] = {shape!r}: {err}") from None
    if not ty.tensor_type.HasField("shape"):
        raise FrontendError(f"graph input {value.name!r} has no shape (not even a rank); "
                            f"give one with shape={{{value.name!r}: (...)}}")
    dims = []
    for d in ty.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            dims.append(d.dim_value)
        elif d.HasField("dim_param"):
            dims.append(SizeVar(d.dim_param))
        else:
            dims.append(Any)
    return bounded(TensorType(dims, dtype), f"graph input {value.name!r}")


def value_info(name: str, ty: TensorType) -> onnx.ValueInfoProto:
    """An ONNX value info for a tensor type: a symbolic dim becomes a `dim_param` (its text, e.g.
    `N` or `N*2048`), an `Any` dim stays unset."""
    dims = [str(d) if isinstance(d, SymbolicDim) else (None if isinstance(d, AnyDim) else d) for d in ty.shape]
    return onnx.helper.make_tensor_value_info(name, elem_of_dtype(ty.dtype, name), dims)


def array_of(tensor: onnx.TensorProto, what: str) -> np.ndarray:
    """The numpy value of an initializer or tensor attribute (external data must be loaded already)."""
    dtype_of_elem(tensor.data_type, what)
    try:
        return onnx.numpy_helper.to_array(tensor)
    except Exception as err:  # onnx raises assorted errors for missing or malformed data
        raise FrontendError(f"{what}: cannot read the tensor data ({err})") from None
