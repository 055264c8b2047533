"""Errors raised by the strategies layer; each names the op, target, input or workload involved."""

from __future__ import annotations

__all__ = ["StrategyError", "NoImplementationError", "InputError", "KernelError", "TargetError"]


class StrategyError(Exception):
    """Base class of every error the strategies layer raises on bad input."""


class TargetError(StrategyError, ValueError):
    """An unknown target, or a target whose device is not present on this machine."""


class NoImplementationError(StrategyError, LookupError):
    """An op that has no implementation at all for a target (or none whose condition holds)."""


class InputError(StrategyError, ValueError):
    """A missing, unexpected or ill-shaped input given to `evaluate` or `Executable.run`."""


class KernelError(StrategyError, RuntimeError):
    """A kernel that failed on its inputs; the message names the op and the input shapes."""
