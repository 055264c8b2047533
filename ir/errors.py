"""Errors raised by the IR: each names the op, attribute, node or shape involved."""

from __future__ import annotations

__all__ = ["IRError", "OpNotFoundError", "AttrsError", "ArityError", "TypeInferenceError", "ShapeError"]


class IRError(Exception):
    """Base class of every error the IR raises on bad input."""


class OpNotFoundError(IRError, LookupError):
    """An op name that is not in the registry."""


class AttrsError(IRError, ValueError):
    """An unknown attribute, or an attribute value of the wrong kind."""


class ArityError(IRError, ValueError):
    """A call with the wrong number of arguments for its op."""


class ShapeError(IRError, ValueError):
    """Raised by a type relation: the inputs' shapes or dtypes do not fit the op.

    `infer_type` catches it and re-raises a `TypeInferenceError` naming the op and the input types.
    """


class TypeInferenceError(IRError, TypeError):
    """A graph that does not type-check; the message names the op and the shapes."""
