"""Selecting an implementation for a workload: tuned record first, else the highest plevel.

The rules of the op-strategy guide: among the implementations whose condition holds for the
workload's shapes, the best measured one in the tuning history wins ("tuned"); without a usable
record, the one with the highest plevel wins ("plevel"; ties go to the one added first). When the
op has no strategy for the target's keys and the generic one was used, the reason is "fallback".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .condition import input_shapes
from .errors import NoImplementationError
from .records import TuningHistory, current_history
from .registry import op_strategy
from .strategy import ConfigSpace, OpImplementation, OpStrategy
from .target import Target, as_target
from .workload import Workload

__all__ = ["Selection", "select_implementation", "candidate_implementations", "highest_plevel", "config_space"]


@dataclass(frozen=True)
class Selection:
    """The implementation and configuration chosen for one workload, and why."""

    workload: Workload
    implementation: OpImplementation
    config: dict[str, Any]
    reason: str                     # "tuned" | "plevel" | "fallback" | "reference"
    candidates: tuple[str, ...]     # the implementations whose condition held
    measured_us: float | None = None

    def describe(self, target: Target) -> str:
        """One log line: workload, implementation, and the reason for it."""
        impl = self.implementation
        if self.reason == "tuned":
            why = f"tuned: {self.measured_us:.1f} us measured, config {self.config}"
        elif self.reason == "fallback":
            why = f"fallback: no strategy for keys {', '.join(target.keys[:-1])}, generic plevel {impl.plevel}"
        elif self.reason == "reference":
            why = "reference kernel: the target has no implementation"
        else:
            why = f"plevel {impl.plevel}, highest of {len(self.candidates)} valid"
        return f"{target}: {self.workload.describe()} -> {impl.name} ({why})"


def config_space(impl: OpImplementation, workload: Workload, target: Target | str) -> ConfigSpace:
    """The knobs `impl` offers for `workload` on `target` (its schedule, run under the target)."""
    target = as_target(target)
    with target:
        return impl.schedule(workload.attrs, list(workload.in_types), workload.out_type, target)


def highest_plevel(implementations: list[OpImplementation]) -> OpImplementation:
    """The implementation with the highest plevel; the first added among equals."""
    return max(implementations, key=lambda impl: impl.plevel)  # max keeps the first of equal keys


def candidate_implementations(workload: Workload,
                              target: Target | str) -> tuple[OpStrategy, list[OpImplementation], bool]:
    """The strategy, the implementations whose condition holds, and whether the strategy is a fallback.

    For a workload with symbolic dimensions, implementations whose condition is still undecided
    count too (run time decides them). Raises `NoImplementationError` when none is left.
    """
    target = as_target(target)
    choice = op_strategy(workload.op, workload.attrs, workload.in_types, workload.out_type, target)
    valid, undecided = choice.strategy.applicable(input_shapes(workload.in_types))
    candidates = valid + undecided
    if not candidates:
        names = [impl.name for impl in choice.strategy.implementations()]
        detail = f"none of {names} applies to these shapes" if names else "its strategy is empty"
        raise NoImplementationError(f"{workload.describe()} has no implementation on target {target}: {detail}")
    return choice.strategy, candidates, choice.fallback


def select_implementation(workload: Workload, target: Target | str,
                          history: TuningHistory | None = None) -> Selection:
    """Choose the implementation and configuration for a workload with static input shapes.

    `history` defaults to the one of the enclosing `apply_history_best` block.
    """
    target = as_target(target)
    if not workload.inputs_static:
        raise ValueError(f"select_implementation needs static input shapes, got {workload.describe()}")
    _, candidates, fallback = candidate_implementations(workload, target)
    names = tuple(impl.name for impl in candidates)
    history = history if history is not None else current_history()
    if history is not None:
        spaces = {impl.name: config_space(impl, workload, target) for impl in candidates}
        record = history.best(target.kind, workload.key, spaces)
        if record is not None:
            impl = next(i for i in candidates if i.name == record.implementation)
            return Selection(workload, impl, dict(record.config), "tuned", names, record.latency_us)
    impl = highest_plevel(candidates)
    return Selection(workload, impl, config_space(impl, workload, target).default(),
                     "fallback" if fallback else "plevel", names)
