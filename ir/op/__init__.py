"""The op registry and every built-in op (importing this package registers them)."""

from . import activation, fused, nn, reduce, tensor, transform  # noqa: F401  (registration side effects)
from .registry import REQUIRED, AttrField, Op, OpPattern, get_op, list_ops, make_call, register_op

__all__ = ["AttrField", "Op", "OpPattern", "REQUIRED", "get_op", "list_ops", "make_call", "register_op"]
