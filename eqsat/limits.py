"""Budgets for saturation and the reasons a run stops."""

from __future__ import annotations

import enum
import numbers
from dataclasses import dataclass

__all__ = ["Limits", "Stop", "StopReason"]


class StopReason(enum.Enum):
    """Why saturation stopped; `Report.stop_reason` always holds one."""

    SATURATED = "saturated"              # an iteration changed nothing, no rule banned or deferred
    GOAL_REACHED = "goal_reached"        # the optional goal became equivalent to the start
    ITERATION_LIMIT = "iteration_limit"
    NODE_LIMIT = "node_limit"
    TIME_LIMIT = "time_limit"
    INTERRUPTED = "interrupted"          # Ctrl-C (SIGINT): the best program so far is still extracted

    def __str__(self) -> str:
        return self.value


_UNITS = {StopReason.ITERATION_LIMIT: "iterations", StopReason.NODE_LIMIT: "e-nodes", StopReason.TIME_LIMIT: "s"}


@dataclass(frozen=True)
class Stop:
    """A `StopReason` and, for a limit, the value that reached it (as egg's `StopReason::NodeLimit(usize)`):
    the iterations run, the e-nodes counted or the seconds the run would have taken; None otherwise."""

    reason: StopReason
    value: int | float | None = None

    def __str__(self) -> str:
        """`node_limit (20143 e-nodes)`; a reason that is no limit alone (`saturated`)."""
        if self.value is None:
            return str(self.reason)
        value = f"{self.value:.3g}" if self.reason is StopReason.TIME_LIMIT else str(self.value)
        return f"{self.reason} ({value} {_UNITS[self.reason]})"


@dataclass(frozen=True)
class Limits:
    """Budgets for one saturation run; each is checked by the runner, not by egglog.

    The node and time limits are also checked while an iteration's matches are searched, read and
    applied (before each match is applied). A run that stops at the node limit ends with fewer than
    `nodes` + N e-nodes, where N is the number of e-nodes one rule application adds (its result's
    size: at most 2 for the algebraic rules, a handful for fusion rules); the initial program is not
    counted against the margin. The time limit is overshot by at most the time of one rule's search
    inside egglog (which cannot be interrupted; about 0.35 µs per match).
    """

    iterations: int = 30
    """search + apply + rebuild rounds."""
    nodes: int = 50_000
    """e-nodes (term rows, handles excluded), measured after each rebuild."""
    seconds: float = 60.0
    """wall clock for saturation; lowering and extraction are not counted. A safety net: the counts
    above decide where a run stops (the zoo and the real exports saturate or reach them well within
    it), so the extracted program is the same on a quiet and a loaded machine."""

    def __post_init__(self) -> None:
        """`TypeError` for an iteration or node count that is not an integer, or seconds that are not a
        number (a bool is neither); `ValueError` for one that is not positive (NaN included)."""
        for name, kind, wanted in (("iterations", numbers.Integral, "an integer"),
                                   ("nodes", numbers.Integral, "an integer"), ("seconds", numbers.Real, "a number")):
            value = getattr(self, name)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise TypeError(f"Limits.{name} must be {wanted}, got {type(value).__name__} {value!r}")
            if not value > 0:
                raise ValueError(f"Limits.{name} must be positive, got {value!r}")

    def first_exceeded(self, *, iteration: int, nodes: int, elapsed: float) -> Stop | None:
        """The limit that is reached and the value that reached it, checking time, then nodes, then
        iterations; None if none is."""
        over = [(elapsed >= self.seconds, Stop(StopReason.TIME_LIMIT, elapsed)),
                (nodes >= self.nodes, Stop(StopReason.NODE_LIMIT, nodes)),
                (iteration >= self.iterations, Stop(StopReason.ITERATION_LIMIT, iteration))]
        return next((stop for hit, stop in over if hit), None)
