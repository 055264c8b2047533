"""Errors of the pattern language: each names the builder, callback or pattern involved."""

from __future__ import annotations

from ..errors import IRError

__all__ = ["PatternError", "InvalidPatternError", "RewriteError", "RewriteDivergenceError"]


class PatternError(IRError):
    """Base class of every error raised by `ir.dataflow_pattern`."""


class InvalidPatternError(PatternError, TypeError):
    """A pattern built from arguments of the wrong kind (e.g. a string tuple index)."""


class RewriteError(PatternError, RuntimeError):
    """A rewrite callback misbehaved: no pattern, a non-expression result, or an ill-typed result."""


class RewriteDivergenceError(RewriteError):
    """`rewrite` found no fixed point within its pass limit; the message names the callbacks still changing."""
