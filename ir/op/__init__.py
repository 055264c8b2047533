"""The op registry and every built-in op (importing this package registers them)."""

from . import activation, fused, generate, indexing, nn, piecewise, reduce, scan, tensor, transform  # noqa: F401
from . import predicates  # noqa: F401  (isnan, isinf, isfinite)
from . import image  # noqa: F401  (registers the image ops)
from . import layout  # noqa: F401  (layout_transform and the blocked convolutions)
from . import dynamic  # noqa: F401  (shape_of and the dyn.* ops over run-time shapes)
from . import rotary  # noqa: F401  (nn.rotary_embedding)
from .registry import REQUIRED, AttrField, Op, OpPattern, get_op, list_ops, make_call, register_op

__all__ = ["AttrField", "Op", "OpPattern", "REQUIRED", "get_op", "list_ops", "make_call", "register_op"]
