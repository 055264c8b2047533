"""Checking an optimized program against the original on random inputs (the correctness contract).

Both programs run on the same seeded inputs with the CPU executor (`strategies.build`); a call the
CPU target has no kernel for (a fused form only another target runs) runs its op's reference kernel.
Input set `k` is of kind `INPUT_KINDS[k % len(INPUT_KINDS)]`, so a check that runs several sets
sees more than typical values:

| kind       | floats                                                     | integers            |
|------------|------------------------------------------------------------|---------------------|
| `normal`   | standard normal                                            | [0, 10)             |
| `edge`     | normal, with +-0, denormals and +-1 in a quarter of places | the dtype's range   |
| `nonfinite`| normal, with +-inf and NaN in a few places                 | the dtype's range   |
| `small`    | normal x 1e-3                                              | [-3, 3]             |
| `large`    | normal x 1e3                                               | the dtype's range   |

An input set on which the *original* program fails (an integer input used as an index, say) is
left out and said so. Each float output must agree within `RTOL[dtype] * max |original output|`
(plus a few of the dtype's smallest normal numbers): a tolerance relative to that output's own
magnitude, so a program whose outputs are 1e-9 is checked at 1e-12, not waved through by an
absolute floor. NaN and infinity positions (and the infinities' signs) must be the same; integer
and bool outputs must be equal. When an output differs but is itself at the level of rounding
noise of the values that produced it (an exact cancellation), the check cannot tell right from
wrong: it is reported as `inconclusive`, never as passed. A program whose tensors would not fit
in `MEMORY_CAP` bytes is not run at all (`skipped`, with the size).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

import ir
from ir import IRModule
from ir.types import TensorType, dim_value
from ir.visitor import post_order

from ..errors import VerificationError
from ..report import Report

__all__ = ["Verification", "verify", "random_inputs", "scatter_specials", "flat_outputs", "INPUT_KINDS", "RTOL",
           "MEMORY_CAP"]

INPUT_KINDS = ("normal", "edge", "nonfinite", "small", "large")
RTOL = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-3, "float64": 1e-6}
"""relative tolerance per output dtype, against the largest reference output (integers: exact)."""
NOISE_ULPS = 64
"""an output below this many ulps of its inputs' magnitude is rounding noise: too small to check."""
SYMBOLIC_DIM = 4
"""the size a symbolic input dimension gets when random inputs are made."""
MEMORY_CAP = 2 << 30
"""bytes the tensors of one program may take (inputs and every intermediate) for it to be run."""


@dataclass(frozen=True)
class Verification:
    """The outcome of `verify`: the input sets run, the largest difference and its bound, a status."""

    trials: int
    """input sets both programs ran on (sets the original cannot run on are not counted)."""
    max_abs_diff: float
    """largest |optimized - original| over every finite output element and input set."""
    tolerance: float
    """the bound that difference had to stay within."""
    max_abs_output: float
    """largest |original output| of that output, which its tolerance scales with."""
    runner: str
    """"cpu executor", naming the ops that ran their reference kernels, e.g. "cpu executor (reference
    kernels for nn.feed_forward)"."""
    seconds: float
    status: str = "passed"
    """"passed"; "inconclusive" (some output could not be told apart from noise); "skipped"."""
    kinds: tuple[str, ...] = ()
    """the kind of each input set that ran."""
    notes: tuple[str, ...] = ()
    """why a check was inconclusive or skipped, and input sets left out."""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def summary(self) -> str:
        if self.status == "skipped":
            return f"not verified: {'; '.join(self.notes)}"
        sets = "set" if self.trials == 1 else "sets"
        kinds = f" ({', '.join(self.kinds)})" if self.kinds else ""
        head = "verified" if self.passed else "verification inconclusive"
        text = (f"{head} on {self.trials} input {sets}{kinds}, {self.runner}: max |diff| "
                f"{self.max_abs_diff:.3g} within tolerance {self.tolerance:.3g} (max |output| "
                f"{self.max_abs_output:.3g}), {self.seconds:.2f} s")
        return text + "".join(f"; {n}" for n in self.notes)


def random_inputs(mod: IRModule, skip: Sequence[str] = (), seed: int = 0, kind: str = "normal") -> dict[str, np.ndarray]:
    """Seeded random values of `kind` (see `INPUT_KINDS`) for `main`'s parameters not in `skip`;
    booleans are fair coins; symbolic dimensions take `SYMBOLIC_DIM`."""
    if kind not in INPUT_KINDS:
        raise ValueError(f"unknown input kind {kind!r}; choose from {INPUT_KINDS}")
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for p in mod["main"].params:
        if p.name_hint in skip:
            continue
        ty = _param_type(p)
        shape = tuple(dim_value(d, SYMBOLIC_DIM) for d in ty.shape)
        if ty.dtype == "bool":
            out[p.name_hint] = rng.random(shape) < 0.5
        elif ty.dtype.startswith(("int", "uint")):
            out[p.name_hint] = _integers(rng, shape, np.dtype(ty.dtype), kind)
        else:
            out[p.name_hint] = _floats(rng, shape, ty.dtype, kind)
    return out


def _param_type(p: ir.Var) -> TensorType:
    ty = p.checked_type if p.type_inferred else p.type_annotation
    if not isinstance(ty, TensorType):
        raise VerificationError(f"cannot make a random value for input {p.name_hint!r} of type {ty}")
    return ty


def _integers(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, kind: str) -> np.ndarray:
    if kind == "normal":
        return rng.integers(0, 10, shape).astype(dtype)
    if kind == "small":
        low = -3 if dtype.kind == "i" else 0
        return rng.integers(low, 4, shape).astype(dtype)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    specials = np.array([info.min, info.max, 0, 1, info.max - 1] + ([-1] if info.min < 0 else []), dtype)
    return scatter_specials(rng, values, specials, 0.25)


def _floats(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, kind: str) -> np.ndarray:
    values = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    if kind == "small":
        return (values * np.asarray(1e-3, dtype)).astype(dtype)
    if kind == "large":
        return (values * np.asarray(1e3, dtype)).astype(dtype)
    if kind == "normal":
        return values
    tiny = np.finfo(np.dtype(dtype)).smallest_subnormal
    if kind == "edge":
        specials, share = [0.0, -0.0, tiny, -tiny, 3 * tiny, 1.0, -1.0], 0.25
    else:
        specials, share = [np.inf, -np.inf, np.nan], 0.05
    return scatter_specials(rng, values, np.array(specials, dtype), share)


def scatter_specials(rng: np.random.Generator, values: np.ndarray, specials: np.ndarray, share: float) -> np.ndarray:
    """`values` with `specials` written over a random `share` of its places, each special at
    least once where there is room (so a small tensor holds every edge value too)."""
    count = min(values.size, max(len(specials), int(share * values.size)))
    places = rng.permutation(values.size)[:count]
    values.reshape(-1)[places] = np.resize(specials, count)
    return values


def _tensor_bytes(mod: IRModule) -> int:
    """Bytes of every tensor the program makes (inputs and intermediates), symbolic dims at `SYMBOLIC_DIM`."""
    total = 0
    for node in post_order(mod["main"]):
        ty = getattr(node, "_checked_type", None)
        for t in (ty.fields if isinstance(ty, ir.TupleType) else (ty,)):
            if isinstance(t, TensorType):
                count = int(np.prod([dim_value(d, SYMBOLIC_DIM) for d in t.shape], dtype=np.float64))
                total += count * _itemsize(t.dtype)
    return total


def _itemsize(dtype: str) -> int:
    return 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize


def _runner(mod: IRModule, params: Mapping[str, Any]) -> tuple[Callable[[dict], list[np.ndarray]], str]:
    """A function of the inputs computing `mod`'s outputs as a flat list, and its name: the cpu
    executor, whose calls that have no cpu implementation (fused forms of other targets) run their
    reference kernels."""
    import strategies
    exe = strategies.build(mod, "cpu", params, reference_fallback=True)
    references = sorted({s.workload.op for s in exe.selections if s.reason == "reference"})
    name = f"cpu executor (reference kernels for {', '.join(references)})" if references else "cpu executor"
    return (lambda inputs: flat_outputs(exe.run(inputs))), name


def flat_outputs(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in flat_outputs(v)]
    return [np.asarray(value)]


@dataclass(frozen=True)
class _Comparison:
    diff: float
    tolerance: float
    scale: float
    agrees: bool
    why: str = ""


def _compare(want: np.ndarray, got: np.ndarray) -> _Comparison:
    """One output of both programs: finite values within tolerance, non-finite values identical."""
    if want.shape != got.shape:
        return _Comparison(np.inf, 0.0, 0.0, False, f"optimized shape {got.shape}")
    if want.dtype.kind in "biu" or got.dtype.kind in "biu":
        equal = want.dtype == got.dtype and np.array_equal(want, got)
        diff = 0.0 if equal else float(np.abs(want.astype(np.float64) - got.astype(np.float64)).max())
        return _Comparison(diff, 0.0, float(np.abs(want.astype(np.float64)).max(initial=0.0)), equal,
                           "" if equal else "integer outputs must be equal")
    a, b = want.astype(np.float64), got.astype(np.float64)
    finite = np.isfinite(a)
    if not np.array_equal(finite, np.isfinite(b)) or not np.array_equal(a[~finite], b[~finite], equal_nan=True):
        return _Comparison(np.inf, 0.0, 0.0, False, "NaN or infinity in different places")
    scale = float(np.abs(a[finite]).max(initial=0.0))
    diff = float(np.abs(a[finite] - b[finite]).max(initial=0.0))
    tolerance = RTOL.get(str(want.dtype), 1e-3) * scale + 4 * float(np.finfo(want.dtype).tiny)
    return _Comparison(diff, tolerance, scale, diff <= tolerance)


_ADDITIVE = frozenset({"add", "subtract", "sum", "mean", "nn.bias_add"})


def _cancelled_terms(mod: IRModule, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], k: int) -> float:
    """When output `k` of `mod` is made by an additive op (add, subtract, sum, mean, bias_add), the
    largest finite |value| of that op's operands: rounding noise of a sum is relative to its terms,
    not to its result. 0 when the output is made otherwise (its noise is relative to itself)."""
    import strategies
    body = mod["main"].body
    outputs = list(body.fields) if isinstance(body, ir.Tuple) else [body]
    out = outputs[k] if k < len(outputs) else None
    if not (isinstance(out, ir.Call) and getattr(out.op, "name", None) in _ADDITIVE):
        return 0.0
    operands = IRModule.from_expr(ir.Function(mod["main"].params, ir.Tuple(list(out.args))))
    with np.errstate(all="ignore"):
        values = strategies.evaluate(operands, inputs, params)
    finite = [np.abs(v[np.isfinite(v)]) for v in map(np.asarray, values) if v.dtype.kind == "f"]
    return max((float(f.max(initial=0.0)) for f in finite), default=0.0)


def verify(original: IRModule, params: Mapping[str, Any] | None, optimized: IRModule,
           optimized_params: Mapping[str, Any] | None, trials: int, report: Report | None = None) -> Verification:
    """Run both programs on `trials` seeded input sets (kinds cycle through `INPUT_KINDS`) and
    compare every output.

    Raises `VerificationError` naming the rules that were applied (from `report`), the output,
    the input kind and the largest difference when the programs disagree.
    """
    start = time.perf_counter()
    params, optimized_params = dict(params or {}), dict(optimized_params or {})
    original = original if isinstance(original, IRModule) else IRModule.from_expr(original)
    ir.infer_type(original)
    ir.infer_type(optimized)
    need = max(_tensor_bytes(original), _tensor_bytes(optimized))
    if need > MEMORY_CAP:
        note = (f"running the programs needs about {need / 2**30:.1f} GiB of tensors, over the "
                f"{MEMORY_CAP / 2**30:.0f} GiB cap of verification")
        return Verification(0, 0.0, 0.0, 0.0, "none", time.perf_counter() - start, "skipped", (), (note,))
    run_original, runner = _runner(original, params)
    run_optimized, runner_optimized = _runner(optimized, optimized_params)
    worst = (0.0, 0.0, 0.0)
    kinds: list[str] = []
    notes: list[str] = []
    inconclusive = False
    for seed in range(trials):
        kind = INPUT_KINDS[seed % len(INPUT_KINDS)]
        inputs = random_inputs(original, skip=list(params), seed=seed, kind=kind)
        with np.errstate(all="ignore"):  # inputs may leave an op's domain: NaNs are compared, not errors
            try:
                wants = run_original(inputs)
            except Exception as e:  # noqa: BLE001 - the input set, not the optimizer, is at fault
                notes.append(f"input set {seed} ({kind}) left out: the original program fails on it "
                             f"({type(e).__name__}: {e})")
                continue
            try:
                gots = run_optimized(inputs)
            except Exception as e:  # noqa: BLE001
                _fail(report, f"the optimized program fails on input set {seed} ({kind}) where the original "
                              f"runs: {type(e).__name__}: {e}")
        kinds.append(kind)
        if len(wants) != len(gots):
            _fail(report, f"the optimized program has {len(gots)} outputs, the original {len(wants)}")
        for k, (want, got) in enumerate(zip(wants, gots)):
            c = _compare(want, got)
            if not c.agrees:
                terms = _cancelled_terms(original, params, inputs, k) if np.isfinite(c.diff) else 0.0
                if want.dtype.kind == "f" and c.scale < NOISE_ULPS * float(np.finfo(want.dtype).eps) * terms:
                    inconclusive = True
                    notes.append(f"output {k} is rounding noise on input set {seed} ({kind}): max |output| "
                                 f"{c.scale:.3g} from terms up to {terms:.3g} that cancel, max |diff| {c.diff:.3g}")
                    continue
                _fail(report, f"output {k} (shape {want.shape}, {want.dtype}) differs on input set {seed} "
                              f"({kind}): max |diff| {c.diff:.3g} > tolerance {c.tolerance:.3g} (max |output| "
                              f"{c.scale:.3g}){'; ' + c.why if c.why else ''}")
            worst = max(worst, (c.diff, c.tolerance, c.scale))
    kind_text = runner if runner == runner_optimized else f"{runner} / {runner_optimized}"
    if not kinds:
        inconclusive = True
        notes.append("no input set could run the original program")
    return Verification(len(kinds), worst[0], worst[1], worst[2], kind_text, time.perf_counter() - start,
                        "inconclusive" if inconclusive else "passed", tuple(kinds), tuple(notes))


def _fail(report: Report | None, what: str) -> None:
    fired = ", ".join(f"{rule} x{n}" for rule, n in (report.applied_per_rule if report else {}).items())
    raise VerificationError(f"the optimized program does not compute what the original computes: {what}. "
                            f"Rules applied: {fired or 'none'}")
