"""Immutable, hashable attribute dictionaries for calls and functions."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

import numpy as np

__all__ = ["Attrs", "freeze_value"]


def freeze_value(value: Any) -> Any:
    """Turn lists and numpy values into hashable Python values (tuples, int, float, str)."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze_value(v) for v in value)
    if isinstance(value, np.ndarray):
        return freeze_value(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, dict):
        return Attrs(value)
    return value


class Attrs(Mapping[str, Any]):
    """A frozen mapping whose values are also readable as attributes (`call.attrs.strides`)."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping[str, Any] | None = None):
        frozen = tuple((str(k), freeze_value(v)) for k, v in (items or {}).items())
        object.__setattr__(self, "_items", dict(frozen))
        object.__setattr__(self, "_hash", None)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __reduce__(self):
        return (Attrs, (self._items,))

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__") or key in ("_items", "_hash"):  # not set yet (copy/pickle protocols)
            raise AttributeError(key)
        try:
            return self._items[key]
        except KeyError:
            raise AttributeError(f"no attribute {key!r}; attributes are {sorted(self._items)}") from None

    def __setattr__(self, key, value):
        raise AttributeError("Attrs are immutable; use .with_(key=value)")

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(tuple(self._items.items())))
        return self._hash

    def __eq__(self, other) -> bool:
        if isinstance(other, Attrs):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == {k: freeze_value(v) for k, v in other.items()}
        return NotImplemented

    def with_(self, **changes: Any) -> "Attrs":
        """A copy with some values replaced or added."""
        return Attrs({**self._items, **changes})

    def __repr__(self) -> str:
        return "Attrs(" + ", ".join(f"{k}={v!r}" for k, v in self._items.items()) + ")"
