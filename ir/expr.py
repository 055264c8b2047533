"""Expression nodes: immutable, hashed and compared by identity, like TVM's objects.

Two structurally equal nodes are still two nodes (a diamond must reach the *same* node); use
`ir.structural_equal` / `ir.structural_hash` to compare by value. The only field set after
construction is the cached `checked_type`, which `ir.infer_type` fills from the node's structure.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from .attrs import Attrs
from .types import TensorType, Type, normalize_dtype

if TYPE_CHECKING:
    from .op.registry import Op

__all__ = [
    "Expr", "Var", "Constant", "Call", "Tuple", "TupleGetItem", "Function", "If", "Let", "NDArray",
    "const", "frozen", "as_array",
]


class Expr:
    """Base class of every IR node. Arithmetic operators build `add`/`subtract`/... calls."""

    __slots__ = ("_checked_type", "__weakref__")

    def __init__(self) -> None:
        object.__setattr__(self, "_checked_type", None)

    def __setattr__(self, key, value):
        raise AttributeError(f"{type(self).__name__} nodes are immutable")

    # identity semantics, stated explicitly
    __hash__ = object.__hash__

    @property
    def checked_type(self) -> Type:
        """The type `ir.infer_type` gave this node; raises if types were not inferred yet."""
        if self._checked_type is None:
            raise ValueError(
                f"the type of this {type(self).__name__} is not inferred yet; call ir.infer_type(expr) first")
        return self._checked_type

    @property
    def type_inferred(self) -> bool:
        return self._checked_type is not None

    def _set_checked_type(self, ty: Type) -> None:
        object.__setattr__(self, "_checked_type", ty)

    def astext(self) -> str:
        from .printer import astext
        return astext(self)

    def __str__(self) -> str:
        return self.astext()

    # -- operator sugar -------------------------------------------------------------------------
    def _binary(self, name: str, other: Any, reverse: bool = False) -> "Call":
        from .op.registry import make_call
        other = _as_expr(other, like=self)
        lhs, rhs = (other, self) if reverse else (self, other)
        return make_call(name, [lhs, rhs])

    def __add__(self, other): return self._binary("add", other)
    def __radd__(self, other): return self._binary("add", other, reverse=True)
    def __sub__(self, other): return self._binary("subtract", other)
    def __rsub__(self, other): return self._binary("subtract", other, reverse=True)
    def __mul__(self, other): return self._binary("multiply", other)
    def __rmul__(self, other): return self._binary("multiply", other, reverse=True)
    def __truediv__(self, other): return self._binary("divide", other)
    def __rtruediv__(self, other): return self._binary("divide", other, reverse=True)
    def __lt__(self, other): return self._binary("less", other)
    def __gt__(self, other): return self._binary("greater", other)
    def __le__(self, other): return self._binary("less_equal", other)
    def __ge__(self, other): return self._binary("greater_equal", other)

    def __neg__(self):
        from .op.registry import make_call
        return make_call("negative", [self])

    def __getitem__(self, index: int) -> "Expr":
        """`expr[i]`: the i-th field of a tuple-valued expression (e.g. `batch_norm(...)[0]`)."""
        return TupleGetItem(self, index)

    def astuple(self) -> "Expr":
        return self


def _as_expr(value: Any, like: Expr | None = None) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, int, float, np.number)):
        dtype = None
        if like is not None and like._checked_type is not None and isinstance(like._checked_type, TensorType):
            dtype = like._checked_type.dtype
        return const(value, dtype)
    raise TypeError(f"expected an IR expression or a number, got {type(value).__name__}: {value!r}")


def _check_expr(value: Any, what: str) -> Expr:
    if not isinstance(value, Expr):
        raise TypeError(f"{what} must be an IR expression, got {type(value).__name__}: {value!r}")
    return value


class NDArray(np.ndarray):
    """A read-only numpy array that also answers TVM's `.numpy()`."""

    def numpy(self) -> np.ndarray:
        return np.asarray(self)


def frozen(arr: np.ndarray) -> NDArray:
    """`arr` itself, made read-only, as the `NDArray` a `Constant` holds without copying it: for an
    array its maker gives up (a weight just computed), where a copy would only cost time."""
    out = arr.view(NDArray)
    out.setflags(write=False)
    return out


def as_array(value: Any) -> np.ndarray:
    """A parameter's value as a numpy array: an array as it is (a constant's read-only `NDArray`
    stays one, which a `Constant` then shares), a tensor through its `.numpy()`, else `np.asarray`."""
    if isinstance(value, np.ndarray):
        return value
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


class Var(Expr):
    """A variable: a graph input or a function parameter. `type_annotation` may be None."""

    __slots__ = ("name_hint", "type_annotation")

    def __init__(self, name_hint: str, type_annotation: Type | None = None):
        super().__init__()
        if not isinstance(name_hint, str):
            raise TypeError(f"a Var's name must be a str, got {name_hint!r}")
        if type_annotation is not None and not isinstance(type_annotation, Type):
            raise TypeError(f"Var {name_hint!r}: type_annotation must be an ir Type, got {type_annotation!r}")
        object.__setattr__(self, "name_hint", name_hint)
        object.__setattr__(self, "type_annotation", type_annotation)

    def __repr__(self) -> str:
        return f"Var({self.name_hint!r}, {self.type_annotation})"


class Constant(Expr):
    """A constant tensor; `data` is a read-only numpy array."""

    __slots__ = ("data", "_digest")

    def __init__(self, data: Any):
        super().__init__()
        object.__setattr__(self, "_digest", None)
        if isinstance(data, NDArray) and not data.flags.writeable:  # read-only already: shared, not copied
            object.__setattr__(self, "data", data)
            return
        arr = np.array(data)  # a private copy, so the caller cannot change it behind our back
        if arr.dtype == object:
            raise TypeError(f"a Constant needs numeric data, got {data!r}")
        object.__setattr__(self, "data", frozen(arr))

    @property
    def digest(self) -> str:
        """Content digest of the tensor (dtype, shape and bytes; SHA-256, which x86's SHA extensions
        run at twice BLAKE2's speed, cut to 128 bits): equal tensors have equal digests. Made once
        per constant (its data is read-only), so comparing or keying programs that share their
        weights reads each weight once, however often they are compared."""
        if self._digest is None:
            h = hashlib.sha256(f"{self.dtype}{self.shape}".encode())
            h.update(np.ascontiguousarray(self.data).reshape(-1).view(np.uint8))
            object.__setattr__(self, "_digest", h.hexdigest()[:32])
        return self._digest

    @property
    def dtype(self) -> str:
        return self.data.dtype.name

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    def __repr__(self) -> str:
        if self.data.ndim == 0:
            return f"Constant({self.data.item()!r}, {self.dtype})"
        return f"Constant(shape={self.shape}, {self.dtype})"


def const(value: Any, dtype: str | None = None) -> Constant:
    """A constant; Python ints become int32 and floats float32 unless `dtype` says otherwise."""
    arr = np.asarray(value)
    if dtype is not None:
        arr = arr.astype(normalize_dtype(dtype))
    elif arr.dtype == np.int64 and not isinstance(value, np.ndarray | np.integer):
        arr = arr.astype(np.int32)
    elif arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    return Constant(arr)


class Call(Expr):
    """`op(args..., attrs)`: a call of a registered `Op`, or of a `Function` / function-typed expression.

    Calls of ops are validated when built: the arity and the attributes must fit the op's schema,
    and omitted attributes take the schema's defaults.
    """

    __slots__ = ("op", "args", "attrs")

    def __init__(self, op: "Op | Expr", args: Sequence[Expr], attrs: Attrs | dict | None = None):
        super().__init__()
        from .op.registry import Op, normalize_attrs
        if not isinstance(op, Expr):
            raise TypeError(f"a Call's op must be an Op or an expression, got {op!r}")
        args = tuple(args)
        for i, a in enumerate(args):
            _check_expr(a, f"argument {i} of a call to {getattr(op, 'name', type(op).__name__)}")
        if isinstance(op, Op):
            attrs = normalize_attrs(op, args, attrs)
        else:
            attrs = attrs if isinstance(attrs, Attrs) else Attrs(attrs)
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "attrs", attrs)

    def __repr__(self) -> str:
        name = getattr(self.op, "name", type(self.op).__name__)
        return f"Call({name}, {len(self.args)} args)"


class Tuple(Expr):
    """A tuple of expressions."""

    __slots__ = ("fields",)

    def __init__(self, fields: Iterable[Expr]):
        super().__init__()
        fields = tuple(fields)
        for i, f in enumerate(fields):
            _check_expr(f, f"tuple field {i}")
        object.__setattr__(self, "fields", fields)

    def __getitem__(self, index: int) -> Expr:
        return self.fields[index]

    def __len__(self) -> int:
        return len(self.fields)

    def __repr__(self) -> str:
        return f"Tuple({len(self.fields)} fields)"


class TupleGetItem(Expr):
    """`tuple_value[index]`."""

    __slots__ = ("tuple_value", "index")

    def __init__(self, tuple_value: Expr, index: int):
        super().__init__()
        _check_expr(tuple_value, "the tuple of a TupleGetItem")
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"a TupleGetItem index must be an int, got {index!r}")
        object.__setattr__(self, "tuple_value", tuple_value)
        object.__setattr__(self, "index", int(index))

    def __repr__(self) -> str:
        return f"TupleGetItem({self.index})"


class Function(Expr):
    """`fn (params) { body }` with optional return type and attributes (e.g. `Composite`)."""

    __slots__ = ("params", "body", "ret_type", "attrs")

    def __init__(self, params: Sequence[Var], body: Expr, ret_type: Type | None = None,
                 attrs: Attrs | dict | None = None):
        super().__init__()
        params = tuple(params)
        for p in params:
            if not isinstance(p, Var):
                raise TypeError(f"function parameters must be Vars, got {p!r}")
        _check_expr(body, "a function body")
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "ret_type", ret_type)
        object.__setattr__(self, "attrs", attrs if isinstance(attrs, Attrs) else Attrs(attrs))

    def with_attr(self, key: str, value: Any) -> "Function":
        """A new function with one attribute set."""
        return Function(self.params, self.body, self.ret_type, self.attrs.with_(**{key: value}))

    def __call__(self, *args: Expr) -> Call:
        return Call(self, args)

    def __repr__(self) -> str:
        return f"Function({len(self.params)} params)"


class If(Expr):
    """`if (cond) { true_branch } else { false_branch }`."""

    __slots__ = ("cond", "true_branch", "false_branch")

    def __init__(self, cond: Expr, true_branch: Expr, false_branch: Expr):
        super().__init__()
        for name, e in (("condition", cond), ("true branch", true_branch), ("false branch", false_branch)):
            _check_expr(e, f"the {name} of an If")
        object.__setattr__(self, "cond", cond)
        object.__setattr__(self, "true_branch", true_branch)
        object.__setattr__(self, "false_branch", false_branch)


class Let(Expr):
    """`let var = value; body`."""

    __slots__ = ("var", "value", "body")

    def __init__(self, var: Var, value: Expr, body: Expr):
        super().__init__()
        if not isinstance(var, Var):
            raise TypeError(f"a Let binds a Var, got {var!r}")
        _check_expr(value, "the value of a Let")
        _check_expr(body, "the body of a Let")
        object.__setattr__(self, "var", var)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "body", body)
