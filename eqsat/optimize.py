"""The pipeline: lower, saturate, extract for a target, lift back to IR, verify against the input."""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

import ir
import strategies
from ir import IRModule
from strategies.executor import prepare_program

from .soundness.bisect import bisect_unsound
from .egraph.lower import Lowered, lift_params, lower
from .egraph.view import EGraphView
from .errors import ExtractionError, VerificationError
from .explain import Change, find_changes, format_changes, format_provenance
from .extract import Choice, CostModel, Extractor, get_extractor, node_costs
from .limits import Limits
from .provenance import Chains, Provenance
from .report import IterationRow, Report, chained
from .rules.library import resolve_rules
from .rules.rule import RuleSet, ruleset as ruleset_of
from .runner import run_schedule, saturate
from .scheduler import Phase, Scheduler
from .soundness.verify import Boundaries, Verification, verify as check_program
from .target import TargetSpec, resolve_target

if TYPE_CHECKING:
    from strategies.cost import Coverage

DEFAULT_TRIALS = 3
"""input sets `optimize(verify=True)` checks a result on: typical values, edge values, inf and NaN."""
BISECT_SECONDS = 20.0
"""how long a failed verification may replay saturation to name the unsound rule (`eqsat.bisect_unsound`)."""

__all__ = ["Optimized", "optimize", "op_counts", "Saturated", "saturate_program", "Extracted", "extract_program",
           "extract_for", "verify_extracted", "verified", "rewritten_boundaries", "trials_of"]


def op_counts(mod: IRModule) -> Counter[str]:
    """How many calls of each op `main` makes (shared nodes once)."""
    return Counter(n.op.name for n in ir.post_order(mod["main"].body)
                   if isinstance(n, ir.Call) and isinstance(n.op, ir.Op))


@dataclass
class Saturated:
    """A saturated e-graph of one program, ready for extraction under any cost model."""

    lowered: Lowered
    report: Report
    before: EGraphView
    """the e-graph as lowered: the input program, one node per class."""
    view: EGraphView
    """the e-graph after saturation."""
    rules: RuleSet | None = None
    """the rules saturation ran."""

    @cached_property
    def provenance(self) -> Provenance:
        """The rule chain of every e-node of `view`."""
        return Provenance(self.lowered.egraph, self.view)

    def input_choice(self) -> Choice:
        return Choice(self.before.roots, {c: ns[0] for c, ns in self.before.classes.items()})

    def typed_before(self) -> EGraphView:
        """`before` with its classes typed as saturation left them (`Any` dimensions the e-graph
        proved filled in), so the input is priced with what its extracted rivals are priced with."""
        egraph = self.lowered.egraph
        return dataclasses.replace(self.before, types={c: egraph.type_of(c) for c in self.before.types})

    def growth(self) -> Counter[str]:
        """Per rule, the e-nodes of `view` it made: which rules grew the e-graph most."""
        return Counter(origin for origin in self.view.origins if origin is not None)

    def input_module(self, fold_constants: bool = False) -> tuple[IRModule, dict[str, np.ndarray]]:
        """The input program as lowered (equal to the input), with its parameters; with `fold_constants`,
        its calls on constants and parameters alone folded (`lift_params`)."""
        if not fold_constants:
            return self._input_lifted[:2]
        return lift_params(self.lowered, self.before, self.input_choice().node_of, fold_constants=True)

    def input_nodes(self) -> dict[int, object]:
        """e-class -> the node of `input_module()` that computes it."""
        return self._input_lifted[2]

    @cached_property
    def _input_lifted(self) -> tuple[IRModule, dict[str, np.ndarray], dict[int, object]]:
        built: dict[int, object] = {}
        mod, params = lift_params(self.lowered, self.before, self.input_choice().node_of, built)
        return mod, params, built


def saturate_program(mod: IRModule, params: Mapping[str, Any] | None = None, *, rules: Any = "default",
                     limits: Limits = Limits(), scheduler: Scheduler | None = None,
                     progress: Callable[[IterationRow], None] | None = None) -> Saturated:
    """Lower `mod` (binding `params`) and saturate it under `rules` (see `resolve_rules`) within `limits`;
    or, for a schedule (a sequence of `Phase`s), under each phase's rules within its limits in turn,
    one report for the whole (`chained`; `limits` and `scheduler` then do not apply: each phase has
    its limits and a fresh back-off scheduler)."""
    lowered = lower(mod, params)
    before = lowered.view()
    if _is_schedule(rules):
        phases = [(resolve_rules(p.rules), p.limits) for p in rules]
        report = chained(run_schedule(lowered.egraph, phases))
        ruleset = ruleset_of("schedule", {r.name: r for rs, _ in phases for r in rs}.values())
    else:
        ruleset = resolve_rules(rules)
        report = saturate(lowered.egraph, ruleset, limits, scheduler=scheduler, progress=progress)
    return Saturated(lowered, report, before, lowered.view(), ruleset)


def _is_schedule(rules: Any) -> bool:
    """Whether `rules` is a schedule: a non-empty list or tuple of `Phase`s (a mix is a `TypeError`)."""
    if not isinstance(rules, (list, tuple)) or not any(isinstance(r, Phase) for r in rules):
        return False
    if not all(isinstance(r, Phase) for r in rules):
        raise TypeError("a schedule is a sequence of Phase(rules, limits) only; give rules or phases, not both")
    return True


@dataclass(frozen=True)
class Extracted:
    """One program extracted from a saturated e-graph, with its parameters and costs under one model."""

    mod: IRModule
    params: dict[str, np.ndarray]
    choice: Choice
    cost_before: float
    cost_after: float
    seconds: float
    changes: tuple[Change, ...]
    provenance: Mapping[ir.Expr, tuple[str, ...]] = field(default_factory=dict)
    """each node of `mod` that rules made -> its rule chain (see `eqsat.provenance`)."""
    built: Mapping[int, object] = field(default_factory=dict)
    """e-class -> the node of `mod` that computes it (empty when the input was kept)."""
    verification: Verification | None = None
    """how `extract_for` verified it (None when it was not)."""


def extract_program(sat: Saturated, model: CostModel, extractor: str | Extractor) -> Extracted:
    """The cheapest program `extractor` finds under `model`; the input itself when that is no better.

    Parameters that were bound for saturation are parameters again in the result, and calls on
    constants and parameters alone are folded into constants (`lift_params`): every cost model
    prices them at zero.
    """
    costs = node_costs(sat.view, model)
    start = time.perf_counter()
    choice = get_extractor(extractor).extract(sat.view, sat.view.roots, costs)
    seconds = time.perf_counter() - start
    choice.check(sat.view)
    before_choice = sat.input_choice()
    before = before_choice.dag_cost(sat.before, node_costs(sat.typed_before(), model))
    after = choice.dag_cost(sat.view, costs)
    if after > before:  # a heuristic extractor can lose to the input on a hard e-graph: keep the input
        mod, params = sat.input_module(fold_constants=True)
        kept = Choice(before_choice.roots, before_choice.node_of, {**choice.info, "kept_input": True})
        return Extracted(mod, params, kept, before, before, seconds, ())
    built: dict[int, object] = {}
    mod, params = lift_params(sat.lowered, sat.view, choice.node_of, built, fold_constants=True)
    return Extracted(mod, params, choice, before, after, seconds, tuple(find_changes(sat.view, choice, costs, model)),
                     Chains(sat.provenance, built, choice.node_of), built)


VerifiedMemo = dict[tuple[int, str, bool], list[tuple[IRModule, Verification]]]
"""(program hash, where it runs, contrib) -> the programs verified so, each with its verification."""


def extract_for(sat: Saturated, spec: TargetSpec, extractor: str | Extractor, *,
                source: tuple[IRModule, Mapping[str, Any] | None], trials: int, limits: Limits = Limits(),
                memo: VerifiedMemo | None = None) -> Extracted:
    """The program `extractor` takes from `sat` under `spec`'s cost model, typed, and verified against
    `source` (the input module and params) on `trials` input sets where `spec`'s programs run (none
    when `trials` is 0), with its `verification` set. Verification fails closed (`verify_extracted`).
    A `memo` shared across calls verifies each distinct program once per place it runs."""
    out = extract_program(sat, spec.model, extractor)
    try:
        ir.infer_type(out.mod)
    except ir.IRError as err:  # the e-graph's class types said more than the program's own ops can
        raise ExtractionError(f"the extracted program does not type-check, so it is not returned: {err}") from None
    if not trials:
        return out
    seen = [] if memo is None else memo.setdefault((ir.structural_hash(out.mod), spec.runs_in, spec.contrib), [])
    checked = next((v for m, v in seen if ir.structural_equal(m, out.mod)), None)
    if checked is None:
        mod, params = source
        checked = verify_extracted(mod, params, sat, out, spec, trials, limits)
        seen.append((out.mod, checked))
    return dataclasses.replace(out, verification=checked)


@dataclass(frozen=True)
class Optimized:
    """The result of `optimize`: the program and its parameters, what saturation did, costs under the
    target's model, what changed, and how the result was verified."""

    mod: IRModule
    params: dict
    """values of the parameters `mod` uses: the input's params that survived, under their names."""
    report: Report
    cost_before: float
    cost_after: float
    target: str
    extractor: str
    choice: Choice
    extract_seconds: float
    info: Mapping[str, Any] = field(default_factory=dict)
    """extractor statistics (ILP status and gap, ...)."""
    unit: str = "cost units"
    """what the costs count: "µs" on strategies targets, "ops" for op counting."""
    op_counts_before: Mapping[str, int] = field(default_factory=dict)
    op_counts_after: Mapping[str, int] = field(default_factory=dict)
    changes: tuple[Change, ...] = ()
    """regions of the result that rules made (see `explain`)."""
    verification: Verification | None = None
    """None when it was not verified: see `unverified`."""
    unverified: str = field(default="verify=False", kw_only=True)
    """why `verification` is None (`verified` verifies such a result later)."""
    provenance: Mapping[ir.Expr, tuple[str, ...]] = field(default_factory=dict, kw_only=True)
    """each node of `mod` that rules made -> its rule chain, in the order the rules applied; a node
    not in it came from the input (see `rules_of`, `eqsat.provenance`)."""
    saturated: Saturated | None = field(default=None, kw_only=True, repr=False)
    """the saturated e-graph the program was extracted from (for `eqsat.why_not`)."""
    coverage: "Coverage | None" = None
    """with a tuning log: how many of the result's workloads were measured or estimated (`strategies.cost.Coverage`)."""
    spec: TargetSpec | None = field(default=None, kw_only=True, repr=False)
    """the resolved target (for the ONNX Runtime session an ort program is timed in)."""
    built: Mapping[int, object] = field(default_factory=dict, kw_only=True, repr=False, compare=False)
    """e-class -> the node of `mod` that computes it (`Extracted.built`: the boundaries of the
    rewritten regions that verification checks)."""

    def op_changes(self) -> str:
        """"op before -> after" for every op whose count changed, e.g. "nn.conv2d 53 -> 0"."""
        ops = sorted(set(self.op_counts_before) | set(self.op_counts_after))
        changed = [f"{op} {self.op_counts_before.get(op, 0)} -> {self.op_counts_after.get(op, 0)}" for op in ops
                   if self.op_counts_before.get(op, 0) != self.op_counts_after.get(op, 0)]
        return ", ".join(changed) or "none"

    @property
    def verification_status(self) -> str:
        """The verification's status, or "not verified (why)" (`unverified`)."""
        return self.verification.status if self.verification else f"not verified ({self.unverified})"

    def summary(self) -> str:
        gain = f" ({self.cost_before / self.cost_after:.2f}x)" if self.cost_after else ""
        check = self.verification.summary() if self.verification else self.verification_status
        return "\n".join([
            self.report.summary(),
            f"cost on {self.target} with {self.extractor}: {self.cost_before:.4g} -> {self.cost_after:.4g} "
            f"{self.unit}{gain}; extraction {self.extract_seconds:.3f} s{_gap_note(self.info)}",
            f"ops changed: {self.op_changes()}",
            *([f"e-graph grown most by: {_most_common(self.saturated.growth())}"]
              if self.saturated is not None and self.saturated.view.origins else []),
            *([f"tuning log: {self.coverage.summary()}"] if self.coverage is not None else []),
            check,
        ])

    def rules_of(self, node: ir.Expr) -> tuple[str, ...]:
        """The rule chain that made `node` of `mod` (empty for a node of the input)."""
        return self.provenance.get(node, ())

    def astext(self, show_provenance: bool = True) -> str:
        """The program's text; with `show_provenance`, each rule-made node names its rule chain."""
        return ir.astext(self.mod, provenance=self.provenance if show_provenance else None)

    def explain(self, limit: int = 20) -> str:
        """Per rule and fused op: how many nodes it put in the program, their cost before -> after (see
        `explain.Change`), and on strategies targets the implementation the cost model assumed and
        why; largest saving first. Then the rule chains behind the program's nodes (`provenance`)."""
        return "\n".join([format_changes(self.changes, self.unit, limit),
                          format_provenance(self.mod, self.provenance, limit)])


def _gap_note(info: Mapping[str, Any]) -> str:
    """"; gap 0.12% (Time limit reached)" for an extractor that reports an optimality gap, else ""."""
    if "gap" not in info:
        return ""
    gap = info["gap"]
    return f"; gap {gap:.2%} ({info.get('status', '-')})" if math.isfinite(gap) else f"; gap unknown ({info.get('status', '-')})"


def _most_common(counts: Counter[str], count: int = 3) -> str:
    return ", ".join(f"{name} ({n} e-nodes)" for name, n in counts.most_common(count))


def optimize(mod: IRModule, params: Mapping[str, Any] | None = None, *,
             target: "str | strategies.Target | CostModel | TargetSpec" = "cpu", rules: Any = None, limits: Limits = Limits(),
             extractor: str | Extractor = "greedy", scheduler: Scheduler | None = None,
             progress: Callable[[IterationRow], None] | None = None, verify: bool | int = True, log: Any = None,
             standard_onnx: bool = False) -> Optimized:
    """Saturate `mod` under `rules` within `limits`; lift the cheapest equivalent for `target` back to IR.

    `target` is a target name ("cpu", "cuda", "ort", or "ops" to count ops), a `strategies.Target`
    (for ort, the ONNX Runtime session its programs run in), any `CostModel`, or a `TargetSpec`
    already resolved; it is resolved once
    (`eqsat.target.resolve_target`), with `log`, a tuning log for a strategies target (e.g. ONNX
    Runtime's measurements for "ort", see `strategies.tune`), whose coverage of the result is
    `Optimized.coverage`. `rules` defaults to the target's (`eqsat.rules.library.default_rules`:
    `default`, plus the blocked-layout rules for ort unless `standard_onnx`: the program is for
    standard ONNX, written by `to_onnx(..., contrib=False)` and verified so).

    `params` are bound as constants while saturating (rules may read weights) and are parameters
    again in the result, with their values in `Optimized.params`. `verify` (default True:
    `DEFAULT_TRIALS` input sets, typical values, edge values, infinities and NaN; a positive int:
    that many) runs the result and the input on seeded random inputs where the target runs them
    (ONNX Runtime for "ort", else the CPU executor), comparing the outputs and the values at the
    boundaries of the rewritten regions element by element (see `eqsat.soundness.verify`). It
    raises `VerificationError`, naming the applied rules and the first unsound rule application
    (when `eqsat.bisect_unsound` finds it within `BISECT_SECONDS`), if they disagree, and also when
    the check is inconclusive or skipped: verification fails closed, and `verify=False` is the one
    way to take an unverified program.
    """
    trials = trials_of(verify)
    spec = resolve_target(target, log, standard_onnx=standard_onnx)
    sat = saturate_program(mod, params, rules=spec.rules if rules is None else rules, limits=limits,
                           scheduler=scheduler, progress=progress)
    out = extract_for(sat, spec, extractor, source=(mod, params), trials=trials, limits=limits)
    coverage = _coverage(spec.model, out) if getattr(spec.model, "logged", False) else None
    return Optimized(mod=out.mod, params=out.params, report=sat.report, cost_before=out.cost_before,
                     cost_after=out.cost_after, target=spec.name, extractor=str(getattr(extractor, "name", extractor)),
                     choice=out.choice, extract_seconds=out.seconds, info=dict(out.choice.info), unit=spec.unit,
                     op_counts_before=dict(sorted(op_counts(sat.input_module()[0]).items())),
                     op_counts_after=dict(sorted(op_counts(out.mod).items())), changes=out.changes,
                     verification=out.verification, coverage=coverage, provenance=out.provenance, saturated=sat,
                     spec=spec, built=out.built)


def verified(res: Optimized, verify: bool | int = True, limits: Limits = Limits()) -> Optimized:
    """`res` verified against its input (on `verify` input sets, as `optimize` takes it) where its
    target runs it, as `optimize` verifies: what `optimize(verify=False)` leaves for later, for a
    program that is verified only once it is chosen (`eqsat.onnx_io.faster_of`). Fails closed
    (`VerificationError`); `res` as it is when it was verified already or `verify` is False."""
    trials = trials_of(verify)
    if res.verification is not None or not trials:
        return res
    if res.saturated is None or res.spec is None:
        raise ValueError("verified() checks a result of optimize against its saturated input; this one has none")
    mod, params = res.saturated.input_module()
    return dataclasses.replace(res, verification=verify_extracted(mod, params, res.saturated, res, res.spec, trials,
                                                                  limits))


def verify_extracted(mod: IRModule, params: Mapping[str, Any] | None, sat: Saturated, out: "Extracted | Optimized",
                     spec: TargetSpec, trials: int, limits: Limits) -> Verification:
    """Verify `out` against the input `mod` where `spec`'s programs run (ONNX Runtime for ort, with
    contrib ops unless `standard_onnx`; else the CPU executor), its rewritten regions' values
    included; fails closed: raises `VerificationError` (with the first unsound rule application
    when `eqsat.bisect_unsound` finds it) unless verified."""
    try:
        given = sat.lowered.values if params else params  # the weights as bound: read-only, shared, not copied
        checked = check_program(mod, given, out.mod, out.params, trials, sat.report,
                                boundaries=rewritten_boundaries(sat, out), where=spec.runs_in, contrib=spec.contrib)
    except VerificationError as err:
        raise VerificationError(f"{err}. {_bisection(mod, params, sat.rules, limits, sat.report)}") from None
    if not checked.passed:
        raise VerificationError(f"the optimized program could not be verified, so it is not returned: "
                                f"{checked.summary()}. Pass verify=False (--no-verify) to take it unverified")
    return checked


def trials_of(verify: Any) -> int:
    """The input sets `optimize(verify=...)` asks for: True is `DEFAULT_TRIALS`, False none, an int that many."""
    if verify is True:
        return DEFAULT_TRIALS
    if verify is False:
        return 0
    if isinstance(verify, (int, np.integer)) and verify >= 1:
        return int(verify)
    raise ValueError(f"verify must be True, False or a positive number of input sets, not {verify!r} "
                     "(verify=False is the one way to skip verification)")


MAX_BOUNDARIES = 64
"""rewritten-region values `optimize` verifies besides the outputs, at most (the first by e-class)."""


def rewritten_boundaries(sat: Saturated, out: "Extracted | Optimized") -> Boundaries | None:
    """The values both the input and `out` compute for the same e-class where `out` computes it with
    a rule-made node: the boundaries of the rewritten regions, verified besides the outputs."""
    if not out.built:
        return None
    built_in = sat.input_nodes()
    roots = set(sat.view.roots)
    pairs = []
    for c in sorted(out.built):
        a, b = built_in.get(c), out.built[c]
        if c in roots or not isinstance(a, ir.Call) or not isinstance(b, ir.Expr) or isinstance(b, ir.Var):
            continue
        if not isinstance(sat.view.types.get(c), ir.TensorType):
            continue
        if sat.provenance.rule_made(out.choice.node_of[c]):
            pairs.append((a, b, c))
    pairs = pairs[:MAX_BOUNDARIES]

    def label(i: int) -> str:  # the rule chain is found again only for a value a report names
        _, b, c = pairs[i]
        op = getattr(getattr(b, "op", None), "name", type(b).__name__)
        return f"the value of e-class {c} ({op}, made by {' > '.join(sat.provenance.chain(out.choice.node_of[c]))})"
    return Boundaries(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), label)


def _bisection(mod: IRModule, params: Mapping[str, Any] | None, rules: Any, limits: Limits, report: Report) -> str:
    """The first unsound rule application, when a replay of the run finds it within `BISECT_SECONDS`."""
    replay = Limits(iterations=max(report.iterations, 1), nodes=limits.nodes, seconds=limits.seconds)
    return bisect_unsound(mod, params, rules=rules, limits=replay, seconds=BISECT_SECONDS).summary()


def _coverage(model: Any, out: Extracted) -> "Coverage":
    """The cost model's coverage of the extracted program, its parameters bound and constants folded."""
    return model.coverage(prepare_program(out.mod, out.params))

