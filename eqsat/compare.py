"""Programs extracted for several targets and extractors from one saturated e-graph, side by side."""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import ir
from ir import IRModule

from .extract import CostModel, Extractor
from .limits import Limits
from .egraph.lower import lift
from .optimize import Saturated, cost_model, extract_program, saturate_program, target_name
from .report import IterationRow, Report
from .scheduler import Scheduler

__all__ = ["Candidate", "Comparison", "compare"]


def _op_counts(mod: IRModule) -> Counter[str]:
    return Counter(n.op.name for n in ir.post_order(mod["main"].body)
                   if isinstance(n, ir.Call) and isinstance(n.op, ir.Op))


@dataclass(frozen=True)
class Candidate:
    """One (target, extractor) pair: its program, costs, op counts and diff against the input."""

    target: str
    extractor: str
    mod: IRModule
    cost_before: float
    cost_after: float
    extract_seconds: float
    op_counts: Mapping[str, int]
    diff: str
    info: Mapping[str, Any]


@dataclass(frozen=True)
class Comparison:
    """All candidates from one saturation run; `str()` gives a table, `diffs()` the text diffs."""

    report: Report
    input_op_counts: Mapping[str, int]
    candidates: tuple[Candidate, ...]

    def table(self) -> str:
        ops = sorted(set(self.input_op_counts).union(*(c.op_counts for c in self.candidates)))
        changed = [op for op in ops if any(c.op_counts.get(op, 0) != self.input_op_counts.get(op, 0)
                                           for c in self.candidates)]
        head = f"{'target':<10} {'extractor':<9} {'cost before':>12} {'cost after':>12} {'extract s':>9}  ops changed"
        lines = [head]
        for c in self.candidates:
            delta = ", ".join(f"{op} {self.input_op_counts.get(op, 0)}->{c.op_counts.get(op, 0)}" for op in changed
                              if c.op_counts.get(op, 0) != self.input_op_counts.get(op, 0))
            lines.append(f"{c.target:<10} {c.extractor:<9} {c.cost_before:>12.4g} {c.cost_after:>12.4g} "
                         f"{c.extract_seconds:>9.3f}  {delta or '-'}")
        return "\n".join(lines)

    def diffs(self) -> str:
        return "\n".join(f"=== {c.target} / {c.extractor}\n{c.diff or '(unchanged)'}" for c in self.candidates)

    def __str__(self) -> str:
        return f"{self.report.summary()}\n{self.table()}"


def compare(mod: IRModule, params: Mapping[str, Any] | None = None, *,
            targets: Sequence[str | CostModel] = ("cpu",), extractors: Sequence[str | Extractor] = ("greedy",),
            rules: Any = "default", limits: Limits = Limits(), scheduler: Scheduler | None = None,
            progress: Callable[[IterationRow], None] | None = None) -> Comparison:
    """Saturate once, then extract for every target and extractor; compare cost, op counts and text."""
    sat = saturate_program(mod, params, rules=rules, limits=limits, scheduler=scheduler, progress=progress)
    before_text = ir.astext(_input_module(sat), show_types=False).splitlines()
    candidates = []
    for target in targets:
        model = cost_model(target)
        for extractor in extractors:
            out = extract_program(sat, model, extractor)
            text = ir.astext(out.mod, show_types=False).splitlines()
            diff = "\n".join(difflib.unified_diff(before_text, text, "input", "extracted", lineterm="", n=1))
            candidates.append(Candidate(target_name(target), str(getattr(extractor, "name", extractor)), out.mod,
                                        out.cost_before, out.cost_after, out.seconds, dict(_op_counts(out.mod)),
                                        diff, dict(out.choice.info)))
    return Comparison(sat.report, dict(_op_counts(_input_module(sat))), tuple(candidates))


def _input_module(sat: Saturated) -> IRModule:
    return lift(sat.lowered, sat.before, sat.input_choice().node_of)
