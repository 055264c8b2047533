"""`check_rule`: a rule's numerical soundness test, on typical and edge values.

The example program is saturated with the rule alone. Then every e-node of every reachable
e-class is forced into an extracted program once, and each such program is run against the
example on several input sets with the reference interpreter. An exact rule (the default) must
give the same bits wherever the example gives them: signed zeros, infinities and NaN included,
on inputs that hold +-0, denormals, the largest and smallest magnitudes, and integers over their
whole range (so wrap-around on overflow is checked). A rule declared `exact=False` (it
reassociates or refolds float arithmetic) must agree within a tolerance relative to each
output, on inputs without the extreme magnitudes where reassociation may overflow differently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

import ir
from ir import Expr, IRModule
from ir.dtype_info import is_float, numpy_dtype
from ir.expr import Call, Constant, Function, Var
from ir.types import TensorType
from ir.visitor import rebuild
import strategies
from strategies.values import scatter_specials, special_values

from ..egraph.lower import lift, lower
from ..errors import ExtractionError, RuleError
from ..extract import GreedyDagExtractor, OpCount, node_costs
from ..limits import Limits
from ..rules.rule import Rule, RuleSet, ruleset
from ..runner import saturate
from .verify import flat_outputs

__all__ = ["RuleCheck", "check_rule", "edge_inputs", "in_dtype", "output_difference"]

_RTOL = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 1e-4, "float64": 1e-9}


@dataclass(frozen=True)
class RuleCheck:
    """What `check_rule` did: how often the rule fired and how many distinct programs were run."""

    rule: str
    applied: int
    programs: int
    input_sets: int


def edge_inputs(mod: IRModule, extreme: bool, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Input sets for `mod`: typical values, then every edge value of each input's dtype spread
    over its elements (float16, bfloat16, float32, float64, signed and unsigned integers, bool).
    `extreme` (the check of an exact rule) adds the largest finite magnitudes and the subnormals:
    a rule that only changes rounding also changes where an intermediate overflows or underflows to
    zero (`inf * (1e-45 * 0.25)` is NaN, `(inf * 1e-45) * 0.25` is inf)."""
    rng = np.random.default_rng(seed)
    sets: list[dict[str, np.ndarray]] = [{}, {}, {}]
    for p in mod["main"].params:
        ty = p.checked_type
        shape, dtype = ty.concrete_shape, numpy_dtype(ty.dtype)
        if dtype.kind == "b":
            values = [rng.random(shape) < 0.5 for _ in sets]
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            values = [rng.integers(-5 if info.min else 0, 6, shape).astype(dtype),
                      rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True),
                      scatter_specials(rng, np.empty(shape, dtype), special_values(ty.dtype), 1.0)]
        else:
            normal = (rng.standard_normal(shape) * 2).astype(dtype)
            scale = 1e3 if extreme else 1e-3
            values = [normal, (normal.astype(np.float64) * scale).astype(dtype),
                      scatter_specials(rng, np.empty(shape, dtype), special_values(ty.dtype, extreme), 1.0)]
        for inputs, v in zip(sets, values):
            inputs[p.name_hint] = v
    return sets


def in_dtype(expr: Expr, dtype: str) -> Expr:
    """`expr` with every float variable and constant retyped to `dtype` (constants converted, so a
    float32 example becomes its float16, bfloat16, float64, int64 or uint8 twin)."""
    numpy_dtype(dtype)  # registers bfloat16 with numpy before a var names it

    def retype(old: Expr, new: Expr) -> Expr | None:
        if isinstance(new, Var) and isinstance(new.type_annotation, TensorType) and is_float(new.type_annotation.dtype):
            return ir.relay.var(new.name_hint, shape=new.type_annotation.shape, dtype=dtype)
        if isinstance(new, Constant) and is_float(np.asarray(new.data).dtype.name):
            with np.errstate(all="ignore"):
                return Constant(np.asarray(new.data).astype(numpy_dtype(dtype)))
        return None
    return rebuild(expr, retype)


def intermediate_scale(mod: IRModule, inputs: dict[str, np.ndarray]) -> float:
    """The largest finite magnitude of any value `mod` computes on `inputs` (the operands a
    reassociation may round against)."""
    main = mod["main"]
    calls = [n for n in ir.post_order(main.body) if isinstance(n, Call)]
    if not calls:
        return 0.0
    probe = IRModule.from_expr(Function(main.params, ir.relay.Tuple(calls)))
    with np.errstate(all="ignore"):
        values = flat_outputs(strategies.evaluate(probe, inputs))
    return max((float(np.abs(v[np.isfinite(v)]).max(initial=0.0)) for v in (a.astype(np.float64) for a in values)
                if is_float(str(v.dtype)) or v.dtype.kind == "f"), default=0.0)


def check_rule(rule: Rule | RuleSet, example: Expr | Callable[[], Expr], *, exact: bool | None = None,
               limits: Limits = Limits(iterations=2, seconds=30), dtype: str | None = None,
               relative_to: str = "output") -> RuleCheck:
    """Saturate `example` with `rule` alone (or a whole rule set) and check every program in its
    e-graph against it; with `dtype`, the example's float values are that dtype (`in_dtype`).
    An inexact check's tolerance is relative to each output's largest value, or with
    `relative_to="intermediates"` to the largest value the example computes anywhere (random
    programs with extreme constants: rounding is relative to the operands a reassociation adds).

    Raises `RuleError` when nothing fires on the example, and `AssertionError` naming the rule,
    the program and the input set where a program computes something else. `exact` defaults to
    the rules' own `exact` declarations (exact only if every rule is).
    """
    expr = example() if callable(example) else example
    expr = in_dtype(expr, dtype) if dtype is not None else expr
    mod = IRModule.from_expr(expr)
    ir.infer_type(mod)
    rules = rule if isinstance(rule, RuleSet) else ruleset(rule.name, [rule])
    exact = all(getattr(r, "exact", True) for r in rules) if exact is None else exact
    low = lower(mod)
    report = saturate(low.egraph, rules, limits)
    applied = sum(report.applied_per_rule.values())
    if not applied:
        raise RuleError(f"{rule.name} does not fire on its example:\n{ir.astext(mod)}")
    input_sets = edge_inputs(mod, extreme=exact)
    try:
        with np.errstate(all="ignore"):
            wants = [flat_outputs(strategies.evaluate(mod, inputs)) for inputs in input_sets]
        scales = [intermediate_scale(mod, inputs) if relative_to == "intermediates" else 0.0 for inputs in input_sets]
    except (TypeError, ValueError, NotImplementedError) as err:  # e.g. no bfloat16 einsum in numpy
        raise RuleError(f"the reference kernels cannot run the example of {rule.name}: {err}") from None
    programs = {ir.astext(mod)}
    for program in _every_alternative(low):
        text = ir.astext(program)
        if text in programs:
            continue
        programs.add(text)
        for k, (inputs, want, scale) in enumerate(zip(input_sets, wants, scales)):
            try:
                with np.errstate(all="ignore"):
                    got = flat_outputs(strategies.evaluate(program, inputs))
            except (TypeError, ValueError, NotImplementedError) as err:
                raise AssertionError(f"rule {rule.name} makes a program the reference kernels cannot run "
                                     f"(the original runs): {err}\n{text}") from None
            for w, g in zip(want, got):
                problem = output_difference(w, g, exact, scale)
                if problem:
                    raise AssertionError(f"rule {rule.name} is unsound on input set {k}: {problem}\n"
                                         f"inputs: {inputs}\noriginal:\n{ir.astext(mod)}\nrewritten:\n{text}")
    return RuleCheck(rule.name, applied, len(programs), len(input_sets))


def _every_alternative(low) -> list[IRModule]:
    """One extracted program per e-node of every reachable class, that node forced in."""
    view = low.view()
    base = node_costs(view, OpCount())
    out = []
    for forced in (n for c in view.reachable() for n in view.classes[c]):
        costs = list(base)
        for other in view.classes[view.nodes[forced].eclass]:
            if other != forced:
                costs[other] = math.inf
        try:
            choice = GreedyDagExtractor().extract(view, view.roots, costs)
        except ExtractionError:  # the forced node is only reachable through a cycle
            continue
        choice.check(view)
        out.append(ir.infer_type(lift(low, view, choice.node_of)))
    return out


def output_difference(want: np.ndarray, got: np.ndarray, exact: bool, scale: float = 0.0) -> str:
    """'' when `got` is an acceptable result for `want`, else what differs (bfloat16 compared as
    float64, which holds it exactly). An inexact result may differ by the dtype's relative
    tolerance of `want`'s largest magnitude, or of `scale` when that is larger."""
    if want.shape != got.shape or want.dtype != got.dtype:
        return f"{got.dtype}{got.shape} where the original gives {want.dtype}{want.shape}"
    if not is_float(want.dtype.name):
        return "" if np.array_equal(want, got) else f"integers differ at {np.argwhere(want != got)[:3].tolist()}"
    dtype = str(want.dtype)
    want, got = want.astype(np.float64), got.astype(np.float64)
    same_nan = np.isnan(want) == np.isnan(got)
    if exact:
        same = same_nan & (np.isnan(want) | ((want == got) & (np.signbit(want) == np.signbit(got))))
        if not same.all():
            at = np.argwhere(~same)[0]
            return f"bits differ at {at.tolist()}: {want[tuple(at)]!r} became {got[tuple(at)]!r}"
        return ""
    finite = np.isfinite(want)
    if not (same_nan.all() and np.array_equal(want[~finite & ~np.isnan(want)], got[~finite & ~np.isnan(want)])
            and np.isfinite(got[finite]).all()):
        return "NaN or infinity in different places"
    scale = max(float(np.abs(want[finite]).max(initial=0.0)), scale)
    diff = float(np.abs(want[finite] - got[finite]).max(initial=0.0))
    tolerance = _RTOL.get(dtype, 1e-4) * scale + 1e-6
    return "" if diff <= tolerance else f"max |diff| {diff:.3g} > {tolerance:.3g} (max |output| {scale:.3g})"
