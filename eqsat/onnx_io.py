"""ONNX in, ONNX out: the one call for users whose models are ONNX files.

The `ort` target's program is ONNX Runtime's program: it is written with ONNX Runtime's contrib
ops and blocked-layout kernels unless the caller asks for standard ONNX only, in which case the
blocked-layout rules are left out, so no blocked layout is ever written as transposes. Before an
ort program is handed back it is timed against the input in the session it will run in
(`eqsat.speed`); when it is not faster, programs that leave out one family of its rewrites are
timed in turn while the verdict's time lasts (`eqsat.regions`), and the first that is faster and
then verified is handed back, else the input; the report says which, with every program tried.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import ir
from strategies import Target

from .errors import VerificationError, first_line
from .optimize import Optimized, optimize
from .regions import MAX_VARIANTS, Family, families, without
from .soundness.inputs import random_inputs, size_assignments, size_variables
from .speed import CONFIDENCE, VERDICT_SECONDS, InputSessions, SpeedCheck, SpeedVerdict, Tried

__all__ = ["optimize_onnx", "exports_contrib", "to_onnx", "faster_of", "SPEED_SIZE"]

SPEED_SIZE = 16
"""the length of every symbolic dimension in the inputs the speed check times."""


def exports_contrib(target: str, standard_onnx: bool = False, onnx_contrib: bool = False) -> bool:
    """Whether a program extracted for `target` is written with ONNX Runtime's contrib ops: always
    for `ort` (its kernels) unless `standard_onnx`, and for other targets when `onnx_contrib`."""
    if standard_onnx and onnx_contrib:
        raise ValueError("standard_onnx and onnx_contrib contradict each other: give one of them")
    return onnx_contrib or (target == "ort" and not standard_onnx)


def to_onnx(res: Optimized, standard_onnx: bool = False, onnx_contrib: bool = False) -> Any:
    """`res`'s program as an `onnx.ModelProto`, written for its target (see `exports_contrib`)."""
    return ir.frontend.to_onnx(res.mod, res.params, contrib=exports_contrib(res.target, standard_onnx, onnx_contrib))


def faster_of(res: Optimized, original: Any, ours: Any) -> tuple[Any, SpeedVerdict]:
    """`ours` when it runs faster than `original` in ONNX Runtime (see `eqsat.speed`); else the first
    program without one of `res`'s op families that does and is verified as `res` was (`eqsat.regions`:
    largest estimated saving first, at most `MAX_VARIANTS`; each is verified once it is timed faster,
    so a slower one costs no verification); else `original`; with the verdict.
    All run in the session `res`'s target names (`strategies.Target`'s `optimizer` and `threads`),
    on inputs drawn for `res`'s input program (symbolic sizes `SPEED_SIZE`, then one at a time twice
    that, as verification draws them, until the input model runs)."""
    mod, params = res.saturated.input_module() if res.saturated is not None else (res.mod, res.params)
    feeds = [random_inputs(mod, skip=list(params), size=SPEED_SIZE, named=named)
             for named in size_assignments(size_variables(mod, list(params)), SPEED_SIZE)]
    session = res.spec.target if res.spec is not None and res.spec.target is not None else Target("ort")
    variants = families(res)[:MAX_VARIANTS] if res.saturated is not None else []
    sessions = InputSessions(original, feeds, optimizer=session.optimizer, threads=session.threads)

    def timed(model: Any) -> SpeedCheck:  # each program may be kept: CONFIDENCE holds over all of them
        return sessions.check(model, confidence=1 - (1 - CONFIDENCE) / (1 + len(variants)))

    check = timed(ours)
    tried = [Tried(check=check)]
    if check.kept == "ours":
        return ours, SpeedVerdict(tuple(tried))
    seen = [res.mod]
    for family in variants:
        trial, kept = _tried(res, family, seen, sessions, timed)
        tried.append(trial)
        if kept is not None:
            model, verified = kept
            return model, SpeedVerdict(tuple(tried), verified)
    return original, SpeedVerdict(tuple(tried))


def _tried(res: Optimized, family: Family, seen: list[ir.IRModule], sessions: InputSessions,
           timed: Callable[[Any], SpeedCheck]) -> tuple[Tried, tuple[Any, Optimized] | None]:
    """`res` without `family` (`eqsat.regions.without`, not verified yet) timed against `sessions`,
    unless their time is spent (`InputSessions.affords_another`) or it is the input, a program in
    `seen` (to which it is added) or one that does not run; with its ONNX model when it
    is faster and then verified as `res` was, and that verified result (a failure is noted, and keeps
    it from being kept)."""
    def tried(check: SpeedCheck | None = None, note: str = "") -> Tried:
        return Tried((family.name,), family.ops, check, note)
    if not sessions.affords_another():
        return tried(note=f"the {VERDICT_SECONDS:g} CPU seconds of timing one verdict may take are spent"), None
    variant = without(res, family, verify=False)
    if variant.info.get("kept_input"):
        return tried(note="the input program"), None
    if any(ir.structural_equal(variant.mod, m) for m in seen):
        return tried(note="the same program as one tried before"), None
    seen.append(variant.mod)
    try:
        model = to_onnx(variant, res.spec.standard_onnx)
        check = timed(model)
    except Exception as err:  # noqa: BLE001 - an unverified program that cannot be written or run is not kept
        return tried(note=f"it does not run in ONNX Runtime ({type(err).__name__}: {first_line(err)})"), None
    if check.kept != "ours":
        return tried(check), None
    try:
        verified = without(res, family)  # extracting again gives the same program, now verified
    except VerificationError as err:
        return tried(check, f"not verified: {err}"), None
    if not ir.structural_equal(verified.mod, variant.mod):
        return tried(check, "not verified: extracted again, it differs"), None
    return tried(check), (model, verified)


def optimize_onnx(model: Any, *, target: "str | Target" = "ort", standard_onnx: bool = False, speed: bool = True,
                  **options: Any) -> Any:
    """Optimize an ONNX model (an `onnx.ModelProto` or a path) and return the optimized `onnx.ModelProto`.

    `target` defaults to ONNX Runtime ("ort"), whose kernels the result uses unless `standard_onnx`;
    `strategies.Target("ort", optimizer=..., threads=...)` names the session the model will run in.
    The other `options` are `eqsat.optimize`'s (`limits`, `extractor`, `verify`, `log`, ...). The
    result is verified where it will run before it is returned (see `eqsat.optimize`); for ort,
    with `speed`, it is also timed against the input in that session, and when it is not faster, the
    first faster program without one of its op families comes back, else the input model itself
    (`faster_of`).
    """
    import onnx
    source = os.fspath(model) if isinstance(model, (str, os.PathLike)) else model
    mod, params = ir.frontend.from_onnx(source)
    res = optimize(mod, params, target=target, standard_onnx=standard_onnx, **options)
    ours = to_onnx(res, standard_onnx)
    if not (speed and res.spec.runs_in == "ort"):
        return ours
    original = onnx.load(source) if isinstance(source, str) else source
    return faster_of(res, original, ours)[0]
