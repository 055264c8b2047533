"""ONNX in, ONNX out: the one call for users whose models are ONNX files.

The `ort` target's program is ONNX Runtime's program: it is written with ONNX Runtime's contrib
ops and blocked-layout kernels unless the caller asks for standard ONNX only, in which case the
blocked-layout rules are left out, so no blocked layout is ever written as transposes. Before an
ort program is handed back it is timed against the input in the session it will run in
(`eqsat.speed`); when it is not faster, programs that leave out one family of its rewrites are
timed in turn while the verdict's time lasts (`eqsat.regions`). The first that is faster is then
verified where it runs and handed back, else the input; the report says which, with every program
tried. `optimize_to_onnx` is that pipeline, for the one call, the command line and the fleet.
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

import ir
from ir import IRModule
from strategies import Target

from .errors import SpeedCheckError, VerificationError, first_line
from .optimize import Optimized, optimize, trials_of, verified
from .regions import MAX_VARIANTS, Family, families, without
from .soundness.inputs import random_inputs, size_assignments, size_variables
from .speed import CONFIDENCE, VERDICT_SECONDS, InputSessions, SpeedCheck, SpeedVerdict, Tried
from .target import resolve_target

__all__ = ["optimize_onnx", "optimize_to_onnx", "OnnxResult", "exports_contrib", "to_onnx", "faster_of",
           "speed_feeds", "SPEED_SIZE"]

SPEED_SIZE = 16
"""the length of every symbolic dimension in the inputs the speed check times."""


def exports_contrib(target: str, standard_onnx: bool = False, onnx_contrib: bool = False) -> bool:
    """Whether a program extracted for `target` is written with ONNX Runtime's contrib ops: always
    for `ort` (its kernels) unless `standard_onnx`, and for other targets when `onnx_contrib`."""
    if standard_onnx and onnx_contrib:
        raise ValueError("standard_onnx and onnx_contrib contradict each other: give one of them")
    return onnx_contrib or (target == "ort" and not standard_onnx)


def to_onnx(res: Optimized, standard_onnx: bool = False, onnx_contrib: bool = False,
            external: dict[str, np.ndarray] | None = None) -> Any:
    """`res`'s program as an `onnx.ModelProto`, written for its target (see `exports_contrib`); with
    `external`, its weights held in memory, for an ONNX Runtime session (`ir.frontend.to_onnx`)."""
    return ir.frontend.to_onnx(res.mod, res.params, contrib=exports_contrib(res.target, standard_onnx, onnx_contrib),
                               check=external is None, external=external)


@dataclass(frozen=True)
class OnnxResult:
    """An optimize result and the ONNX model written for it (`optimize_to_onnx`)."""

    optimized: Optimized
    """ours: verified, or, where the speed check ran, verified once it was timed faster (its
    `unverified` says why not)."""
    written: Any
    """what to write: ours, ours without some op families (an `onnx.ModelProto`), or the input as it
    was given (a ModelProto, or a file's bytes), as `verdict` says."""
    verdict: SpeedVerdict | None = None
    """the speed check's, where it ran."""

    @property
    def model(self) -> Any:
        """What is written, as an `onnx.ModelProto`."""
        if isinstance(self.written, bytes):
            import onnx
            return onnx.load_from_string(self.written)
        return self.written

    def serialized(self) -> bytes:
        """What is written, as bytes: a file the input was kept from byte for byte."""
        return self.written if isinstance(self.written, bytes) else self.written.SerializeToString()

    @property
    def kept(self) -> Optimized | None:
        """The program written: ours, or ours without some families; None when it is the input."""
        if self.verdict is None:
            return self.optimized
        return self.verdict.result

    def verdict_summary(self) -> str:
        """The speed check's verdict, and the verification of ours without some families when it kept
        that ("" where no speed check ran)."""
        if self.verdict is None:
            return ""
        kept = self.kept
        variant = kept is not None and kept is not self.optimized and kept.verification is not None
        return "\n".join([self.verdict.summary(), *([f"{self.verdict.kept}: {kept.verification.summary()}"]
                                                      if variant else [])])

    def summary(self) -> str:
        """Ours (`Optimized.summary`), then the speed check's verdict (`verdict_summary`)."""
        return "\n".join(filter(None, [self.optimized.summary(), self.verdict_summary()]))


def optimize_to_onnx(mod: IRModule, params: Mapping[str, Any] | None, original: Any = None, *,
                     target: Any = "ort", standard_onnx: bool = False, onnx_contrib: bool = False,
                     speed: bool = True, verify: bool | int = True, log: Any = None, **options: Any) -> OnnxResult:
    """`eqsat.optimize`, then the ONNX model to write: the one pipeline of `optimize_onnx`, `eqsat
    optimize ... OUT.onnx` and the fleet's batches.

    For a target that runs in ONNX Runtime, with `speed`, ours is timed against `original` (an
    `onnx.ModelProto`, a path to one, or None: the input program written as ONNX) before it is
    verified, and verified only when it is kept (`faster_of`: a program that is not kept needs no
    verification, and a large one's verification takes seconds); the input's sessions are made
    while saturation runs. Otherwise `optimize` verifies ours as `verify` says. The other `options`
    are `optimize`'s.
    """
    spec = resolve_target(target, log, standard_onnx=standard_onnx)
    if not (speed and spec.runs_in == "ort"):
        res = optimize(mod, params, target=spec, verify=verify, **options)
        return OnnxResult(res, to_onnx(res, standard_onnx, onnx_contrib))
    if original is None:
        original = ir.frontend.to_onnx(mod, params)
    feeds = speed_feeds(mod, params)  # the program is read here, not beside saturation
    with ThreadPoolExecutor(1) as pool:  # ONNX Runtime makes and warms sessions without holding the GIL
        pending = pool.submit(_input_sessions, original, feeds, spec.target or Target("ort"))
        res = optimize(mod, params, target=spec, verify=False, **options)
        original, sessions = pending.result()
    written, verdict = faster_of(res, original, verify, sessions)
    if verdict.kept == "ours":
        res = verdict.result
    elif trials_of(verify):
        res = dataclasses.replace(res, unverified=NOT_TIMED_FASTER)
    return OnnxResult(res, written, verdict)


def _input_sessions(original: Any, feeds: list[dict[str, np.ndarray]], session: Target) -> tuple[Any, InputSessions]:
    """The input model (`original`, a path read as the file's bytes) and its `InputSessions` on `feeds`,
    in the session `session` names (`strategies.Target`'s `optimizer` and `threads`)."""
    if isinstance(original, (str, os.PathLike)):
        original = Path(original).read_bytes()
    return original, InputSessions(original, feeds, optimizer=session.optimizer, threads=session.threads)


def speed_feeds(mod: IRModule, params: Mapping[str, Any] | None) -> list[dict[str, np.ndarray]]:
    """The input sets the speed check draws for `mod` (symbolic sizes `SPEED_SIZE`, then one at a time
    twice that, as verification draws them); it times on the first the input model runs on."""
    skip = list(params or {})
    return [random_inputs(mod, skip=skip, size=SPEED_SIZE, named=named)
            for named in size_assignments(size_variables(mod, skip), SPEED_SIZE)]


NOT_TIMED_FASTER = "it was not timed faster than the input, and a program is verified once it is"
"""why ours is not verified when the speed check did not keep it."""


def faster_of(res: Optimized, original: Any, verify: bool | int = True,
              sessions: InputSessions | None = None) -> tuple[Any, SpeedVerdict]:
    """The faster of ours (`res`) and `original` (an ONNX model or its bytes) in ONNX Runtime (see
    `eqsat.speed`), as the ONNX model to write, with the verdict. When ours is not faster, programs
    without one of `res`'s op families are timed in turn (`eqsat.regions`: largest estimated saving
    first, at most `MAX_VARIANTS`, while the verdict's time lasts), and the first that is faster is
    kept; else `original`.

    A program is verified (`eqsat.optimize.verified`, on as many input sets as `res` was, or as
    `verify` says when it was not: a slower program costs no verification) once it is timed faster,
    and kept only then: ours raises `VerificationError`, as `optimize` would; a variant that fails is
    noted and passed over. The verdict's `result` is the kept program (verified), None for the input.
    Programs are timed with their weights held in memory (no copy into a model and out again) and
    the kept one is written whole, checked by `onnx.checker`. All are timed against `sessions`
    (default: made here, on `speed_feeds` of `res`'s input program, in the session its target names)."""
    if sessions is None:
        mod, params = res.saturated.input_module() if res.saturated is not None else (res.mod, res.params)
        target = res.spec.target if res.spec is not None and res.spec.target is not None else Target("ort")
        sessions = _input_sessions(original, speed_feeds(mod, params), target)[1]
    variants = families(res)[:MAX_VARIANTS] if res.saturated is not None else []
    standard_onnx = res.spec is not None and res.spec.standard_onnx
    verify = res.verification.trials if res.verification is not None else verify

    def timed(program: Optimized) -> SpeedCheck:  # each program may be kept: CONFIDENCE holds over all of them
        weights: dict[str, np.ndarray] = {}
        model = to_onnx(program, standard_onnx, external=weights)
        return sessions.check(model, external=weights, confidence=1 - (1 - CONFIDENCE) / (1 + len(variants)))

    try:
        check = timed(res)
    except ir.IRError:
        raise
    except Exception as err:  # noqa: BLE001 - a program that does not run fails verification, which says why
        verified(res, verify)
        raise SpeedCheckError(f"the speed check cannot time ours: {type(err).__name__}: {first_line(err)}") from None
    tried = [Tried(check=check)]
    if check.kept == "ours":
        ours = verified(res, verify)
        return to_onnx(ours, standard_onnx), SpeedVerdict(tuple(tried), ours)
    seen = [res.mod]
    for family in variants:
        trial, kept = _tried(res, family, seen, sessions, timed, verify)
        tried.append(trial)
        if kept is not None:
            return to_onnx(kept, standard_onnx), SpeedVerdict(tuple(tried), kept)
    return original, SpeedVerdict(tuple(tried))


def _tried(res: Optimized, family: Family, seen: list[ir.IRModule], sessions: InputSessions,
           timed: Callable[[Optimized], SpeedCheck], verify: bool | int) -> tuple[Tried, Optimized | None]:
    """`res` without `family` (`eqsat.regions.without`) timed against `sessions`, unless their time is
    spent (`InputSessions.affords_another`) or it is the input, a program in `seen` (to which it is
    added) or one that does not run; with the program verified (as `verify` says) when it is
    faster (a failure is noted, and keeps it from being kept)."""
    def tried(check: SpeedCheck | None = None, note: str = "") -> Tried:
        return Tried((family.name,), family.ops, check, note)
    if not sessions.affords_another():
        return tried(note=f"the {VERDICT_SECONDS:g} CPU seconds of timing one verdict may take are spent"), None
    variant = without(res, family)
    if variant.info.get("kept_input"):
        return tried(note="the input program"), None
    if any(ir.structural_equal(variant.mod, m) for m in seen):
        return tried(note="the same program as one tried before"), None
    seen.append(variant.mod)
    try:
        check = timed(variant)
    except Exception as err:  # noqa: BLE001 - an unverified program that cannot be written or run is not kept
        return tried(note=f"it does not run in ONNX Runtime ({type(err).__name__}: {first_line(err)})"), None
    if check.kept != "ours":
        return tried(check), None
    try:
        return tried(check), verified(variant, verify)
    except VerificationError as err:
        return tried(check, f"not verified: {err}"), None


def optimize_onnx(model: Any, *, target: "str | Target" = "ort", standard_onnx: bool = False, speed: bool = True,
                  **options: Any) -> Any:
    """Optimize an ONNX model (an `onnx.ModelProto` or a path) and return the optimized `onnx.ModelProto`.

    `target` defaults to ONNX Runtime ("ort"), whose kernels the result uses unless `standard_onnx`;
    `strategies.Target("ort", optimizer=..., threads=...)` names the session the model will run in.
    The other `options` are `eqsat.optimize`'s (`limits`, `extractor`, `verify`, `log`, ...). The
    result is verified where it will run before it is returned (see `eqsat.optimize`); for ort,
    with `speed`, it is also timed against the input in that session, and when it is not faster, the
    first faster program without one of its op families comes back, else the input model itself
    (`optimize_to_onnx`).
    """
    source = os.fspath(model) if isinstance(model, (str, os.PathLike)) else model
    mod, params = ir.frontend.from_onnx(source)
    return optimize_to_onnx(mod, params, source, target=target, standard_onnx=standard_onnx, speed=speed,
                            **options).model
