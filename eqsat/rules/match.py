"""What a rule sees when it fires: the matched classes, their types, and bound attribute values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ir import Constant, Expr, Var
from ir.types import TensorType, Type

from ..egraph.egraph import EGraph
from ..egraph.terms import Handle, Kind

__all__ = ["Match"]


@dataclass
class Match:
    """One match of a rule: root classes, pattern variables -> classes, attribute variables -> values."""

    egraph: EGraph
    roots: tuple[Handle, ...]
    classes: dict[str, Handle] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    constants: dict[str, Constant] = field(default_factory=dict)
    placeholders: dict[int, Handle] = field(default_factory=dict)
    """id of an IR leaf handed out by `expr` -> the class it stands for."""
    parts: int | None = None
    """the field count of the rule's `many` tuple in this match (None without one)."""
    _leaves: dict[str, Expr] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        """An attribute variable's value, or a pattern variable's class handle."""
        if name in self.values:
            return self.values[name]
        return self.classes[name]

    def expr(self, name: str) -> Expr:
        """An IR leaf standing for the class bound to `name`, for building a rule's result.

        A constant comes back as itself; any other class as a typed placeholder variable.
        Lowering the result maps every placeholder back to its class.
        """
        leaf = self._leaves.get(name)
        if leaf is None:
            if name in self.constants:
                leaf = self.constants[name]
            elif name in self.classes:
                leaf = Var(f"?{name}", self.type(name))
            else:
                raise KeyError(f"the pattern binds no variable {name!r}; it binds {sorted(self.classes)}")
            self._leaves[name] = leaf
            self.placeholders[id(leaf)] = self.classes[name]
        return leaf

    def each(self, name: str) -> list[str]:
        """The per-field names of variable `name` of the rule's `many` tuple: `name.0`, `name.1`, ..."""
        if self.parts is None:
            raise KeyError(f"the rule has no many() tuple, so {name!r} is not bound per field")
        return [f"{name}.{i}" for i in range(self.parts)]

    def root_type(self, index: int = 0) -> Type:
        """The type of the `index`-th matched root class."""
        return self.egraph.type_of(self.roots[index])

    def type(self, name: str) -> Type:
        return self.egraph.type_of(self.classes[name])

    def tensor_type(self, name: str) -> TensorType | None:
        ty = self.type(name)
        return ty if isinstance(ty, TensorType) else None

    def shape(self, name: str) -> tuple:
        """The shape of a tensor-valued pattern variable (raises for tuples)."""
        ty = self.tensor_type(name)
        if ty is None:
            raise TypeError(f"pattern variable {name!r} is not a tensor: {self.type(name)}")
        return ty.shape

    def ndim(self, name: str) -> int:
        return len(self.shape(name))

    def dtype(self, name: str) -> str:
        ty = self.tensor_type(name)
        if ty is None:
            raise TypeError(f"pattern variable {name!r} is not a tensor: {self.type(name)}")
        return ty.dtype

    def calls(self, name: str, op: str) -> list[tuple[Any, tuple[Handle, ...]]]:
        """(attributes, operand classes) of each e-node calling `op` in the class bound to `name`, as of
        the e-graph's last refresh: what else the class is known to be."""
        nodes = self.egraph.class_nodes().get(self.egraph.canonical(self.classes[name]), ())
        return [(self.egraph.attrs[t.payload[1]], t.children) for t in nodes
                if t.kind is Kind.CALL and t.payload[0] == op]

    def holds(self, handle: Handle, *kinds: Kind) -> bool:
        """Whether class `handle` holds an e-node of one of `kinds` (e.g. `Kind.CONST`), as of the
        e-graph's last refresh."""
        nodes = self.egraph.class_nodes().get(self.egraph.canonical(handle), ())
        return any(t.kind in kinds for t in nodes)

    def const(self, name: str) -> np.ndarray:
        """The value of a constant bound by `const_pat(name)`."""
        return np.asarray(self.constants[name].data)

    def scalar(self, name: str) -> float | None:
        """The value of a one-element constant bound by `const_pat(name)` (any shape that holds one
        value, so it broadcasts like a scalar); None for larger constants."""
        c = self.const(name)
        return float(c.reshape(-1)[0]) if c.size == 1 else None
