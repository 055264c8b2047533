"""The op registry: each op's name, inputs, attribute schema, type relation and fusion kind."""

from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..attrs import Attrs
from ..errors import ArityError, AttrsError, OpNotFoundError
from ..expr import Call, Expr, Tuple
from ..types import Type, normalize_dtype

__all__ = [
    "OpPattern", "AttrField", "Op", "register_op", "get_op", "list_ops", "make_call", "normalize_attrs",
    "REQUIRED",
]


class OpPattern(enum.IntEnum):
    """TVM's fusion kinds (`TOpPattern`), with TVM's numeric values."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()

#: attribute kinds and what values they accept
_KINDS = {
    "int": "an int",
    "float": "a number",
    "bool": "a bool",
    "str": "a str",
    "dtype": "a dtype name",
    "ints": "a list of ints",
    "floats": "a list of numbers",
    "axes": "None, an int or a list of ints",
    "int?": "None or an int",
    "float?": "None or a number",
    "ints?": "None or a list of ints",
    "int_or_ints": "an int or a list of ints",
    "int_pairs": "a list of (before, after) int pairs",
}


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_num(v: Any) -> bool:
    return _is_int(v) or isinstance(v, (float, np.floating))


def _float32(v: Any) -> float:
    """Float attributes hold float32 values (as ONNX attributes do), so `1e-5` written in Python and
    `1e-5` read back from a float32 constant are the same attribute."""
    return float(np.float32(v))


def _is_int_list(v: Any) -> bool:
    if isinstance(v, np.ndarray):
        return v.ndim == 1 and v.dtype.kind in "iu"
    return isinstance(v, (list, tuple)) and all(_is_int(x) for x in v)


@dataclass(frozen=True)
class AttrField:
    """One attribute of an op: its name, kind (see `_KINDS`), default and allowed values."""

    name: str
    kind: str
    default: Any = REQUIRED
    choices: tuple = ()
    doc: str = ""
    convert: Callable[[Any], Any] | None = None  # canonicalizes a checked value, e.g. padding to 4 values

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"attribute {self.name}: unknown kind {self.kind!r}")

    def normalize(self, op_name: str, value: Any) -> Any:
        """Check `value` against the kind and return its canonical (hashable) form."""
        kind = self.kind
        ok = True
        if value is None and (kind.endswith("?") or kind == "axes"):
            return None
        if kind in ("int", "int?"):
            ok = _is_int(value)
            value = int(value) if ok else value
        elif kind in ("float", "float?"):
            ok = _is_num(value)
            value = _float32(value) if ok else value
        elif kind == "bool":
            ok = isinstance(value, (bool, np.bool_)) or (_is_int(value) and value in (0, 1))
            value = bool(value) if ok else value
        elif kind == "str":
            ok = isinstance(value, str)
        elif kind == "dtype":
            try:
                value = normalize_dtype(value)
            except (TypeError, ValueError):
                ok = False
        elif kind in ("ints", "ints?"):
            ok = _is_int_list(value)
            value = tuple(int(x) for x in value) if ok else value
        elif kind == "floats":
            ok = isinstance(value, (list, tuple)) and all(_is_num(x) for x in value)
            value = tuple(_float32(x) for x in value) if ok else value
        elif kind in ("axes", "int_or_ints"):
            if _is_int(value):
                value = (int(value),) if kind == "axes" else int(value)
            elif _is_int_list(value):
                value = tuple(int(x) for x in value)
            else:
                ok = False
        elif kind == "int_pairs":
            ok = isinstance(value, (list, tuple, np.ndarray)) and all(
                _is_int_list(p) and len(p) == 2 for p in value)
            value = tuple((int(p[0]), int(p[1])) for p in value) if ok else value
        if not ok:
            raise AttrsError(f"{op_name}: attribute {self.name!r} must be {_KINDS[kind]}, "
                             f"got {type(value).__name__} {value!r}")
        if self.convert is not None:
            try:
                value = self.convert(value)
            except ValueError as err:
                raise AttrsError(f"{op_name}: attribute {self.name!r}: {err}") from None
        if self.choices and value not in self.choices:
            raise AttrsError(f"{op_name}: attribute {self.name!r} must be one of {list(self.choices)}, got {value!r}")
        return value


TypeRelation = Callable[[Sequence[Type], Attrs], Type]


class Op(Expr):
    """A registered operator. There is exactly one `Op` object per name (`get_op(name)`)."""

    __slots__ = ("name", "inputs", "attr_fields", "relation", "pattern", "tuple_input", "doc", "_attributes")

    def __init__(self, name: str, inputs: tuple[str, ...], attr_fields: tuple[AttrField, ...],
                 relation: TypeRelation, pattern: OpPattern, tuple_input: bool, doc: str,
                 attributes: Mapping[str, Any]):
        super().__init__()
        for key, value in (("name", name), ("inputs", inputs), ("attr_fields", attr_fields),
                           ("relation", relation), ("pattern", pattern), ("tuple_input", tuple_input),
                           ("doc", doc), ("_attributes", dict(attributes))):
            object.__setattr__(self, key, value)

    @property
    def num_inputs(self) -> int:
        return len(self.inputs)

    def get_attr(self, key: str, default: Any = None) -> Any:
        """An op-level attribute such as `TOpPattern` (what `has_attr` on an op pattern reads)."""
        return self._attributes.get(key, default)

    @property
    def attributes(self) -> Mapping[str, Any]:
        return dict(self._attributes)

    def set_attr(self, key: str, value: Any) -> None:
        """Attach an op-level attribute (used by later layers, e.g. strategies)."""
        self._attributes[key] = value

    def attr_defaults(self) -> dict[str, Any]:
        return {f.name: f.default for f in self.attr_fields}

    def __call__(self, *args: Any, **attrs: Any) -> Call:
        return make_call(self, args, attrs)

    def __repr__(self) -> str:
        return f"Op({self.name})"


_REGISTRY: dict[str, Op] = {}


def register_op(name: str, inputs: Sequence[str], relation: TypeRelation, pattern: OpPattern,
                attrs: Sequence[AttrField] = (), tuple_input: bool = False, doc: str = "",
                **op_attributes: Any) -> Op:
    """Add an op to the registry; a name can be registered once."""
    if name in _REGISTRY:
        raise ValueError(f"op {name!r} is already registered")
    names = [f.name for f in attrs]
    if len(set(names)) != len(names):
        raise ValueError(f"op {name!r}: attribute names repeat: {names}")
    op = Op(name, tuple(inputs), tuple(attrs), relation, OpPattern(pattern), tuple_input, doc,
            {"TOpPattern": int(pattern), **op_attributes})
    _REGISTRY[name] = op
    return op


def get_op(name: str) -> Op:
    """The op registered as `name`; an unknown name raises `OpNotFoundError` with suggestions."""
    if isinstance(name, Op):
        return name
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), _REGISTRY, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise OpNotFoundError(f"unknown op {name!r}{hint}") from None


def list_ops() -> list[str]:
    return sorted(_REGISTRY)


def normalize_attrs(op: Op, args: Sequence[Expr], attrs: Mapping[str, Any] | None) -> Attrs:
    """Check arity and attributes of a call to `op`; fill defaults; return canonical `Attrs`."""
    if len(args) != op.num_inputs:
        raise ArityError(f"{op.name} takes {op.num_inputs} input(s) ({', '.join(op.inputs)}), got {len(args)}")
    given = dict(attrs or {})
    fields = {f.name: f for f in op.attr_fields}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        known = ", ".join(fields) or "none"
        raise AttrsError(f"{op.name}: unknown attribute(s) {unknown}; its attributes are: {known}")
    out = {}
    for f in op.attr_fields:
        if f.name in given:
            out[f.name] = f.normalize(op.name, given[f.name])
        elif f.default is REQUIRED:
            raise AttrsError(f"{op.name}: attribute {f.name!r} is required")
        else:
            out[f.name] = None if f.default is None else f.normalize(op.name, f.default)
    return Attrs(out)


def make_call(op: Op | str, args: Sequence[Any], attrs: Mapping[str, Any] | None = None) -> Call:
    """Build a call; positional values past the op's inputs fill attributes in schema order.

    An op whose input is a tuple (e.g. `concatenate`) also accepts a Python list of expressions.
    """
    op = get_op(op)
    args = list(args)
    attrs = dict(attrs or {})
    extra = args[op.num_inputs:]
    args = args[:op.num_inputs]
    if len(extra) > len(op.attr_fields):
        raise ArityError(f"{op.name} takes {op.num_inputs} input(s) and {len(op.attr_fields)} attribute(s), "
                         f"got {op.num_inputs + len(extra)} positional values")
    for f, value in zip(op.attr_fields, extra):
        if f.name in attrs:
            raise AttrsError(f"{op.name}: attribute {f.name!r} given twice")
        attrs[f.name] = value
    if op.tuple_input and args and isinstance(args[0], (list, tuple)):
        args[0] = Tuple(args[0])
    from ..expr import _as_expr
    args = [_as_expr(a, like=next((x for x in args if isinstance(x, Expr)), None)) if not isinstance(a, Expr)
            else a for a in args]
    return Call(op, args, attrs)
