"""Types: tensors with static or symbolic dimensions, tuples and functions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

__all__ = [
    "Type", "TensorType", "TupleType", "FuncType", "SizeVar", "AnyDim", "Any", "Dim",
    "normalize_dtype", "normalize_shape", "is_static", "dim_str",
]


@dataclass(frozen=True)
class SizeVar:
    """A named symbolic dimension: every occurrence of the same name is the same size."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class AnyDim:
    """A dimension known only at run time (Relay's `Any`); two `Any`s need not be equal."""

    def __str__(self) -> str:
        return "?"


Any = AnyDim()
Dim = Union[int, SizeVar, AnyDim]


def normalize_dim(d) -> Dim:
    if isinstance(d, (SizeVar, AnyDim)):
        return d
    if isinstance(d, str):
        return Any if d in ("?", "Any") else SizeVar(d)
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise TypeError(f"a dimension must be an int, a SizeVar or Any, got {d!r}")
    if d < 0:
        raise ValueError(f"a dimension must not be negative, got {d}")
    return int(d)


def normalize_shape(shape) -> tuple[Dim, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    return tuple(normalize_dim(d) for d in shape)


def normalize_dtype(dtype) -> str:
    """Canonical dtype name (`"float32"`, `"int64"`, `"bool"`, ...)."""
    if dtype is None:
        return "float32"
    name = np.dtype(dtype).name
    return name


def is_static(shape: tuple[Dim, ...]) -> bool:
    return all(isinstance(d, int) for d in shape)


def dim_str(d: Dim) -> str:
    return str(d)


class Type:
    """Base class of IR types."""


@dataclass(frozen=True)
class TensorType(Type):
    """A tensor of `shape` (static ints, `SizeVar`s or `Any`) and `dtype`."""

    shape: tuple[Dim, ...]
    dtype: str = "float32"

    def __init__(self, shape=(), dtype="float32"):
        object.__setattr__(self, "shape", normalize_shape(shape))
        object.__setattr__(self, "dtype", normalize_dtype(dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def concrete_shape(self) -> tuple[int, ...]:
        """The shape as ints; raises when a dimension is symbolic."""
        if not is_static(self.shape):
            raise ValueError(f"shape {self.shape_str()} is not static")
        return self.shape  # type: ignore[return-value]

    def num_elements(self) -> int | None:
        return int(np.prod(self.shape, dtype=np.int64)) if is_static(self.shape) else None

    def shape_str(self) -> str:
        inner = ", ".join(dim_str(d) for d in self.shape)
        return f"({inner},)" if len(self.shape) == 1 else f"({inner})"

    def __str__(self) -> str:
        return f"Tensor[{self.shape_str()}, {self.dtype}]"


@dataclass(frozen=True)
class TupleType(Type):
    """The type of a tuple value: one type per field."""

    fields: tuple[Type, ...]

    def __init__(self, fields):
        object.__setattr__(self, "fields", tuple(fields))

    def __str__(self) -> str:
        return "(" + ", ".join(str(f) for f in self.fields) + ("," if len(self.fields) == 1 else "") + ")"


@dataclass(frozen=True)
class FuncType(Type):
    """The type of a function: argument types and the return type."""

    arg_types: tuple[Type, ...]
    ret_type: Type

    def __init__(self, arg_types, ret_type):
        object.__setattr__(self, "arg_types", tuple(arg_types))
        object.__setattr__(self, "ret_type", ret_type)

    def __str__(self) -> str:
        return "fn (" + ", ".join(str(a) for a in self.arg_types) + f") -> {self.ret_type}"
