"""Errors raised by the e-graph engine; each names the node, rule, class or limit involved."""

from __future__ import annotations

__all__ = ["EqsatError", "LoweringError", "RuleError", "ExtractionError", "PatternCompileError", "VerificationError",
           "SpeedCheckError", "first_line"]


class EqsatError(Exception):
    """Base class of every error the e-graph engine raises on bad input."""


class LoweringError(EqsatError, ValueError):
    """A program that cannot be lowered into the e-graph (untyped, or an unsupported node)."""


class RuleError(EqsatError, ValueError):
    """A malformed rule or rule set (unbound right-hand variable, repeated name, unknown op)."""


class PatternCompileError(RuleError):
    """A dataflow pattern that cannot become an e-matching query."""


class ExtractionError(EqsatError, RuntimeError):
    """No valid program can be extracted (an e-class has no legal node, or a root is missing)."""


class VerificationError(EqsatError, RuntimeError):
    """An extracted program computes something else than the original (names the rules applied)."""


class SpeedCheckError(EqsatError, RuntimeError):
    """The speed check could not time the programs: the input model fails on every input set drawn."""


def first_line(err: BaseException) -> str:
    """The first line of `err`'s message, or its type's name when it has none: one line for a report."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
