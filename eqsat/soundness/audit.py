"""Checking a whole rule set: every rule on its example (`check_rule`) and on its near misses.

A rule's example is its own `example` (every library rule has one, next to it).
Examples are checked in their own dtype and again in `CHECKED_DTYPES` (float16, bfloat16,
float64, int64, uint8) wherever they type-check and the rule fires.
Each rule gets one `RuleVerdict`: `ok`, `unsound` (a program of its e-graph computes something
else), `silent` (it does not fire on its example), `near-miss` (it fires where a guard must
refuse), or `no-example`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import ir
from ir import Expr, IRModule

from ..egraph.lower import lower
from ..errors import RuleError, first_line
from ..limits import Limits
from ..rules.rule import Rule, ruleset
from ..runner import saturate
from .check import check_rule
from .random_programs import DTYPES, random_programs

__all__ = ["CHECKED_DTYPES", "RuleVerdict", "RandomAudit", "audit_rules", "audit_random", "rule_example", "fires_on",
           "VERDICTS"]

VERDICTS = ("ok", "unsound", "silent", "near-miss", "no-example")
CHECKED_DTYPES = ("float16", "bfloat16", "float64", "int64", "uint8")
"""the dtypes each rule's example is checked in besides its own (float32)."""


@dataclass(frozen=True)
class RuleVerdict:
    """One rule's check: how often it fired on its example, the programs checked, the near misses."""

    rule: str
    verdict: str
    """one of `VERDICTS`."""
    applied: int = 0
    """matches applied on the example."""
    programs: int = 0
    """distinct programs of the example's e-graph run against it."""
    near_misses: int = 0
    """near misses tried (each must leave the rule silent)."""
    seconds: float = 0.0
    detail: str = ""
    """why the verdict is not `ok` (first line of the failure)."""

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


def rule_example(r: Rule) -> Callable[[], Expr] | None:
    """The program `r` must fire on: its own `example`, else None."""
    return getattr(r, "example", None)


def fires_on(r: Rule, program: Expr, limits: Limits = Limits(iterations=2)) -> int:
    """How many matches `r` alone applies while saturating `program`."""
    mod = IRModule.from_expr(program)
    ir.infer_type(mod)
    report = saturate(lower(mod).egraph, ruleset(r.name, [r]), limits)
    return report.applied_per_rule.get(r.name, 0)


def audit_rules(rules: Iterable[Rule], dtypes: Sequence[str] = CHECKED_DTYPES) -> list[RuleVerdict]:
    """A verdict per rule, in order: `check_rule` on its example, and on its example in each of
    `dtypes` (`in_dtype`) where the rule fires there, then each near miss must not fire."""
    return [_audit(r, tuple(dtypes)) for r in rules]


def _in_other_dtypes(r: Rule, example: Callable[[], Expr], dtypes: tuple[str, ...]) -> str:
    """'' when `r` is sound on its example in every dtype of `dtypes` where it type-checks and
    fires, else the first failure."""
    for dtype in dtypes:
        try:
            check_rule(r, example, dtype=dtype)
        except (RuleError, ir.IRError):  # the example does not type-check, or the rule declines, in `dtype`
            continue
        except AssertionError as err:
            return f"in {dtype}: {first_line(err)}"
    return ""


def _audit(r: Rule, dtypes: tuple[str, ...] = ()) -> RuleVerdict:
    start = time.perf_counter()
    example = rule_example(r)
    if example is None:
        return RuleVerdict(r.name, "no-example", detail="no example program (give the rule one)")
    try:
        checked = check_rule(r, example)
    except RuleError as err:
        return RuleVerdict(r.name, "silent", seconds=time.perf_counter() - start, detail=first_line(err))
    except AssertionError as err:
        return RuleVerdict(r.name, "unsound", seconds=time.perf_counter() - start, detail=first_line(err))
    problem = _in_other_dtypes(r, example, dtypes)
    if problem:
        return RuleVerdict(r.name, "unsound", checked.applied, checked.programs, seconds=time.perf_counter() - start,
                           detail=problem)
    misses = tuple(getattr(r, "near_misses", ()))
    for k, miss in enumerate(misses):
        fired = fires_on(r, miss())
        if fired:
            return RuleVerdict(r.name, "near-miss", checked.applied, checked.programs, len(misses),
                               time.perf_counter() - start, f"fired {fired} time(s) on near miss {k + 1}")
    return RuleVerdict(r.name, "ok", checked.applied, checked.programs, len(misses), time.perf_counter() - start)


@dataclass(frozen=True)
class RandomAudit:
    """A rule set run on seeded random programs (`random_programs`): how many, on how many it
    fired, and per unsound rule the first program it broke."""

    programs: int
    fired: int
    unsound: dict[str, str]
    """rule name -> the program (text) where a program of its e-graph computed something else."""

    def summary(self) -> str:
        verdict = "no rule unsound" if not self.unsound else f"unsound: {', '.join(sorted(self.unsound))}"
        return f"random programs: {self.programs}, rules fired on {self.fired}; {verdict}"


def audit_random(rules: Iterable[Rule], count: int, seed: int = 0, dtypes: Sequence[str] = DTYPES) -> RandomAudit:
    """Check the rule set on `count` random programs (broadcasting shapes, edge constants, each in
    one of `dtypes`: float32, int32, float16, bfloat16, float64, int64 and uint8 by default) with
    `check_rule`; where the set breaks a program, each rule alone names the culprit."""
    rules = list(rules)
    every = ruleset("random-audit", rules)
    fired, unsound = 0, {}
    for mod in random_programs(count, seed, dtypes=dtypes):
        try:
            check_rule(every, mod["main"].body, relative_to="intermediates")
        except RuleError:  # no rule fires on this program
            continue
        except AssertionError:
            for r in rules:
                if r.name in unsound:
                    continue
                try:
                    check_rule(r, mod["main"].body, relative_to="intermediates")
                except AssertionError:
                    unsound[r.name] = ir.astext(mod)
                except RuleError:
                    pass
        fired += 1
    return RandomAudit(count, fired, unsound)
