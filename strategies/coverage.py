"""What a tuning log covers of a program: per workload, tuned or not, what will run and why.

    cov = strategies.tuning_coverage(mod, "cpu", "tuning.jsonl", params)
    print(cov.summary())     # "tuning.jsonl on cpu: 12 of 20 workloads tuned; 35.2% of the cost (1234 µs) untuned"
    print(cov.table())       # one line per workload: calls, cost, tuned or not, implementation, reason

A workload is *tuned* when the log gives its cost: selection picks a measured record for it
(`Selection.reason == "tuned"`), or, on an `ort` target, ONNX Runtime's latency for it is
logged. Every other workload runs the implementation selection picks without a record (highest
plevel, or the generic fallback) and is costed by the roofline estimate. Costs are
`CostModel(target, log)`'s: measured where tuned, estimated elsewhere, constants folded first.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ir.expr import Expr
from ir.module import IRModule

from .cost import CostModel
from .errors import NoImplementationError
from .executor import prepare_program
from .records import ORT_IMPLEMENTATION, TuningHistory, TuningRecord
from .select import Selection, candidate_implementations, highest_plevel, select_implementation
from .workload import Workload

__all__ = ["WorkloadCoverage", "TuningCoverage", "tuning_coverage"]


@dataclass(frozen=True)
class WorkloadCoverage:
    """One distinct workload of the program: how often it is called, its cost, what runs and why."""

    workload: Workload
    calls: int
    cost_us: float
    """the cost of all its calls (measured where tuned, else estimated); inf when nothing can run it."""
    tuned: bool
    implementation: str | None
    """the implementation that will run ("onnxruntime" for a workload the log times in ONNX Runtime;
    None: the target has none)."""
    reason: str
    """why, as the selection states it: "tuned: 12.3 us measured, config {...}", "plevel 10, highest
    of 3 valid", "fallback: no strategy for keys ...", or why nothing can run it."""


@dataclass(frozen=True)
class TuningCoverage:
    """Coverage of one program by one tuning log on one target."""

    target: str
    source: str
    """the log's path (or "<records>")."""
    rows: tuple[WorkloadCoverage, ...]

    @property
    def total_us(self) -> float:
        return sum(r.cost_us for r in self.rows)

    @property
    def untuned_us(self) -> float:
        return sum(r.cost_us for r in self.rows if not r.tuned)

    @property
    def untuned_share(self) -> float:
        """The untuned part of the program's estimated cost, between 0 and 1 (0 for a free program)."""
        return self.untuned_us / self.total_us if self.total_us else 0.0

    @property
    def tuned_share(self) -> float:
        return 1.0 - self.untuned_share

    def summary(self) -> str:
        tuned = sum(r.tuned for r in self.rows)
        return (f"{self.source} on {self.target}: {tuned} of {len(self.rows)} workloads tuned; "
                f"{100 * self.untuned_share:.1f}% of the cost ({self.total_us:.4g} µs) untuned")

    def table(self) -> str:
        """One line per workload, most costly first: calls, µs, tuned or not, implementation and reason."""
        lines = [f"{'calls':>5} {'µs':>10} {'share':>6}  {'tuned':<5}  workload -> implementation (why)"]
        total = self.total_us or 1.0
        for r in sorted(self.rows, key=lambda r: (-r.cost_us, r.workload.key)):
            lines.append(f"{r.calls:>5} {r.cost_us:>10.4g} {100 * r.cost_us / total:>5.1f}%  "
                         f"{'yes' if r.tuned else 'no':<5}  {r.workload.describe()} -> "
                         f"{r.implementation or 'none'} ({r.reason})")
        return "\n".join(lines)


def tuning_coverage(program: IRModule | Expr, target: str,
                    log: "str | os.PathLike | TuningHistory | Iterable[TuningRecord]",
                    params: Mapping[str, Any] | None = None) -> TuningCoverage:
    """Per distinct workload of `program` (params bound, constants folded): tuned by `log` on
    `target` or not, the implementation that will run, why, and its share of the cost."""
    history = TuningHistory.load(log)
    model = CostModel(target, history)
    workloads: dict[str, tuple[Workload, int, float]] = {}
    for node, cost, _ in model.calls(prepare_program(program, params)):
        workload = Workload.of_call(node)
        _, calls, total = workloads.get(workload.key, (workload, 0, 0.0))
        workloads[workload.key] = (workload, calls + 1, total + cost)
    rows = tuple(_row(model, workload, calls, cost) for workload, calls, cost in workloads.values())
    return TuningCoverage(model.target.kind, history.source, rows)


def _row(model: CostModel, workload: Workload, calls: int, cost_us: float) -> WorkloadCoverage:
    target = model.target
    measured = model.measured.get(workload.key)
    try:
        if not workload.static:
            impl = highest_plevel(candidate_implementations(workload, target)[1])
            return WorkloadCoverage(workload, calls, cost_us, False, impl.name,
                                    "symbolic shapes: selected per actual shape at run time")
        selection: Selection = select_implementation(workload, target, model.history)
    except NoImplementationError as err:
        return WorkloadCoverage(workload, calls, cost_us, False, None, str(err))
    if measured is not None:
        return WorkloadCoverage(workload, calls, cost_us, True, ORT_IMPLEMENTATION,
                                f"tuned: {measured:.1f} us measured in ONNX Runtime")
    why = selection.describe(target).rsplit(" (", 1)[1].rstrip(")")
    return WorkloadCoverage(workload, calls, cost_us, selection.reason == "tuned", selection.implementation.name, why)
