"""TVM-style builder namespace: `from ir import relay`, then `relay.var`, `relay.nn.conv2d`, ...

Every registered op gets a builder: `relay.add`, `relay.nn.conv2d` (also `relay.op.nn.conv2d`).
Builders take the op's inputs positionally, then its attributes positionally or by keyword, in
the op's schema order (which follows TVM's signatures).
"""

from __future__ import annotations

import sys as _sys
import types as _pytypes

from .. import expr
from ..expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var, const
from ..module import IRModule
from ..op.registry import Op, get_op, list_ops, make_call
from ..structural import structural_equal, structural_hash
from ..type_infer import infer_type
from ..types import Any, FuncType, SizeVar, TensorType, TupleType, Type
from ..visitor import bind, bind_params_by_name, free_vars

__all__ = [
    "var", "const", "Var", "Constant", "Call", "Tuple", "TupleGetItem", "Function", "If", "Let", "Expr",
    "IRModule", "TensorType", "TupleType", "FuncType", "Any", "SizeVar", "op", "nn", "image", "dyn", "expr", "analysis",
    "build_module", "transform", "structural_equal", "structural_hash",
]


def var(name_hint: str, type_annotation: Type | str | None = None, shape=None, dtype: str = "float32") -> Var:
    """A variable; give `shape` (and `dtype`) or a full `type_annotation`."""
    if type_annotation is not None and shape is not None:
        raise ValueError(f"var {name_hint!r}: give either type_annotation or shape, not both")
    if shape is not None:
        type_annotation = TensorType(shape, dtype)
    elif isinstance(type_annotation, str):
        type_annotation = TensorType((), type_annotation)
    return Var(name_hint, type_annotation)


def _builder(op: Op):
    def build(*args, **attrs) -> Call:
        return make_call(op, args, attrs)

    build.__name__ = build.__qualname__ = op.name.rsplit(".", 1)[-1]
    fields = ", ".join(f"{f.name}={f.default!r}" for f in op.attr_fields)
    build.__doc__ = f"{op.name}({', '.join(op.inputs)}{', ' if fields else ''}{fields})\n\n{op.doc}".strip()
    return build


def _namespace(name: str) -> _pytypes.ModuleType:
    """A module object registered in `sys.modules`, so `from ir.relay.op.nn import conv2d` works."""
    module = _pytypes.ModuleType(f"ir.relay.{name}")
    _sys.modules[module.__name__] = module
    return module


op = _namespace("op")
op.get = get_op
op.list_ops = list_ops
op.op = _namespace("op.op")
op.op.get = get_op
op.Op = Op
nn = _namespace("nn")
image = _namespace("image")
dyn = _namespace("dyn")  # the ops over run-time shapes: relay.dyn.reshape, ...
_FAMILIES = {"nn": nn, "image": image, "dyn": dyn}
for _family in _FAMILIES.values():
    _short = _family.__name__.rsplit(".", 1)[-1]
    setattr(op, _short, _family)
    _sys.modules[f"ir.relay.op.{_short}"] = _family
op.tensor = op  # relay.op.tensor.add and friends

for _name in list_ops():
    _fn = _builder(get_op(_name))
    _prefix, _, _short = _name.rpartition(".")
    if _prefix in _FAMILIES:
        setattr(_FAMILIES[_prefix], _short, _fn)
    elif not _prefix:
        setattr(op, _name, _fn)
        globals()[_name] = _fn
        __all__.append(_name)

analysis = _namespace("analysis")
analysis.free_vars = free_vars
build_module = _namespace("build_module")
build_module.bind_params_by_name = bind_params_by_name
transform = _namespace("transform")


def _infer_type_pass():
    """`relay.transform.InferType()(mod)`: type-checks the module in place and returns it."""
    return infer_type


transform.InferType = _infer_type_pass
bind = bind

from . import dataflow_pattern  # noqa: E402,F401  (relay.dataflow_pattern.rewrite, as in TVM)
