"""A Relay-style tensor IR: expressions, types, ops, type inference, printing, model zoo, ONNX.

    import ir
    from ir import relay
    x = relay.var("x", shape=(1, 3, 8, 8))
    y = relay.nn.relu(relay.nn.conv2d(x, relay.var("w", shape=(4, 3, 3, 3)), padding=(1, 1)))
    mod = ir.IRModule.from_expr(y)
    print(ir.infer_type(mod).astext())
"""

from __future__ import annotations

from . import op
from .attrs import Attrs
from .errors import ArityError, AttrsError, IRError, OpNotFoundError, ShapeError, TypeInferenceError
from .expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var, const, frozen
from .module import INPUT_DEFAULTS, OUTPUT_NAMES, IRModule, input_defaults, output_names
from .op.registry import Op, OpPattern, get_op, list_ops
from .printer import astext
from .structural import assert_structural_equal, structural_equal, structural_hash
from .type_infer import infer_type
from .types import Any, FuncType, SizeVar, TensorType, TupleType, Type
from .visitor import bind, bind_params_by_name, free_vars, post_order, rebuild
from . import relay  # noqa: E402  (builders need the registry filled)

__all__ = [
    "Attrs", "Expr", "Var", "Constant", "Call", "Tuple", "TupleGetItem", "Function", "If", "Let", "Op",
    "OpPattern", "const", "frozen", "IRModule", "INPUT_DEFAULTS", "input_defaults", "OUTPUT_NAMES", "output_names", "Type", "TensorType", "TupleType",
    "FuncType", "Any", "SizeVar",
    "infer_type", "structural_equal", "structural_hash", "assert_structural_equal", "astext", "get_op",
    "list_ops", "free_vars", "post_order", "rebuild", "bind", "bind_params_by_name", "relay", "models",
    "frontend", "IRError", "OpNotFoundError", "AttrsError", "ArityError", "ShapeError", "TypeInferenceError",
]


def __getattr__(name: str):
    # the zoo and the ONNX frontend load on first use (the frontend needs the `onnx` extra)
    if name in ("models", "frontend"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'ir' has no attribute {name!r}")
