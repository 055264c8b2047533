"""Type inference: fills `checked_type` on every node, or names the op and shapes that do not fit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from .errors import ShapeError, TypeInferenceError
from .expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from .op.registry import Op
from .op.shapes import dims_match
from .types import FuncType, TensorType, TupleType, Type
from .visitor import post_order

if TYPE_CHECKING:
    from .module import IRModule

__all__ = ["infer_type", "types_compatible"]


def types_compatible(a: Type, b: Type) -> bool:
    """Equal types, where a symbolic or `Any` dimension fits any dimension."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return a.dtype == b.dtype and a.ndim == b.ndim and all(dims_match(x, y) for x, y in zip(a.shape, b.shape))
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.fields) == len(b.fields) and all(types_compatible(x, y) for x, y in zip(a.fields, b.fields))
    if isinstance(a, FuncType) and isinstance(b, FuncType):
        return (len(a.arg_types) == len(b.arg_types) and types_compatible(a.ret_type, b.ret_type)
                and all(types_compatible(x, y) for x, y in zip(a.arg_types, b.arg_types)))
    return a == b


def _describe_args(call: Call) -> str:
    return ", ".join(f"{name}: {arg.checked_type}" for name, arg in zip(call.op.inputs, call.args))


#: (op name, argument types, attributes) -> the op's relation's type: a relation reads only these, and
#: a program (or an e-graph's rewrites) calls the same op on the same types many times over
_RELATIONS: dict[tuple, Type] = {}
_MAX_RELATIONS = 1 << 16


def _call_type(call: Call) -> Type:
    if isinstance(call.op, Op):
        args = tuple(a.checked_type for a in call.args)
        key = (call.op.name, args, call.attrs)
        try:
            known = _RELATIONS.get(key)
        except TypeError:  # an attribute value that does not hash
            key, known = None, None
        if known is not None:
            return known
        try:
            ty = call.op.relation(list(args), call.attrs)
        except ShapeError as err:
            raise TypeInferenceError(f"{call.op.name}: {err} (inputs {_describe_args(call)})") from None
        if key is not None:
            if len(_RELATIONS) >= _MAX_RELATIONS:
                _RELATIONS.clear()
            _RELATIONS[key] = ty
        return ty
    fty = call.op.checked_type
    if not isinstance(fty, FuncType):
        raise TypeInferenceError(f"calling a value of type {fty}, which is not a function")
    if len(fty.arg_types) != len(call.args):
        raise TypeInferenceError(f"a function of {len(fty.arg_types)} parameter(s) is called with {len(call.args)}")
    for i, (want, arg) in enumerate(zip(fty.arg_types, call.args)):
        if not types_compatible(want, arg.checked_type):
            raise TypeInferenceError(f"argument {i} of a function call has type {arg.checked_type}, expected {want}")
    return fty.ret_type


def _node_type(node: Expr, let_values: dict[int, Expr]) -> Type:
    if isinstance(node, Var):
        if node.type_annotation is not None:
            return node.type_annotation
        if id(node) in let_values:
            return let_values[id(node)].checked_type
        raise TypeInferenceError(f"variable %{node.name_hint} has no type; give it one, e.g. "
                                 f"relay.var({node.name_hint!r}, shape=(...), dtype='float32')")
    if isinstance(node, Constant):
        return TensorType(node.data.shape, node.dtype)
    if isinstance(node, Call):
        return _call_type(node)
    if isinstance(node, Tuple):
        return TupleType([f.checked_type for f in node.fields])
    if isinstance(node, TupleGetItem):
        tty = node.tuple_value.checked_type
        if not isinstance(tty, TupleType):
            raise TypeInferenceError(f"TupleGetItem [{node.index}] of a non-tuple value of type {tty}")
        if not 0 <= node.index < len(tty.fields):
            raise TypeInferenceError(f"TupleGetItem index {node.index} is out of range for {tty}")
        return tty.fields[node.index]
    if isinstance(node, Function):
        ret = node.body.checked_type
        if node.ret_type is not None and not types_compatible(node.ret_type, ret):
            raise TypeInferenceError(f"function body has type {ret}, but the declared return type is {node.ret_type}")
        return FuncType([p.checked_type for p in node.params], ret)
    if isinstance(node, If):
        cond = node.cond.checked_type
        if not (isinstance(cond, TensorType) and cond.dtype == "bool"):
            raise TypeInferenceError(f"an If condition must be a bool tensor, got {cond}")
        a, b = node.true_branch.checked_type, node.false_branch.checked_type
        if not types_compatible(a, b):
            raise TypeInferenceError(f"If branches have different types: {a} vs {b}")
        return a
    if isinstance(node, Let):
        return node.body.checked_type
    if isinstance(node, Op):
        raise TypeInferenceError(f"op {node.name} is used as a value; call it instead")
    raise TypeInferenceError(f"cannot type {type(node).__name__}")


def infer_type(expr: Union[Expr, "IRModule"]) -> Union[Expr, "IRModule"]:
    """Type-check `expr` (or every function of a module) and return it with `checked_type` filled."""
    from .module import IRModule
    if isinstance(expr, IRModule):
        for func in expr.functions.values():
            infer_type(func)
        return expr
    nodes = list(post_order(expr))
    let_values = {id(n.var): n.value for n in nodes if isinstance(n, Let)}
    for node in nodes:
        if isinstance(node, Function):  # parameters are binders, not children: type them here
            for p in node.params:
                if p._checked_type is None:
                    p._set_checked_type(_node_type(p, let_values))
        if node._checked_type is None:
            node._set_checked_type(_node_type(node, let_values))
    return expr
