"""Random tensor values, one generator for every part of the project that needs inputs.

Tuning and timing draw `normal` values with integers valid as indices (`index`); verifying a
program draws each of `INPUT_KINDS` in turn; checking a rule writes its dtype's special values
(`special_values`) over whole tensors. Per kind:

| kind       | floats                                                     | integers            |
|------------|------------------------------------------------------------|---------------------|
| `normal`   | standard normal                                            | [0, 10)             |
| `edge`     | normal, with +-0, denormals and +-1 in a quarter of places | the dtype's range   |
| `nonfinite`| normal, with +-inf and NaN in a few places                 | the dtype's range   |
| `small`    | normal x 1e-3                                              | [-3, 3]             |
| `large`    | normal x 1e3                                               | the dtype's range   |
| `index`    | standard normal                                            | [0, 2)              |

Booleans are fair coins in every kind. Integers in the dtype's range carry its extremes, 0, 1
(and -1 where signed) in a quarter of places.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ir.dtype_info import float_info, numpy_dtype
from ir.types import TensorType, TupleType, Type

__all__ = ["INPUT_KINDS", "VALUE_KINDS", "random_tensor", "random_value", "scatter_specials", "special_values"]

INPUT_KINDS = ("normal", "edge", "nonfinite", "small", "large")
"""the kinds a program's input sets cycle through when it is verified."""
VALUE_KINDS = INPUT_KINDS + ("index",)


def random_tensor(rng: np.random.Generator, shape: Sequence[int], dtype: str, kind: str = "normal") -> np.ndarray:
    """A random array of `shape` and `dtype` of `kind` (see the table above)."""
    if kind not in VALUE_KINDS:
        raise ValueError(f"unknown value kind {kind!r}; choose from {VALUE_KINDS}")
    shape = tuple(shape)
    np_dtype = numpy_dtype(dtype)
    if np_dtype.kind == "b":
        return rng.random(shape) < 0.5
    if np_dtype.kind in "iu":
        return _integers(rng, shape, np_dtype, kind)
    return _floats(rng, shape, np_dtype, kind)


def random_value(ty: Type, rng: np.random.Generator, kind: str = "index") -> Any:
    """A random value of a static type (a tuple of them for a tuple type); by default normal floats
    and integers valid as indices into any axis, as tuning and timing use them."""
    if isinstance(ty, TupleType):
        return tuple(random_value(f, rng, kind) for f in ty.fields)
    assert isinstance(ty, TensorType)
    return random_tensor(rng, ty.concrete_shape, ty.dtype, kind)


def _integers(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, kind: str) -> np.ndarray:
    if kind == "index":
        return rng.integers(0, 2, shape).astype(dtype)
    if kind == "normal":
        return rng.integers(0, 10, shape).astype(dtype)
    if kind == "small":
        low = -3 if dtype.kind == "i" else 0
        return rng.integers(low, 4, shape).astype(dtype)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    specials = np.array([info.min, info.max, 0, 1, info.max - 1] + ([-1] if info.min < 0 else []), dtype)
    return scatter_specials(rng, values, specials, 0.25)


def _floats(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, kind: str) -> np.ndarray:
    values = rng.standard_normal(shape, dtype=np.float32)
    if kind == "small":
        return (values * np.float32(1e-3)).astype(dtype)
    if kind == "large":
        return (values * np.float32(1e3)).astype(dtype)
    values = values.astype(dtype)
    if kind in ("normal", "index"):
        return values
    tiny = float(float_info(dtype).smallest_subnormal)
    if kind == "edge":
        specials, share = [0.0, -0.0, tiny, -tiny, 3 * tiny, 1.0, -1.0], 0.25
    else:
        specials, share = [np.inf, -np.inf, np.nan], 0.05
    return scatter_specials(rng, values, np.array(specials, np.float64).astype(dtype), share)


def special_values(dtype: str, extreme: bool = False) -> np.ndarray:
    """The values where a rule's two sides part ways in `dtype`, as an array of it: for integers
    0, +-1, the extremes and their neighbours (and 2**53 + 1, which float64 cannot hold); for floats
    +-0, the smallest normal, +-1, +-inf, NaN, 0.5 and -2, and with `extreme` also +-the largest
    finite value, a third of it, and +-the smallest subnormal (where rounding turns into overflow
    or underflow)."""
    np_dtype = numpy_dtype(dtype)
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        return np.array([0, 1, info.max, info.min, info.max - 1] + ([-1, info.min + 1] if info.min else [])
                        + ([2 ** 53 + 1, -(2 ** 53) - 1] if info.max > 2 ** 53 else []), np_dtype)
    finfo = float_info(np_dtype)
    values = [0.0, -0.0, float(finfo.tiny), 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5, -2.0]
    if extreme:
        values += [float(finfo.max), -float(finfo.max), float(finfo.max) / 3,
                   float(finfo.smallest_subnormal), -float(finfo.smallest_subnormal)]
    return np.array(values, np.float64).astype(np_dtype)


def scatter_specials(rng: np.random.Generator, values: np.ndarray, specials: np.ndarray, share: float) -> np.ndarray:
    """`values` with `specials` written over a random `share` of its places, each special at
    least once where there is room (so a small tensor holds every edge value too)."""
    count = min(values.size, max(len(specials), int(share * values.size)))
    places = rng.permutation(values.size)[:count]
    values.reshape(-1)[places] = np.resize(specials, count)
    return values
