"""Shared helpers for the model-zoo tests."""

from __future__ import annotations

import ir
from ir.types import Type


def output_type(mod: ir.IRModule) -> Type:
    """The checked type of main's body."""
    return mod["main"].body.checked_type


def shapes(ty: Type) -> tuple:
    """A tensor type's shape, or a tuple of shapes for a tuple type."""
    if isinstance(ty, ir.TupleType):
        return tuple(f.shape for f in ty.fields)
    return ty.shape


def weight_vars(mod: ir.IRModule) -> list[ir.Var]:
    """Main's parameters that are not data inputs."""
    main = mod["main"]
    inputs = set(main.attrs["data_inputs"])
    return [p for p in main.params if p.name_hint not in inputs]
