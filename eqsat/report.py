"""What a saturation run did: one row per iteration, the stop reason, and totals."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .limits import Limits, Stop, StopReason

__all__ = ["IterationRow", "Report", "chained"]


@dataclass(frozen=True)
class IterationRow:
    """One iteration: sizes after it, per-rule counts (rules with none left out), phase seconds."""

    iteration: int
    enodes: int
    eclasses: int
    matches_per_rule: Mapping[str, int]
    """new matches found (or taken from the deferred queue) per rule."""
    applied_per_rule: Mapping[str, int]
    """matches whose result passed guards and type checks and merged two different classes."""
    seconds: Mapping[str, float]
    """"search" (egglog e-matching + reading matches), "apply" (Python), "rebuild" (egglog)."""
    banned: tuple[str, ...] = ()
    """rules the back-off scheduler held back in this iteration."""

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds.values())


@dataclass(frozen=True)
class Report:
    """The outcome of `saturate`: why it stopped, the budgets in force, and every iteration."""

    stop: Stop
    """why the run stopped, with the value that reached a limit."""
    limits: Limits
    rows: tuple[IterationRow, ...]
    initial_enodes: int
    initial_eclasses: int
    seconds: float
    """wall clock of the whole run."""
    rejected_per_rule: Mapping[str, int] = field(default_factory=dict)
    """results dropped because they were ill-typed or their type differed from the matched class."""
    rule_errors: Mapping[str, str] = field(default_factory=dict)
    """rule -> the first error its callback raised (a bug in the rule); those matches were skipped."""

    @property
    def stop_reason(self) -> StopReason:
        return self.stop.reason

    @property
    def iterations(self) -> int:
        return len(self.rows)

    @property
    def enodes(self) -> int:
        return self.rows[-1].enodes if self.rows else self.initial_enodes

    @property
    def eclasses(self) -> int:
        return self.rows[-1].eclasses if self.rows else self.initial_eclasses

    @property
    def matches_per_rule(self) -> dict[str, int]:
        return dict(sorted(sum((Counter(r.matches_per_rule) for r in self.rows), Counter()).items()))

    @property
    def applied_per_rule(self) -> dict[str, int]:
        return dict(sorted(sum((Counter(r.applied_per_rule) for r in self.rows), Counter()).items()))

    def to_dict(self) -> dict:
        """Plain data for JSON: stop reason, limits, totals and one entry per iteration."""
        return {
            "stop_reason": self.stop_reason.value, "stop_value": self.stop.value,
            "limits": {"iterations": self.limits.iterations, "nodes": self.limits.nodes,
                       "seconds": self.limits.seconds},
            "iterations": self.iterations, "seconds": self.seconds,
            "initial": {"enodes": self.initial_enodes, "eclasses": self.initial_eclasses},
            "final": {"enodes": self.enodes, "eclasses": self.eclasses},
            "matches_per_rule": self.matches_per_rule, "applied_per_rule": self.applied_per_rule,
            "rejected_per_rule": dict(self.rejected_per_rule), "rule_errors": dict(self.rule_errors),
            "rows": [{"iteration": r.iteration, "enodes": r.enodes, "eclasses": r.eclasses,
                      "matches_per_rule": dict(r.matches_per_rule), "applied_per_rule": dict(r.applied_per_rule),
                      "seconds": dict(r.seconds), "banned": list(r.banned)} for r in self.rows],
        }

    def summary(self) -> str:
        errors = "".join(f"\nrule {name} failed on a match, which was skipped (please report it): {error}"
                         for name, error in self.rule_errors.items())
        return (f"stopped: {self.stop} after {self.iterations} iterations in {self.seconds:.3f} s; "
                f"{self.initial_enodes} -> {self.enodes} e-nodes, {self.initial_eclasses} -> {self.eclasses} e-classes"
                f"{errors}")

    def table(self) -> str:
        head = (f"{'iter':>4} {'e-nodes':>9} {'e-classes':>9} {'search s':>9} {'apply s':>8} {'rebuild s':>9}"
                "  most matches")
        lines = [head, f"{0:>4} {self.initial_enodes:>9} {self.initial_eclasses:>9}"]
        for r in self.rows:
            top = sorted(r.matches_per_rule.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
            most = ", ".join(f"{k} {v}" for k, v in top)
            if r.banned:
                most += f"  [banned: {', '.join(r.banned)}]"
            lines.append(f"{r.iteration:>4} {r.enodes:>9} {r.eclasses:>9} {r.seconds.get('search', 0):>9.3f} "
                         f"{r.seconds.get('apply', 0):>8.3f} {r.seconds.get('rebuild', 0):>9.3f}  {most}")
        return "\n".join(lines)

    def rule_table(self) -> str:
        matches, applied = self.matches_per_rule, self.applied_per_rule
        lines = [f"{'rule':<32} {'matches':>8} {'applied':>8} {'rejected':>8}"]
        for name in sorted(set(matches) | set(applied) | set(self.rejected_per_rule)):
            lines.append(f"{name:<32} {matches.get(name, 0):>8} {applied.get(name, 0):>8} "
                         f"{self.rejected_per_rule.get(name, 0):>8}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return "\n".join([self.summary(), self.table(), self.rule_table()])


def chained(reports: Sequence[Report]) -> Report:
    """The reports of a schedule's phases (`eqsat.Phase`, run one after another on one e-graph) as
    one: iterations numbered on, the last phase's stop and limits, totals summed."""
    if not reports:
        raise ValueError("a schedule has at least one phase")
    rows, done = [], 0
    for report in reports:
        rows += [dataclasses.replace(row, iteration=row.iteration + done) for row in report.rows]
        done += report.iterations
    rejected = sum((Counter(r.rejected_per_rule) for r in reports), Counter())
    errors = {name: error for r in reports for name, error in r.rule_errors.items()}
    return dataclasses.replace(reports[-1], rows=tuple(rows), initial_enodes=reports[0].initial_enodes,
                               initial_eclasses=reports[0].initial_eclasses, seconds=sum(r.seconds for r in reports),
                               rejected_per_rule=dict(sorted(rejected.items())), rule_errors=errors)

