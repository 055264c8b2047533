"""Workloads: one op applied to inputs of given types with given attributes, and its stable key.

The key names a workload in tuning logs and caches: a canonical JSON text of the op name, the
input types and the attributes, identical across processes and hash seeds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Mapping, Sequence

from ir.attrs import Attrs
from ir.expr import Call
from ir.op.registry import Op, get_op, normalize_attrs
from ir.types import TensorType, TupleType, Type, is_static

from .kernels.reference import value_type

__all__ = ["Workload", "type_to_json", "attrs_to_json", "as_attrs"]


def type_to_json(ty: Type) -> Any:
    """A JSON form of a tensor or tuple type: `[[1, 3, "n"], "float32"]`, tuples as `{"tuple": [...]}`."""
    if isinstance(ty, TupleType):
        return {"tuple": [type_to_json(f) for f in ty.fields]}
    if isinstance(ty, TensorType):
        return [[d if isinstance(d, int) else str(d) for d in ty.shape], ty.dtype]
    raise TypeError(f"a workload's inputs are tensors or tuples of tensors, got {ty}")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in sorted(value.items())}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


def attrs_to_json(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes as a JSON object with sorted keys (tuples become lists)."""
    return _jsonable(attrs)


def as_attrs(op: Op, attrs: Mapping[str, Any] | None) -> Attrs:
    """An op's canonical attributes from a mapping of any subset of them (defaults filled)."""
    if isinstance(attrs, Attrs) and set(attrs) == {f.name for f in op.attr_fields}:
        return attrs
    return normalize_attrs(op, [None] * op.num_inputs, dict(attrs or {}))


def _is_static(ty: Type) -> bool:
    if isinstance(ty, TupleType):
        return all(_is_static(f) for f in ty.fields)
    return is_static(ty.shape)


@dataclass(frozen=True)
class Workload:
    """An op, its attributes, its input types and its output type."""

    op: str
    attrs: Attrs
    in_types: tuple[Type, ...]
    out_type: Type

    @staticmethod
    def of_call(call: Call) -> "Workload":
        """The workload of a type-checked call of a registered op."""
        return Workload(call.op.name, call.attrs, tuple(a.checked_type for a in call.args), call.checked_type)

    @staticmethod
    def of_values(op_name: str, attrs: Attrs, values: Sequence[Any]) -> "Workload":
        """The workload of an op applied to concrete values (the output type from the op's relation)."""
        in_types = tuple(value_type(v) for v in values)
        return Workload(op_name, attrs, in_types, get_op(op_name).relation(list(in_types), attrs))

    @property
    def static(self) -> bool:
        """True when every input and output dimension is a known integer."""
        return all(_is_static(t) for t in (*self.in_types, self.out_type))

    @property
    def inputs_static(self) -> bool:
        """True when every input dimension is a known integer; the output's may still depend on the
        input values (`arange`, `dyn.reshape`), which only the kernel learns."""
        return all(_is_static(t) for t in self.in_types)

    @cached_property
    def key(self) -> str:
        """The canonical JSON text naming this workload (op, input types, attributes)."""
        return json.dumps([self.op, [type_to_json(t) for t in self.in_types], attrs_to_json(self.attrs)],
                          separators=(",", ":"))

    def describe(self) -> str:
        """A short human form: `nn.dense(Tensor[(8, 16), float32], Tensor[(4, 16), float32])`."""
        return f"{self.op}({', '.join(str(t) for t in self.in_types)})"
