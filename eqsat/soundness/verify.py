"""Checking an optimized program against the original on random inputs (the correctness contract).

Both programs run on the same seeded input sets (`eqsat.soundness.inputs`: typical, edge and
non-finite values; every size variable at `SMALL_PRIME`, 1 and a prime above the static sizes in
turn) where they will run: the CPU executor (a call the CPU target has no kernel for runs its op's
reference kernel), or, for the `ort` target, ONNX Runtime with its graph optimizer off, the
optimized program exported with ONNX Runtime's contrib ops and the original in standard ONNX.

The check is local. Each float element must agree within

    RTOL[dtype] * |reference| + the dtype's smallest normal number + NOISE_FACTOR * |noise|

at that element, where `dtype` is the least precise float dtype among the value's and those of the
values it is computed from (a float32 value computed from float16 ones carries their rounding), and `noise` is how far the original's output moves there when every float
input, constant and weight (a scalar one where arithmetic reads it: `inputs.ARITHMETIC_OPS`, which
also says why) is scaled by `1 + u * RTOL` and by `1 - u * RTOL` (u uniform in
(-1, 1); both ways, since a kink such as relu's moves one way only): the scale of the rounding noise of the
terms that made the element (an exact cancellation gets a tolerance from its terms, a
well-conditioned element about twice `RTOL`). Where both ways moved an element to one and the same
other value (a value just above a clip's corner that both moves take below it), the moves measured
its distance to the corner, not its noise: it takes at least the median noise of the other moved
elements of its row, and is not compared when there are none. Each way takes one more run of the original per
input set, so the noise is measured only as far as some value needs it: a value that agrees
without it is not compared again, then one that agrees with the noise of the first way (the
noise is the larger move of the two, so the tolerance of one way is at most that of both) is
not compared with the second. The tolerance is never scaled by a tensor's largest value, so a wrong slice beside a
large one is seen. NaN and infinity positions (and the
infinities' signs) must be the same; integer and bool outputs must be equal. (The sign of a zero
is left to `check_rule`, which runs each rule bit for bit on the reference kernels: the kernels a
program runs on may give either sign for `max(-0.0, 0.0)`.) Where the original fails on an input
set whose integers span their dtype (indices out of range), its integers are drawn from [0, 2).

Fails closed: `Verification.status` is "verified" only when every output was compared; otherwise
it is "inconclusive" (no input set ran, an output whose every element was too ill-conditioned to
check, or outputs that do not depend on the inputs with no rewritten region checked instead) or
"skipped" (tensors over `MEMORY_CAP`), and `eqsat.optimize` raises on both. When the caller gives
the values at the boundaries of the rewritten regions (`Boundaries`), they are compared like
outputs, so a rewrite whose effect an all-zero output hides is still checked; they are compared on
the input sets of finite values, since with inf and NaN inputs kernels legitimately differ inside a
program (ONNX Runtime's fused activations map NaN to 0, its convolution algorithms place NaN
differently), and only the outputs, whose NaN and inf must be in the same places, say whether that
is observable.
"""

from __future__ import annotations

import functools
import importlib.util
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Sequence

import numpy as np

import ir
from ir import IRModule
from ir.visitor import children
from ir.dtype_info import float_info, is_float
import strategies
from strategies.dtype_legality import all_dtypes
from strategies.ort_timing import ort_session, quiet_runner
from strategies.values import random_tensor

from ..errors import VerificationError
from ..report import Report
from .inputs import (ARITHMETIC_OPS, INPUT_KINDS, SIGNS, SMALL_PRIME, has_symbolic_inputs, masked_rows,
                     perturbed, perturbed_program, random_inputs, size_assignments, size_variables, symbolic_sizes,
                     tensor_bytes)

__all__ = ["Verification", "Boundaries", "verify", "random_inputs", "flat_outputs", "INPUT_KINDS",
           "RTOL", "MEMORY_CAP", "STATUSES"]

RTOL = {"float16": 1e-2, "bfloat16": 3e-2, "float32": 1e-3, "float64": 1e-6}
"""relative tolerance per output dtype, at each element (integers and bools: exact)."""
NOISE_FACTOR = 2.0
"""headroom on an element's measured noise scale: kernels that compute a function another way
(ONNX Runtime's approximate tanh in FastGelu, variance as E[x^2] - E[x]^2) differ by up to about
that scale where the result cancels."""
MEMORY_CAP = 2 << 30
"""bytes the tensors of one program may take (inputs and every intermediate) for it to be run."""
STATUSES = ("verified", "inconclusive", "skipped")


@dataclass(frozen=True)
class Verification:
    """The outcome of `verify`: the input sets run, the worst element, a status."""

    trials: int
    """input sets both programs ran on (sets the original cannot run on are not counted)."""
    max_abs_diff: float
    """|optimized - original| at the element closest to its bound (largest diff / tolerance)."""
    tolerance: float
    """the tolerance at that element."""
    max_abs_output: float
    """|original| at that element."""
    runner: str
    """where the programs ran: "cpu executor" (naming the ops that ran reference kernels) or
    "onnxruntime (optimizer off)"."""
    seconds: float
    status: str = "verified"
    """see `STATUSES`: only "verified" lets `eqsat.optimize` return the program."""
    kinds: tuple[str, ...] = ()
    """the kind of each input set that ran."""
    notes: tuple[str, ...] = ()
    """why a check was inconclusive or skipped, input sets left out, the sizes tried."""
    boundaries: int = 0
    """values at the boundaries of rewritten regions compared besides the outputs."""

    @property
    def passed(self) -> bool:
        return self.status == "verified"

    def summary(self) -> str:
        if self.status == "skipped":
            return f"not verified: {'; '.join(self.notes)}"
        if self.passed and not self.trials:
            return f"verified: {'; '.join(self.notes)}"
        sets = "set" if self.trials == 1 else "sets"
        kinds = f" ({', '.join(self.kinds)})" if self.kinds else ""
        head = "verified" if self.passed else "verification inconclusive"
        regions = f" and {self.boundaries} rewritten-region value(s)" if self.boundaries else ""
        text = (f"{head} on {self.trials} input {sets}{kinds}{regions}, {self.runner}: the element closest "
                f"to its bound differs by {self.max_abs_diff:.3g} of {self.tolerance:.3g} allowed (|output| "
                f"{self.max_abs_output:.3g}), {self.seconds:.2f} s")
        return text + "".join(f"; {n}" for n in self.notes)


@dataclass(frozen=True)
class Boundaries:
    """Values both programs compute at the boundaries of the rewritten regions: `original[i]` and
    `optimized[i]` are expressions of the two modules' `main` for the same e-class, named
    `label(i)` (asked for only when a report names the value)."""

    original: tuple[ir.Expr, ...]
    optimized: tuple[ir.Expr, ...]
    label: Callable[[int], str]


def flat_outputs(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in flat_outputs(v)]
    return [np.asarray(value)]


def _flat_exprs(body: ir.Expr) -> list[ir.Expr]:
    if isinstance(body, ir.Tuple):
        return [e for f in body.fields for e in _flat_exprs(f)]
    return [body]


def _with_values(mod: IRModule, extra: Sequence[ir.Expr]) -> IRModule:
    """`mod` whose `main` returns its outputs, flattened, then `extra`."""
    main = mod["main"]
    if not extra:
        return mod
    body = ir.Tuple(_flat_exprs(main.body) + list(extra))
    out = IRModule({**{name: mod[name] for name in mod}, "main": ir.Function(main.params, body)})
    ir.infer_type(out)
    return out


Runner = Callable[[dict], list[np.ndarray]]


Moved = Callable[[int], Runner]
"""the original's runner with its tensor constants and weights moved the way `SIGNS[side]` (see `_noise_of`)."""


def _cpu_runner(mod: IRModule, params: Mapping[str, Any]) -> tuple[Runner, str, Moved]:
    """The cpu executor; calls with no cpu implementation (another target's fused forms) run their
    reference kernels. Its moved twins are built when first run."""
    exe = strategies.build(mod, "cpu", params, reference_fallback=True)
    references = sorted({s.workload.op for s in exe.selections if s.reason == "reference"})
    name = f"cpu executor (reference kernels for {', '.join(references)})" if references else "cpu executor"

    def moved(side: int) -> Runner:
        return _cpu_runner(*perturbed_program(mod, params, _rtol, 0, SIGNS[side]))[0]
    return (lambda inputs: flat_outputs(exe.run(inputs))), name, moved


def _ort_runner(mod: IRModule, params: Mapping[str, Any], contrib: bool,
                movable: bool = False) -> tuple[Runner, str, Moved | None]:
    """ONNX Runtime with its graph optimizer off and its default threads (every core: verification is
    what the run waits for) and no weights repacked (it runs a few times), on `mod` exported (with
    contrib ops when `contrib`), its weights fed to every run as the arrays they are (`_fed_runner`).
    When `movable`, the float initializers that move (`_moving`) are graph inputs too, so the moved
    twins are runs of the same session fed moved values (no second export, no other session; a
    model with initializers ONNX Runtime cannot take from numpy, bfloat16 ones, has its moved twins
    exported apart)."""
    weights: dict[str, np.ndarray] = {}
    model = ir.frontend.to_onnx(mod, params, contrib=contrib, check=False, external=weights)  # ONNX Runtime checks
    moving = _moving(model, weights) if movable else None
    run = _fed_runner(model, weights, moving or {})

    def moved(side: int) -> Runner:
        if moving is None:
            return _ort_runner(*perturbed_program(mod, params, _rtol, 0, SIGNS[side]), contrib)[0]
        values = perturbed(moving, _rtol, 0xC0457, SIGNS[side])
        return _ort_outputs(lambda inputs: run(inputs, values))
    return _ort_outputs(run), "onnxruntime (optimizer off)", moved if movable else None


def _fed_runner(model: Any, weights: Mapping[str, np.ndarray], overridable: Collection[str]) -> Callable[..., list]:
    """`run(inputs, overrides=None)` of `model` (`strategies.ort_timing.quiet_runner`), whose held
    `weights` (`ir.frontend.to_onnx(external=...)`) are graph inputs fed to every run: ONNX Runtime
    copies an initializer handed to a session, and reads a fed array in place. Its `overridable`
    initializers are graph inputs too, which `overrides` may feed. Where the session cannot be made
    so (a kernel that needs its weight as an initializer), the weights are handed to the session."""
    import onnx  # installed wherever ONNX Runtime runs; the cpu path needs neither

    def as_inputs(names: Collection[str]) -> list[Any]:
        return [onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                for t in model.graph.initializer if t.name in names]
    fed = onnx.ModelProto()
    fed.CopyFrom(model)  # small: the weights are not inside it
    fed.graph.input.extend(as_inputs({*weights, *overridable}))
    kept = [t for t in model.graph.initializer if t.name not in weights]
    del fed.graph.initializer[:]
    fed.graph.initializer.extend(kept)
    try:
        run = quiet_runner(ort_session(fed.SerializeToString(), threads=0, optimization="disabled", prepack=False))
    except Exception:  # noqa: BLE001 - some kernel takes its weight at session creation only
        model.graph.input.extend(as_inputs(overridable))
        return quiet_runner(ort_session(model.SerializeToString(), threads=0, optimization="disabled",
                                        external=weights, prepack=False))
    return lambda inputs, overrides=None: run(inputs, {**weights, **(overrides or {})})


def _moving(model: Any, external: Mapping[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """The float initializers of `model` that move (of more than one element, or a scalar that only the
    arithmetic nodes of `ARITHMETIC_OPS` read: the scalars `perturbed_program` moves; one another node
    reads too stays, as an exponent or a fill must), with their values (those of `external` for the
    weights held outside the model); None when `model` holds a bfloat16 initializer (numpy cannot
    feed one)."""
    import onnx.numpy_helper  # installed wherever ONNX Runtime runs; the cpu path needs neither
    if any(t.HasField("raw_data") and t.data_type == onnx.TensorProto.BFLOAT16 for t in model.graph.initializer):
        return None
    readers: dict[str, set[str]] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.op_type)
    arithmetic = set(ARITHMETIC_OPS.values())
    moving = {}
    for t in model.graph.initializer:
        value = external[t.name] if t.name in external else onnx.numpy_helper.to_array(t)
        if is_float(value.dtype) and (value.size > 1 or readers.get(t.name, {""}) <= arithmetic):
            moving[t.name] = value
    return moving


def _ort_outputs(run: Callable[[dict], list]) -> Runner:
    return lambda inputs: [np.asarray(v) for v in run(inputs)]


def _runner(mod: IRModule, params: Mapping[str, Any], where: str, contrib: bool, notes: list[str],
            movable: bool = False) -> tuple[Runner, str, Moved | None]:
    """Where `mod` runs, its name, and (`movable`, or on the cpu executor) its moved twins."""
    if where == "ort" and importlib.util.find_spec("onnxruntime") is not None:
        return _ort_runner(mod, params, contrib, movable)
    if where == "ort":
        notes.append("onnxruntime is not installed: ran on the cpu executor instead")
    return _cpu_runner(mod, params)


@dataclass(frozen=True)
class _Comparison:
    agrees: bool
    diff: float = 0.0
    """|diff| at the worst element (the largest diff / tolerance)."""
    tolerance: float = 0.0
    reference: float = 0.0
    ratio: float = 0.0
    checked: int = 0
    """elements compared (non-finite positions, and finite elements with a finite tolerance)."""
    why: str = ""


def _bits_equal(want: np.ndarray, got: np.ndarray) -> bool:
    return want.dtype == got.dtype and np.array_equal(want, got)


def _compare(want: np.ndarray, got: np.ndarray, noise: np.ndarray | None, boundary: bool = False,
             precision: str | None = None) -> _Comparison:
    """One value of both programs, element by element (see the module docstring). At a `boundary`
    (a rewritten region's value, not an output) only elements finite in both are compared: kernels
    may place NaN differently inside a program (a max of NaN and a number), and the outputs say
    whether that reaches anything observable."""
    if want.shape != got.shape:
        return _Comparison(False, np.inf, why=f"optimized shape {got.shape}, original {want.shape}")
    if not is_float(want.dtype) or not is_float(got.dtype):
        if _bits_equal(want, got):
            return _Comparison(True, checked=want.size)
        a, b = want.astype(np.float64), got.astype(np.float64) if got.dtype.kind in "biuf" else got
        diff = float(np.abs(a - b).max(initial=0.0)) if a.shape == np.shape(b) else np.inf
        return _Comparison(False, diff, why=f"{want.dtype} values must be equal (optimized gives {got.dtype})")
    a, b = want.astype(np.float64), got.astype(np.float64)  # copies: zeroed below where not compared
    finite = np.isfinite(a)
    if boundary:
        finite &= np.isfinite(b)
    elif not np.array_equal(finite, np.isfinite(b)) or not np.array_equal(a[~finite], b[~finite], equal_nan=True):
        where = np.argwhere(np.isfinite(a) != np.isfinite(b))
        at = f" (first at index {tuple(int(i) for i in where[0])})" if len(where) else ""
        return _Comparison(False, np.inf, why=f"NaN or infinity in different places{at}")
    if a.size == 0:
        return _Comparison(True, checked=0)
    skipped = None if finite.all() else ~finite
    if skipped is not None:
        a[skipped], b[skipped] = 0.0, 0.0
    tolerance = np.abs(a, out=np.empty_like(a))  # arrays (0-d ones too) that are worked in place
    dtype = precision or want.dtype
    tolerance *= _rtol(dtype)
    tolerance += float(float_info(dtype).tiny)
    if noise is not None:
        if float_info(dtype).bits <= 16 and noise.ndim:
            noise = _row_floor(noise)
        tolerance += NOISE_FACTOR * np.where(np.isfinite(noise), noise, np.inf)
    diff = np.subtract(a, b, out=np.empty_like(a))
    np.abs(diff, out=diff)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.divide(diff, tolerance, out=np.empty_like(a))  # 0 where equal, the tolerance finite or not
    if skipped is not None:
        tolerance[skipped], ratio[skipped] = 0.0, -1.0
    checked = a.size if noise is None else int(np.count_nonzero(np.isfinite(tolerance)))  # 0 is finite where skipped
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    r = max(float(ratio[worst]), 0.0)
    why = "" if r <= 1.0 else (f"at index {tuple(int(i) for i in worst)} the original gives {a[worst]:.6g}, the "
                               f"optimized {b[worst]:.6g}")
    return _Comparison(r <= 1.0, float(diff[worst]), float(tolerance[worst]),
                       float(a[worst]) if finite[worst] else 0.0, r, checked, why)


def _row_floor(noise: np.ndarray) -> np.ndarray:
    """`noise` raised to the median of its row (the last axis) where it is lower. In a 16-bit float
    an element's move is often none at all (the change rounds away) or one step, while the
    roundings of the terms that made it, which the moves do not redo, reach it all the same: its
    row's typical move is the better scale of its noise (a row with no finite move: no floor)."""
    return np.fmax(noise, _row_median(noise, np.isfinite(noise)))


def _precisions(mod: IRModule) -> list[str | None]:
    """Per value `main` returns (flattened), the least precise float dtype (the largest `RTOL`) among
    its own and those of the values it is computed from; None where there is none."""
    least: dict[ir.Expr, str | None] = {}
    for node in ir.post_order(mod["main"].body):
        dtypes = [d for d in all_dtypes([node.checked_type]) if is_float(d)]
        dtypes += [d for c in children(node) if (d := least.get(c))]
        least[node] = max(dtypes, key=_rtol, default=None)
    return [least[e] for e in _flat_exprs(mod["main"].body)]


def _rtol(dtype: np.dtype | str) -> float:
    """`RTOL` of a float dtype: the tolerance relative to each element, and the size of the perturbation
    that measures the element's noise."""
    return RTOL.get(str(dtype), 1e-3)


def verify(original: IRModule, params: Mapping[str, Any] | None, optimized: IRModule,
           optimized_params: Mapping[str, Any] | None, trials: int = 3, report: Report | None = None, *,
           boundaries: Boundaries | None = None, where: str = "cpu", contrib: bool = True) -> Verification:
    """Run both programs on `trials` seeded input sets (kinds cycle through `INPUT_KINDS`, size
    variables through `symbolic_sizes`) `where` they will run ("cpu" or "ort": the optimized program
    exported with contrib ops when `contrib`) and compare every output, and every value of
    `boundaries`, element by element.

    Raises `VerificationError` naming the rules that were applied (from `report`), the value, the
    input set, the element and both values when the programs disagree. Returns a `Verification`
    whose status is "verified" only when every value was compared (see the module docstring).
    """
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise ValueError(f"trials must be a positive number of input sets, not {trials!r}")
    start = time.perf_counter()
    params, optimized_params = dict(params or {}), dict(optimized_params or {})
    original = original if isinstance(original, IRModule) else IRModule.from_expr(original)
    ir.infer_type(original)
    ir.infer_type(optimized)
    if _same_program(original, optimized) and _same_values(params, optimized_params):
        return Verification(0, 0.0, 0.0, 0.0, "none", time.perf_counter() - start, "verified", (),
                            ("the optimized program is the input itself",))
    skip = list(params)
    sizes = (symbolic_sizes(original, skip, lambda n: _bytes(original, optimized, n) <= MEMORY_CAP)
             if has_symbolic_inputs(original, skip) else (SMALL_PRIME,))
    need = max(_bytes(original, optimized, n) for n in sizes)
    if need > MEMORY_CAP:
        note = (f"running the programs needs about {need / 2**30:.1f} GiB of tensors, over the "
                f"{MEMORY_CAP / 2**30:.0f} GiB cap of verification")
        return Verification(0, 0.0, 0.0, 0.0, "none", time.perf_counter() - start, "skipped", (), (note,))
    outputs = len(_flat_exprs(original["main"].body))
    values = outputs
    if boundaries is not None and boundaries.original:
        original = _with_values(original, boundaries.original)
        optimized = _with_values(optimized, boundaries.optimized)
        values += len(boundaries.original)

    def label(k: int) -> str:
        return f"output {k}" if k < outputs else boundaries.label(k - outputs)
    precisions = _precisions(original)
    notes: list[str] = []
    run_original, runner, moved = _runner(original, params, where, False, notes, movable=True)
    run_moved = functools.cache(moved)  # built when some value first needs the noise scale
    variables = size_variables(original, skip)
    try:
        run_optimized, runner_optimized, _ = _runner(optimized, optimized_params, where, contrib, notes)
    except Exception as e:  # noqa: BLE001 - a program that cannot be written or loaded where it runs fails
        _fail(report, f"the optimized program cannot be run where it will run ({type(e).__name__}: "
                      f"{str(e).splitlines()[0] if str(e) else ''})")
    worst = _Comparison(True)
    kinds: list[str] = []
    checked = [0] * values
    seen: list[list[np.ndarray]] = []
    for seed in range(trials):
        kind, size = INPUT_KINDS[seed % len(INPUT_KINDS)], sizes[seed % len(sizes)]
        at = f"input set {seed} ({kind}{f', size variables = {size}' if len(sizes) > 1 else ''})"
        with np.errstate(all="ignore"):  # inputs may leave an op's domain: NaNs are compared, not errors
            try:
                inputs, wants, noise = _run_original(original, skip, seed, kind, size, variables, run_original,
                                                     run_moved)
            except Exception as e:  # noqa: BLE001 - the input set, not the optimizer, is at fault
                notes.append(f"{at} left out: the original program fails on it ({type(e).__name__}: {e})")
                continue
            try:
                gots = run_optimized(inputs)
            except Exception as e:  # noqa: BLE001
                _fail(report, f"the optimized program fails on {at} where the original runs: {type(e).__name__}: {e}")
            if len(wants) != len(gots):
                _fail(report, f"the optimized program has {len(gots)} outputs, the original {len(wants)}")
            kinds.append(kind)
            seen.append(wants)
            compared = _compare_all(wants, gots, outputs, kind, noise, precisions)
            for k, c in compared.items():
                if not c.agrees:
                    _fail(report, f"{label(k)} (shape {wants[k].shape}, {wants[k].dtype}) differs on {at}: |diff| "
                                  f"{c.diff:.3g} > tolerance {c.tolerance:.3g}{'; ' + c.why if c.why else ''}")
                checked[k] += c.checked
                if c.ratio >= worst.ratio:
                    worst = c
    status = "verified"
    if len(sizes) > 1:
        notes.append(f"size variables tried at {', '.join(map(str, sizes[:min(trials, len(sizes))]))}")
    if not kinds:
        status = "inconclusive"
        notes.append("no input set could run the original program")
    else:
        unchecked = [label(k) for k in range(values) if checked[k] == 0 and seen[0][k].size]
        if unchecked:
            status = "inconclusive"
            notes.append(f"{', '.join(unchecked)}: no element could be told apart from rounding noise")
        fixed = _input_independent(seen, outputs)
        if fixed and values == outputs:
            status = "inconclusive"
            notes.append("the outputs do not depend on the inputs and no rewritten region was checked instead")
        elif fixed:
            notes.append("the outputs do not depend on the inputs: the rewritten regions' values were checked")
    kind_text = runner if runner == runner_optimized else f"{runner} / {runner_optimized}"
    return Verification(len(kinds), worst.diff, worst.tolerance, abs(worst.reference), kind_text,
                        time.perf_counter() - start, status, tuple(kinds), tuple(notes),
                        values - outputs)


Noise = Callable[[int, Sequence[int]], list[np.ndarray | None]]
"""noise(ways, values): the noise scale of each of `values` from the first `ways` runs of the original
moved (`SIGNS`); None for each where a moved run fails."""


def _compare_all(wants: list[np.ndarray], gots: list[np.ndarray], outputs: int, kind: str,
                 noise: Noise, precisions: Sequence[str | None]) -> dict[int, _Comparison]:
    """Each value compared (boundaries not on a non-finite set: inside a program, kernels may turn NaN
    and inf into other values, see above), first without the noise term, then the values that disagree
    again with the noise of one moved run, then of both. The noise only widens a tolerance and the
    noise of one way is at most that of both, so a value that agrees at an earlier step agrees with
    the noise of both ways: the moved runs are made only when some value needs them."""
    values = [k for k in range(len(wants)) if not (k >= outputs and kind == "nonfinite")]
    compared = {k: _compare(wants[k], gots[k], None, k >= outputs, precisions[k]) for k in values}
    for ways in range(1, len(SIGNS) + 1):
        disagree = [k for k in values if not compared[k].agrees]
        if not disagree:
            break
        scales = noise(ways, disagree)
        compared.update({k: _compare(wants[k], gots[k], scale, k >= outputs, precisions[k])
                         for k, scale in zip(disagree, scales)})
    return compared


def _run_original(original: IRModule, skip: Sequence[str], seed: int, kind: str, size: int, variables: list[str],
                  run: Runner, run_moved: Moved) -> tuple[dict[str, np.ndarray], list[np.ndarray], Noise]:
    """An input set the original runs on, its outputs, and a function that measures their noise
    scales (`Noise`: how far each moves when the original is moved). Size variables take `size`,
    then one at a time twice that (`size_assignments`: a mask as long as past and new tokens
    together). Integer inputs are often indices or shapes: where the original fails on full-range
    ones, they are drawn from [0, 2), then all 0 (a reshape's "copy this dimension"), then all 1 (an
    expand to itself)."""
    rng = np.random.default_rng(seed)
    integers = [lambda v: v, lambda v: random_tensor(rng, v.shape, str(v.dtype), "index"), np.zeros_like, np.ones_like]
    failure: Exception | None = None
    for named in size_assignments(variables, size):
        inputs = random_inputs(original, skip=skip, seed=seed, kind=kind, size=size, named=named)
        ints = [k for k, v in inputs.items() if v.dtype.kind in "iu"]
        for make in integers if ints else integers[:1]:
            candidate = {k: make(v) if k in ints else v for k, v in inputs.items()}
            candidate = masked_rows(candidate) if kind == "edge" else candidate
            try:
                wants = run(candidate)
            except Exception as e:  # noqa: BLE001 - the input set, not the optimizer, is at fault
                failure = e
                continue
            return candidate, wants, _noise_of(candidate, wants, seed, run_moved)
    raise failure  # type: ignore[misc]


def _noise_of(inputs: dict[str, np.ndarray], wants: list[np.ndarray], seed: int, run_moved: Moved) -> Noise:
    """`Noise` of the original's outputs `wants` on `inputs`: each moved run is made once, when first needed."""
    @functools.cache
    def outputs(side: int) -> list[np.ndarray] | None:
        try:
            return run_moved(side)(perturbed(inputs, _rtol, seed, SIGNS[side]))
        except Exception:  # noqa: BLE001 - no noise scale: the comparison stays as strict as without it
            return None

    def noise(ways: int, values: Sequence[int]) -> list[np.ndarray | None]:
        moved: list[list[np.ndarray]] = []
        for side in range(ways):
            out = outputs(side)
            if out is None:
                return [None] * len(values)
            moved.append(out)
        return [_noise(wants[k], [m[k] for m in moved]) for k in values]
    return noise


def _noise(want: np.ndarray, moved: list[np.ndarray]) -> np.ndarray | None:
    """Per element, the largest move of `want` in the `moved` runs; where two or more ways met at one
    value that is not `want` (`_met`), at least the median of the row's other moves (those that
    moved: an element no way moved, a clamped zero say, tells nothing of the terms' noise)."""
    if not is_float(want.dtype) or any(m.shape != want.shape for m in moved):
        return None
    a = want.astype(np.float64)
    largest: np.ndarray | None = None
    for m in moved:
        move = m.astype(np.float64)  # a copy, worked in place
        move -= a
        np.abs(move, out=move)
        largest = move if largest is None else np.maximum(largest, move, out=largest)
    if len(moved) > 1 and a.ndim:
        met = _met(want, moved)
        if met.any():
            median = _row_median(largest, ~met & (largest > 0))
            unknown = np.where(np.isnan(median), np.inf, median)  # a row with none: not compared
            largest = np.where(met, np.fmax(largest, unknown), largest)
    return largest


def _met(want: np.ndarray, moved: list[np.ndarray]) -> np.ndarray:
    """Elements that every way moved to one and the same value other than `want`'s: the two ways
    moved the terms in opposite directions and the element did not follow, so it sits at a kink
    (a relu's or a clip's, say: both moves of a value just above zero can end below it, and clamp
    to it), and its moves measure its distance to the kink, not the rounding noise of its terms."""
    first = moved[0]
    met = np.isfinite(first) & (first != want)
    for m in moved[1:]:
        met &= m == first
    return met


def _row_median(noise: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """The median of `noise` over the finite `kept` elements of each row (the last axis); NaN for a
    row with none."""
    finite = np.where(kept & np.isfinite(noise), noise, np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row with no such element
        return np.nanmedian(finite, axis=-1, keepdims=True)


def _bytes(original: IRModule, optimized: IRModule, size: int) -> int:
    return max(tensor_bytes(original, size), tensor_bytes(optimized, size))


def _input_independent(seen: list[list[np.ndarray]], outputs: int) -> bool:
    """True when every non-empty output took the same value on every input set (two sets at least)."""
    held = [k for k in range(outputs) if seen[0][k].size]
    if len(seen) < 2 or not held:
        return False
    return all(_bits_equal(values[k], seen[0][k]) for values in seen[1:] for k in held)


def _same_program(a: IRModule, b: IRModule) -> bool:
    return ir.structural_equal(a["main"], b["main"])


def _same_values(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.keys() == b.keys() and all(_bits_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def _fail(report: Report | None, what: str) -> None:
    fired = ", ".join(f"{rule} x{n}" for rule, n in (report.applied_per_rule if report else {}).items())
    raise VerificationError(f"the optimized program does not compute what the original computes: {what}. "
                            f"Rules applied: {fired or 'none'}")
