"""Rule schedulers: which rules search in an iteration, and when a rule is held back.

The back-off scheduler follows egg's `BackoffScheduler`: a rule that finds more than
`match_limit << times_banned` matches in one iteration is banned for `ban_length << times_banned`
iterations. Unlike egg, the matches of a banned rule are not thrown away (egglog's incremental
search would never find them again): they wait and are applied once the rule is let back in and
its (doubled) limit admits them, so a run that reports `saturated` has applied every match.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from .limits import Limits

__all__ = ["Scheduler", "SimpleScheduler", "BackoffScheduler", "Phase"]


@dataclass(frozen=True)
class Phase:
    """One phase of a saturation schedule: its `rules` (anything `resolve_rules` takes) run within its
    own `limits`. `optimize(rules=[Phase("simplify", Limits(iterations=3)), Phase("default", Limits())])`
    saturates under each in turn, on one e-graph (see `eqsat.run_schedule`)."""

    rules: Any
    limits: Limits = Limits()


class Scheduler(Protocol):
    def can_search(self, rule: str, iteration: int) -> bool:
        """Whether `rule` searches (and applies) in `iteration`."""

    def admit(self, rule: str, iteration: int, n_matches: int) -> bool:
        """Whether `n_matches` matches of `rule` may be applied now; False bans the rule."""

    def banned(self, iteration: int) -> list[str]:
        """Rules held back in `iteration`, sorted."""

    def release(self) -> None:
        """Let every banned rule back in (called when nothing else can change the e-graph)."""


@dataclass
class SimpleScheduler:
    """Every rule searches and applies every iteration."""

    def can_search(self, rule: str, iteration: int) -> bool:
        return True

    def admit(self, rule: str, iteration: int, n_matches: int) -> bool:
        return True

    def banned(self, iteration: int) -> list[str]:
        return []

    def release(self) -> None:
        return None


@dataclass
class _RuleStats:
    times_banned: int = 0
    banned_until: int = 0


@dataclass
class BackoffScheduler:
    """Bans rules that match too often, doubling limit and ban length each time (egg's defaults)."""

    match_limit: int = 1000
    """matches one iteration may apply before the rule is banned (doubles with every ban)."""
    ban_length: int = 5
    """iterations a first ban lasts (doubles with every ban)."""
    _stats: dict[str, _RuleStats] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.match_limit < 1 or self.ban_length < 1:
            raise ValueError(f"BackoffScheduler needs match_limit >= 1 and ban_length >= 1, "
                             f"got {self.match_limit} and {self.ban_length}")

    def _of(self, rule: str) -> _RuleStats:
        return self._stats.setdefault(rule, _RuleStats())

    def can_search(self, rule: str, iteration: int) -> bool:
        return iteration >= self._of(rule).banned_until

    def admit(self, rule: str, iteration: int, n_matches: int) -> bool:
        stats = self._of(rule)
        threshold = self.match_limit << stats.times_banned
        if n_matches <= threshold:
            return True
        stats.banned_until = iteration + (self.ban_length << stats.times_banned)
        stats.times_banned += 1
        return False

    def banned(self, iteration: int) -> list[str]:
        return sorted(r for r, s in self._stats.items() if iteration < s.banned_until)

    def release(self) -> None:
        for s in self._stats.values():
            s.banned_until = 0
