"""A target resolved once: its cost model, what costs count, its rules, and where its programs run.

    spec = resolve_target("ort")                       # ONNX Runtime, its contrib and blocked kernels
    spec = resolve_target(strategies.Target("ort", optimizer="disabled"), log="ort.jsonl")
    sat = saturate_program(mod, params, rules=spec.rules)
    out = extract_for(sat, spec, "greedy", source=(mod, params), trials=3)   # verified where it runs

Every command that saturates or extracts for a target (`optimize`, `compare`, `tune`, `show`,
`why`, `batch`) takes its rules and cost model from here, and `optimize.extract_for` extracts and
verifies for it, so they give the same program for the same target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import strategies

from .extract import CostModel, OpCount
from .rules.library import default_rules, resolve_rules
from .rules.rule import RuleSet

__all__ = ["TargetSpec", "resolve_target", "in_session"]


@dataclass(frozen=True)
class TargetSpec:
    """What a target decides: its name, cost model and unit, default rules, and how programs for it
    are written and checked (`standard_onnx`; ONNX Runtime's session for an ort target)."""

    name: str
    model: CostModel
    unit: str
    rules: RuleSet
    standard_onnx: bool = False
    target: strategies.Target | None = None
    """the strategies target (None for "ops" and for a cost model of another kind)."""

    @property
    def runs_in(self) -> str:
        """Where its programs run, and so are verified: "ort" (ONNX Runtime) or "cpu" (the executor)."""
        return "ort" if self.target is not None and "ort" in self.target.keys else "cpu"

    @property
    def contrib(self) -> bool:
        """Whether its programs are written with ONNX Runtime's contrib ops (the ort target's own kernels)."""
        return self.runs_in == "ort" and not self.standard_onnx


def resolve_target(target: "str | strategies.Target | CostModel | TargetSpec", log: Any = None, *,
                   standard_onnx: bool = False) -> TargetSpec:
    """The `TargetSpec` of a target name ("cpu", "ort", "ops", ...), a `strategies.Target` or a cost model
    (a `TargetSpec` is returned as it is).

    `log` (a tuning log path or records) refines a strategies target's cost model; it does not apply
    to "ops" or to a cost model given as such. The rules are the target's defaults
    (`default_rules`: the ort target's blocked-layout rules are left out for `standard_onnx`).
    A `target` of any other kind is a `TypeError` that names it.
    """
    if isinstance(target, TargetSpec):
        if log is not None or (standard_onnx and not target.standard_onnx):
            raise ValueError("a resolved TargetSpec takes no further log or standard_onnx: resolve the target with them")
        return target
    if isinstance(target, (str, strategies.Target)) and target != "ops":
        resolved = strategies.Target(target) if isinstance(target, str) else target
        model: CostModel = strategies.CostModel(resolved, log)
        return _spec(resolved.kind, model, "µs", standard_onnx, resolved)
    if log is not None:
        raise ValueError(f"a tuning log applies to a strategies target, not to {target!r}")
    if target == "ops" or isinstance(target, OpCount):
        return _spec("ops", target if isinstance(target, OpCount) else OpCount(), "ops", standard_onnx, None)
    if not callable(getattr(target, "node_cost", None)):
        raise TypeError(f"target must be a target name (e.g. 'cpu', 'ort', 'ops'), a strategies.Target or a cost "
                        f"model with a node_cost method, got {type(target).__name__} {target!r}")
    inner = getattr(target, "target", None)
    if isinstance(target, strategies.CostModel):
        return _spec(inner.kind, target, "µs", standard_onnx, inner)
    name = inner.kind if isinstance(getattr(inner, "kind", None), str) else type(target).__name__
    return _spec(name, target, "cost units", standard_onnx, None)


def _spec(name: str, model: CostModel, unit: str, standard_onnx: bool,
          target: strategies.Target | None) -> TargetSpec:
    return TargetSpec(name, model, unit, resolve_rules(default_rules(name, standard_onnx)), standard_onnx, target)


def in_session(name: str, optimizer: str = "all", threads: int = 1) -> "str | strategies.Target":
    """The target `name`, as a `strategies.Target` in the ONNX Runtime session `optimizer` and
    `threads` name when its programs run in ONNX Runtime (the ort target); else the name itself."""
    if name != "ops" and "ort" in strategies.Target(name).keys:
        return strategies.Target(name, optimizer=optimizer, threads=threads)
    return name

