"""TVM's fusion kinds as plain ints, for `has_attr({"TOpPattern": K_ELEMWISE})` on op patterns."""

from __future__ import annotations

from ..op.registry import OpPattern

__all__ = [
    "K_ELEMWISE", "K_BROADCAST", "K_INJECTIVE", "K_COMM_REDUCE", "K_OUT_ELEMWISE_FUSABLE", "K_TUPLE",
    "K_OPAQUE",
]

K_ELEMWISE = int(OpPattern.ELEMWISE)
K_BROADCAST = int(OpPattern.BROADCAST)
K_INJECTIVE = int(OpPattern.INJECTIVE)
K_COMM_REDUCE = int(OpPattern.COMM_REDUCE)
K_OUT_ELEMWISE_FUSABLE = int(OpPattern.OUT_ELEMWISE_FUSABLE)
K_TUPLE = int(OpPattern.TUPLE)
K_OPAQUE = int(OpPattern.OPAQUE)
