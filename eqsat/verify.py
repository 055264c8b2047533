"""Checking an optimized program against the original on random inputs (the correctness contract).

Both programs run on the same seeded random inputs with the CPU executor (`strategies.build`),
or with the reference interpreter (`strategies.evaluate`) when the CPU target lacks a kernel for
some op. Each output must agree within `atol + rtol * max |reference output|`: a tolerance that
scales with the output's magnitude, since rewrites such as folding a batch norm into a
convolution's weights change float rounding in proportion to the values involved. NaNs and
infinities must appear in the same places.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

import ir
from ir import IRModule
from ir.types import TensorType

from .errors import VerificationError
from .report import Report

__all__ = ["Verification", "verify", "random_inputs", "RTOL", "ATOL"]

RTOL = {"float16": 1e-2, "float32": 1e-3, "float64": 1e-6}
"""relative tolerance per output dtype, against the largest reference output (integers: exact)."""
ATOL = 1e-5
"""absolute tolerance added for float outputs."""
SYMBOLIC_DIM = 4
"""the size a symbolic input dimension gets when random inputs are made."""


@dataclass(frozen=True)
class Verification:
    """The outcome of `verify`: how many random input sets, the largest difference and its bound."""

    trials: int
    max_abs_diff: float
    """largest |optimized - original| over every output element and trial."""
    tolerance: float
    """the bound that difference had to stay within."""
    max_abs_output: float
    """largest |original output| of that output, which its tolerance scales with."""
    runner: str
    """"cpu executor" or "reference interpreter"."""
    seconds: float

    def summary(self) -> str:
        sets = "set" if self.trials == 1 else "sets"
        return (f"verified on {self.trials} random input {sets} ({self.runner}): max |diff| "
                f"{self.max_abs_diff:.3g} within tolerance {self.tolerance:.3g} (max |output| "
                f"{self.max_abs_output:.3g}), {self.seconds:.2f} s")


def random_inputs(mod: IRModule, skip: Sequence[str] = (), seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random values for `main`'s parameters not in `skip`: floats standard normal, integers
    in [0, 10), booleans fair coins; symbolic dimensions take `SYMBOLIC_DIM`."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for p in mod["main"].params:
        if p.name_hint in skip:
            continue
        ty = p.checked_type if p.type_inferred else p.type_annotation
        if not isinstance(ty, TensorType):
            raise VerificationError(f"cannot make a random value for input {p.name_hint!r} of type {ty}")
        shape = tuple(d if isinstance(d, int) else SYMBOLIC_DIM for d in ty.shape)
        if ty.dtype == "bool":
            out[p.name_hint] = rng.random(shape) < 0.5
        elif ty.dtype.startswith(("int", "uint")):
            out[p.name_hint] = rng.integers(0, 10, shape).astype(ty.dtype)
        else:
            out[p.name_hint] = rng.standard_normal(shape).astype(ty.dtype)
    return out


def _runner(mod: IRModule, params: Mapping[str, Any]):
    """A function of the inputs computing `mod`'s outputs as a flat list, and its name."""
    import strategies
    try:
        exe = strategies.build(mod, "cpu", params)
    except strategies.NoImplementationError:
        return (lambda inputs: _flat(strategies.evaluate(mod, inputs, params))), "reference interpreter"
    return (lambda inputs: _flat(exe.run(inputs))), "cpu executor"


def _flat(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _flat(v)]
    return [np.asarray(value)]


def _compare(want: np.ndarray, got: np.ndarray) -> tuple[float, float, float, bool]:
    """(max |diff| over finite elements, tolerance, max |want|, agrees)."""
    if want.shape != got.shape:
        return float("inf"), 0.0, 0.0, False
    a, b = want.astype(np.float64), got.astype(np.float64)
    finite = np.isfinite(a)
    if not np.array_equal(finite, np.isfinite(b)) or not np.array_equal(a[~finite], b[~finite], equal_nan=True):
        return float("inf"), 0.0, 0.0, False
    scale = float(np.abs(a[finite]).max()) if finite.any() else 0.0
    diff = float(np.abs(a[finite] - b[finite]).max()) if finite.any() else 0.0
    rtol = RTOL.get(str(want.dtype))
    tolerance = 0.0 if rtol is None else ATOL + rtol * scale
    return diff, tolerance, scale, diff <= tolerance


def verify(original: IRModule, params: Mapping[str, Any] | None, optimized: IRModule,
           optimized_params: Mapping[str, Any] | None, trials: int, report: Report | None = None) -> Verification:
    """Run both programs on `trials` seeded random input sets and compare every output.

    Raises `VerificationError` naming the rules that were applied (from `report`), the output and
    the largest difference when the programs disagree.
    """
    start = time.perf_counter()
    params, optimized_params = dict(params or {}), dict(optimized_params or {})
    original = original if isinstance(original, IRModule) else IRModule.from_expr(original)
    ir.infer_type(original)
    run_original, runner = _runner(original, params)
    run_optimized, runner_optimized = _runner(optimized, optimized_params)
    worst = (0.0, 0.0, 0.0)
    for seed in range(trials):
        inputs = random_inputs(original, skip=list(params), seed=seed)
        with np.errstate(all="ignore"):  # random inputs may leave an op's domain: NaNs are compared, not errors
            wants, gots = run_original(inputs), run_optimized(inputs)
        if len(wants) != len(gots):
            _fail(report, f"the optimized program has {len(gots)} outputs, the original {len(wants)}")
        for k, (want, got) in enumerate(zip(wants, gots)):
            diff, tolerance, scale, agrees = _compare(want, got)
            if not agrees:
                _fail(report, f"output {k} (shape {want.shape}, {want.dtype}) differs on random input set {seed}: "
                              f"max |diff| {diff:.3g} > tolerance {tolerance:.3g} (max |output| {scale:.3g}; "
                              f"optimized shape {got.shape})")
            worst = max(worst, (diff, tolerance, scale))
    kind = runner if runner == runner_optimized else f"{runner} / {runner_optimized}"
    return Verification(trials, worst[0], worst[1], worst[2], kind, time.perf_counter() - start)


def _fail(report: Report | None, what: str) -> None:
    fired = ", ".join(f"{rule} x{n}" for rule, n in (report.applied_per_rule if report else {}).items())
    raise VerificationError(f"the optimized program does not compute what the original computes: {what}. "
                            f"Rules applied: {fired or 'none'}")
