"""Programs extracted for several targets and extractors from one saturated e-graph, side by side.

One saturation, then one extraction per (target, extractor): the cost models of different
targets price (and allow) ops differently, so they may pick different programs from the same
e-graph. The table labels every distinct program with a letter, so equal letters mean equal
programs; `differences()` lists, per pair of distinct programs, the ops whose counts differ and
the rules that made nodes of one program but not of the other (from each program's provenance),
and `diff(a, b)` gives the text diff of two candidates' programs (`program_diff`).
"""

from __future__ import annotations

import difflib
import re
import string
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

import ir
import strategies
from ir import IRModule

from .explain import Change
from .extract import CostModel, Extractor
from .limits import Limits
from .optimize import VerifiedMemo, trials_of, extract_for, op_counts, saturate_program
from .report import IterationRow, Report
from .rules.library import targets_rules
from .scheduler import Scheduler
from .soundness.verify import Verification
from .target import TargetSpec, resolve_target

__all__ = ["Candidate", "Comparison", "compare", "program_diff"]


@dataclass(frozen=True)
class Candidate:
    """One (target, extractor) pair: its program and parameters, costs, op counts, diff to the input."""

    target: str
    extractor: str
    mod: IRModule
    params: Mapping[str, np.ndarray]
    cost_before: float
    cost_after: float
    unit: str
    extract_seconds: float
    op_counts: Mapping[str, int]
    diff: str
    """unified diff of the input program's text against this program's."""
    info: Mapping[str, Any]
    program: str
    """a letter naming the program: candidates with equal letters extracted equal programs."""
    changes: tuple[Change, ...] = ()
    provenance: Mapping[ir.Expr, tuple[str, ...]] = field(default_factory=dict)
    """each rule-made node of `mod` -> its rule chain (see `Optimized.provenance`)."""
    verification: Verification | None = None
    """how the program was verified where its target runs it (None with `verify=False`)."""

    @property
    def key(self) -> str:
        return f"{self.target}/{self.extractor}"

    @property
    def rules_used(self) -> frozenset[str]:
        """Every rule in the chain of some node of the program."""
        return frozenset(r for chain in self.provenance.values() for r in chain)


_LOCAL = re.compile(r"%\d+\b")


def _text(mod: IRModule) -> list[str]:
    return ir.astext(mod, show_types=False).splitlines()


def program_diff(a: list[str], b: list[str], names: tuple[str, str], context: int = 1) -> str:
    """A unified diff of two program texts that lines up statements by what they compute: numbered
    locals (`%12`) are ignored when matching lines, so one inserted statement does not turn every
    later line into a change."""
    keys_a, keys_b = [_LOCAL.sub("%", line) for line in a], [_LOCAL.sub("%", line) for line in b]
    out = [f"--- {names[0]}", f"+++ {names[1]}"]
    for group in difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False).get_grouped_opcodes(context):
        (_, a0, _, b0, _), (_, _, a1, _, b1) = group[0], group[-1]
        out.append(f"@@ -{a0 + 1},{a1 - a0} +{b0 + 1},{b1 - b0} @@")
        for tag, i0, i1, j0, j1 in group:
            if tag == "equal":
                out.extend(" " + line for line in a[i0:i1])
                continue
            out.extend("-" + line for line in a[i0:i1])
            out.extend("+" + line for line in b[j0:j1])
    return "\n".join(out) if len(out) > 2 else ""


def _op_delta(a: Mapping[str, int], b: Mapping[str, int]) -> str:
    ops = sorted(op for op in set(a) | set(b) if a.get(op, 0) != b.get(op, 0))
    return ", ".join(f"{op} {a.get(op, 0)} -> {b.get(op, 0)}" for op in ops)


@dataclass(frozen=True)
class Comparison:
    """All candidates from one saturation run; `str()` gives the table and where the programs differ."""

    report: Report
    input_op_counts: Mapping[str, int]
    candidates: tuple[Candidate, ...]

    def candidate(self, key: str | int) -> Candidate:
        """A candidate by position or by "target/extractor" (or "target" when it has one extractor)."""
        if isinstance(key, int):
            return self.candidates[key]
        found = [c for c in self.candidates if key in (c.key, c.target)]
        if len(found) != 1:
            raise KeyError(f"{key!r} names {len(found)} candidates; candidates: {[c.key for c in self.candidates]}")
        return found[0]

    def table(self) -> str:
        head = (f"{'target':<10} {'extractor':<9} {'program':>7} {'cost before':>12} {'cost after':>12} "
                f"{'unit':<5} {'extract s':>9}  ops changed")
        lines = [head]
        for c in self.candidates:
            delta = _op_delta(self.input_op_counts, c.op_counts) or "-"
            lines.append(f"{c.target:<10} {c.extractor:<9} {c.program:>7} {c.cost_before:>12.4g} "
                         f"{c.cost_after:>12.4g} {c.unit:<5} {c.extract_seconds:>9.3f}  {delta}")
        return "\n".join(lines)

    def differences(self) -> str:
        """For each pair of distinct programs (first candidate of each letter), the op counts that differ
        and the rules only one of them used."""
        firsts: dict[str, Candidate] = {}
        for c in self.candidates:
            firsts.setdefault(c.program, c)
        reps = list(firsts.values())
        lines = []
        for i, a in enumerate(reps):
            for b in reps[i + 1:]:
                delta = _op_delta(a.op_counts, b.op_counts) or "same op counts, different structure"
                lines.append(f"program {a.program} ({a.key}) vs {b.program} ({b.key}): {delta}")
                for x, y in ((a, b), (b, a)):
                    only = sorted(x.rules_used - y.rules_used)
                    if only:
                        lines.append(f"  rules only in {x.program} ({x.key}): {', '.join(only)}")
        return "\n".join(lines) if lines else "every candidate extracted the same program"

    def diff(self, first: str | int, second: str | int, context: int = 1) -> str:
        """Unified diff of two candidates' program texts (empty when the programs are equal)."""
        a, b = self.candidate(first), self.candidate(second)
        return program_diff(_text(a.mod), _text(b.mod), (a.key, b.key), context)

    def diffs(self) -> str:
        """Each candidate's diff against the input program."""
        return "\n".join(f"=== {c.key} (program {c.program})\n{c.diff or '(unchanged)'}" for c in self.candidates)

    def verifications(self) -> str:
        """How each candidate's program was verified, one line each."""
        return "\n".join(f"{c.key} (program {c.program}): "
                         f"{c.verification.summary() if c.verification else 'not verified (verify=False)'}"
                         for c in self.candidates)

    def __str__(self) -> str:
        return f"{self.report.summary()}\n{self.table()}\n{self.differences()}\n{self.verifications()}"


def compare(mod: IRModule, params: Mapping[str, Any] | None = None, *,
            targets: Sequence["str | strategies.Target | CostModel | TargetSpec"] = ("cpu",),
            extractors: Sequence[str | Extractor] = ("greedy",), rules: Any = None, limits: Limits = Limits(),
            scheduler: Scheduler | None = None, progress: Callable[[IterationRow], None] | None = None,
            verify: bool | int = True) -> Comparison:
    """Saturate once, then extract for every target and extractor; compare cost, op counts and text.

    Each target is resolved as `optimize` resolves it and each program extracted and verified by the
    same function (`eqsat.optimize.extract_for`, verifying each distinct program once per place it
    runs), so a candidate that fails raises `VerificationError`; `verify=False` skips it. `rules`
    defaults to the union of the targets' own (`targets_rules`).
    """
    trials = trials_of(verify)
    specs = [resolve_target(t) for t in targets]
    rules = targets_rules(spec.name for spec in specs) if rules is None else rules
    sat = saturate_program(mod, params, rules=rules, limits=limits, scheduler=scheduler, progress=progress)
    input_mod = sat.input_module()[0]
    before_text = _text(input_mod)
    candidates: list[Candidate] = []
    programs: list[tuple[IRModule, str]] = []
    memo: VerifiedMemo = {}
    for spec in specs:
        for extractor in extractors:
            out = extract_for(sat, spec, extractor, source=(mod, params), trials=trials, limits=limits, memo=memo)
            letter = next((name for prog, name in programs if ir.structural_equal(prog, out.mod)), None)
            if letter is None:
                k = len(programs)
                letter = string.ascii_uppercase[k] if k < 26 else f"P{k}"
                programs.append((out.mod, letter))
            candidates.append(Candidate(
                target=spec.name, extractor=str(getattr(extractor, "name", extractor)), mod=out.mod,
                params=out.params, cost_before=out.cost_before, cost_after=out.cost_after, unit=spec.unit,
                extract_seconds=out.seconds, op_counts=dict(sorted(op_counts(out.mod).items())),
                diff=program_diff(before_text, _text(out.mod), ("input", "extracted")), info=dict(out.choice.info),
                program=letter, changes=out.changes, provenance=out.provenance, verification=out.verification))
    return Comparison(sat.report, dict(sorted(op_counts(input_mod).items())), tuple(candidates))
