"""Numeric facts per IR dtype: the numpy dtype (bfloat16 through `ml_dtypes`), float limits, and
constants read exactly (an int64 stays an int; nothing goes through a float)."""

from __future__ import annotations

from typing import Union

import numpy as np

__all__ = ["FLOAT_DTYPES", "INT_DTYPES", "numpy_dtype", "is_float", "is_int", "float_info", "exact_value",
           "float32_exact"]

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def numpy_dtype(dtype: Union[str, np.dtype]) -> np.dtype:
    """The numpy dtype of an IR dtype name; bfloat16 is `ml_dtypes.bfloat16` (installed with onnx)."""
    if str(dtype) == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


def is_float(dtype: Union[str, np.dtype]) -> bool:
    """True for float16, bfloat16, float32 and float64 (bfloat16's numpy kind is 'V', not 'f')."""
    return str(dtype) in FLOAT_DTYPES


def is_int(dtype: Union[str, np.dtype]) -> bool:
    return str(dtype) in INT_DTYPES


def float_info(dtype: Union[str, np.dtype]):
    """`np.finfo` of a float dtype, bfloat16 included."""
    if str(dtype) == "bfloat16":
        import ml_dtypes
        return ml_dtypes.finfo(ml_dtypes.bfloat16)
    return np.finfo(np.dtype(dtype))


def exact_value(data: np.ndarray) -> Union[int, float, bool]:
    """The first element of `data` as a Python number of its kind: an int for integer dtypes (exact
    for every int64 / uint64), a float for floats, a bool for bools."""
    item = np.asarray(data).reshape(-1)[0]
    if is_int(np.asarray(data).dtype):
        return int(item)
    if np.asarray(data).dtype == np.bool_:
        return bool(item)
    return float(item)


def float32_exact(value: Union[int, float]) -> bool:
    """True when `value` survives a trip through float32 and back: a float attribute (attributes
    hold float32 values, as ONNX's do) then holds it exactly; NaN and infinities do."""
    with np.errstate(all="ignore"):
        narrow = np.float32(value)
    return bool(np.isnan(narrow)) if value != value else (
        float(narrow) == value and (isinstance(value, float) or int(narrow) == value))
