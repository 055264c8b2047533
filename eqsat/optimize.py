"""The pipeline: lower, saturate, extract for a target, lift back to IR."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import ir
from ir import IRModule

from .egraph.lower import Lowered, lift, lower
from .egraph.view import EGraphView
from .extract import Choice, CostModel, Extractor, OpCount, get_extractor, node_costs
from .limits import Limits
from .report import IterationRow, Report
from .rules.library import resolve_rules
from .runner import saturate
from .scheduler import Scheduler

__all__ = ["Optimized", "optimize", "cost_model", "Saturated", "saturate_program", "extract_program"]


def cost_model(target: str | CostModel) -> CostModel:
    """`strategies.CostModel(target)` for a target name, `OpCount()` for "ops", or the model itself."""
    if not isinstance(target, str):
        return target
    if target == "ops":
        return OpCount()
    import strategies
    return strategies.CostModel(target)


def target_name(target: str | CostModel) -> str:
    return target if isinstance(target, str) else type(target).__name__


@dataclass
class Saturated:
    """A saturated e-graph of one program, ready for extraction under any cost model."""

    lowered: Lowered
    report: Report
    before: EGraphView
    """the e-graph as lowered: the input program, one node per class."""
    view: EGraphView
    """the e-graph after saturation."""

    def input_choice(self) -> Choice:
        return Choice(self.before.roots, {c: ns[0] for c, ns in self.before.classes.items()})


def saturate_program(mod: IRModule, params: Mapping[str, Any] | None = None, *, rules: Any = "default",
                     limits: Limits = Limits(), scheduler: Scheduler | None = None,
                     progress: Callable[[IterationRow], None] | None = None) -> Saturated:
    """Lower `mod` (binding `params`) and saturate it under `rules` (see `resolve_rules`) within `limits`."""
    lowered = lower(mod, params)
    before = lowered.view()
    report = saturate(lowered.egraph, resolve_rules(rules), limits, scheduler=scheduler, progress=progress)
    return Saturated(lowered, report, before, lowered.view())


@dataclass(frozen=True)
class Extracted:
    """One program extracted from a saturated e-graph, with its costs under one model."""

    mod: IRModule
    choice: Choice
    cost_before: float
    cost_after: float
    seconds: float


def extract_program(sat: Saturated, model: CostModel, extractor: str | Extractor) -> Extracted:
    """The cheapest program `extractor` finds under `model`; the input itself when that is no better."""
    costs = node_costs(sat.view, model)
    start = time.perf_counter()
    choice = get_extractor(extractor).extract(sat.view, sat.view.roots, costs)
    seconds = time.perf_counter() - start
    choice.check(sat.view)
    before_choice = sat.input_choice()
    before = before_choice.dag_cost(sat.before, node_costs(sat.before, model))
    after = choice.dag_cost(sat.view, costs)
    if after > before:  # a heuristic extractor can lose to the input on a hard e-graph: keep the input
        info = {**choice.info, "kept_input": True}
        return Extracted(lift(sat.lowered, sat.before, before_choice.node_of), Choice(before_choice.roots,
                         before_choice.node_of, info), before, before, seconds)
    return Extracted(lift(sat.lowered, sat.view, choice.node_of), choice, before, after, seconds)


@dataclass(frozen=True)
class Optimized:
    """The result of `optimize`: the program, what saturation did, and costs under the target's model."""

    mod: IRModule
    params: dict
    report: Report
    cost_before: float
    cost_after: float
    target: str
    extractor: str
    choice: Choice
    extract_seconds: float
    info: Mapping[str, Any] = field(default_factory=dict)
    """extractor statistics (ILP status and gap, ...)."""

    def summary(self) -> str:
        gain = f" ({self.cost_before / self.cost_after:.2f}x)" if self.cost_after else ""
        return (f"{self.report.summary()}\ncost on {self.target} with {self.extractor}: {self.cost_before:.4g} -> "
                f"{self.cost_after:.4g}{gain}; extraction {self.extract_seconds:.3f} s")


def optimize(mod: IRModule, params: Mapping[str, Any] | None = None, *, target: str | CostModel = "cpu",
             rules: Any = "default", limits: Limits = Limits(), extractor: str | Extractor = "greedy",
             scheduler: Scheduler | None = None,
             progress: Callable[[IterationRow], None] | None = None) -> Optimized:
    """Saturate `mod` under `rules` within `limits`; lift the cheapest equivalent for `target` back to IR.

    `params` are bound as constants first, so the result carries them inline (`Optimized.params`
    is empty). `target` is a `strategies` target name, `"ops"` (count ops), or any `CostModel`.
    """
    sat = saturate_program(mod, params, rules=rules, limits=limits, scheduler=scheduler, progress=progress)
    out = extract_program(sat, cost_model(target), extractor)
    ir.infer_type(out.mod)
    return Optimized(out.mod, {}, sat.report, out.cost_before, out.cost_after, target_name(target),
                     str(getattr(extractor, "name", extractor)), out.choice, out.seconds, dict(out.choice.info))
