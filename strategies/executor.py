"""`build`: select an implementation for every call of a program on a target, and run it.

    exe = strategies.build(mod, target="cpu", params=params)
    out = exe.run(data=x)                  # a numpy array, or a tuple for tuple outputs
    print(exe.profile(data=x))             # per-call and per-op-type times

Selection follows the op-strategy rules (`strategies.select`), with the tuning history of the
enclosing `apply_history_best` block. Each distinct workload is logged once on the "strategies"
logger (INFO): which implementation, and why (tuned / plevel / fallback); a build warns once, in
one line each, about the ops that fall back to generic implementations and, within a tuning
history, about the workloads it has no record for. A call whose shapes are
symbolic is checked when building (some implementation must be possible) and selects when it
runs, per actual shape, among the implementations whose condition holds (memoized per shape).
With `reference_fallback=True` a call that has no implementation on the target runs its op's
reference kernel instead (to check, on the host, a program extracted for another target).

Building also prepares each call's kernel (`strategies.kernels.prepared`): work that depends only
on constants and attributes (packed or transformed weights, batch-norm statistics folded into a
scale and shift) is done once. On a cpu target a program without control flow runs as a
`strategies.straight_line.StraightLineProgram`, which frees every value after its last use and
lets element-wise and normalisation kernels write into inputs nothing reads afterwards; other
programs (and other devices) run on the interpreter's evaluator.

Threads: the GEMMs run in numpy's BLAS (OpenBLAS), whose thread pool is sized from
`OPENBLAS_NUM_THREADS` when numpy is imported; every other kernel runs on the calling thread.
"""

from __future__ import annotations

import logging
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping

import numpy as np

from ir.errors import ShapeError
from ir.expr import Call, Constant, Expr, Function
from ir.module import IRModule
from ir.op.registry import Op
from ir.type_infer import infer_type
from ir.types import Type
from ir.visitor import bind_params_by_name, post_order

from .constants import fold_constants
from .devices import require_device, to_host, to_torch
from .errors import InputError, KernelError, NoImplementationError
from .interpreter import Evaluator, bind_inputs, entry_function
from .kernels.prepared import NO_DONATION, Kernel, PreparedCompute
from .op_strategies.generic import reference_strategy
from .records import TuningHistory, current_history
from .select import Selection, candidate_implementations, select_implementation
from .straight_line import StraightLineProgram, is_straight_line
from .target import Target, as_target
from .workload import Workload

__all__ = ["build", "Executable", "Profile", "ProfileRow", "prepare_program"]

logger = logging.getLogger("strategies")


@dataclass(frozen=True)
class ProfileRow:
    """One call's time in a profiled run (the median over the repeats)."""

    op: str
    implementation: str
    reason: str
    workload: str
    time_us: float


@dataclass(frozen=True)
class Profile:
    """Per-call kernel times of a program, in execution order, and the end-to-end latency (µs)."""

    rows: tuple[ProfileRow, ...]
    latency_us: float             # median wall time of a whole run, inputs checked and outputs returned

    @property
    def kernels_us(self) -> float:
        """The summed kernel times (the rest of `latency_us` is the executor's own overhead)."""
        return sum(r.time_us for r in self.rows)

    def by_op(self) -> dict[str, float]:
        """Total kernel time per op type, slowest first."""
        return self._total(lambda r: r.op)

    def by_implementation(self) -> dict[str, float]:
        """Total kernel time per implementation, slowest first."""
        return self._total(lambda r: r.implementation)

    def _total(self, key) -> dict[str, float]:
        totals: dict[str, float] = {}
        for r in self.rows:
            totals[key(r)] = totals.get(key(r), 0.0) + r.time_us
        return dict(sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])))

    def __str__(self) -> str:
        lines = [f"latency {self.latency_us:.1f} us, kernels {self.kernels_us:.1f} us in {len(self.rows)} calls",
                 f"{'op':<24} {'total us':>10} {'share':>6}"]
        for op, total in self.by_op().items():
            lines.append(f"{op:<24} {total:>10.1f} {total / max(self.kernels_us, 1e-9):>6.1%}")
        return "\n".join(lines)


def _constant_inputs(call: Call) -> list[np.ndarray | None]:
    return [np.asarray(a.data) if isinstance(a, Constant) else None for a in call.args]


class _CallKernel:
    """What runs for one call node: the kernel prepared for its selection, or a per-shape dispatch.

    A kernel is prepared (`strategies.kernels.prepared`) once per selection: for a static call when
    the program is built, for a call with symbolic shapes the first time each shape is met.
    """

    __slots__ = ("call", "selection", "kernel", "trusted", "uses_donations", "last", "_by_shape", "_choose",
                 "_device")

    def __init__(self, call: Call, selection: Selection | None, choose: Callable[[Workload], Selection],
                 device: str):
        self.call = call
        self.selection = selection
        self._choose = choose
        self._device = device
        self._by_shape: dict[tuple, tuple[Selection, Kernel]] = {}
        self.kernel = self._prepare(selection, call.checked_type) if selection is not None else None
        # only a fixed selection's kernel is known when the program is planned
        compute = selection.implementation.compute if selection is not None else None
        self.trusted = (isinstance(compute, PreparedCompute) and selection.implementation.device == "host"
                        and device == "cpu")
        self.uses_donations = self.trusted and compute.uses_donations
        self.last = selection  # the selection of the latest run (profiles read it)

    def _prepare(self, selection: Selection, out_type: Type) -> Kernel:
        impl, attrs, config = selection.implementation, self.call.attrs, selection.config
        if impl.device == "torch":
            device, host = self._device, self._device == "cpu"

            def torch_kernel(args: list, donated: Any) -> Any:
                out = impl.compute(attrs, [to_torch(a, device) for a in args], out_type, config)
                return to_host(out) if host else out  # a cpu target keeps every value a numpy array
            return torch_kernel
        if isinstance(impl.compute, PreparedCompute):
            kernel = impl.compute.prepare(attrs, _constant_inputs(self.call), out_type, config)
        else:
            def kernel(args: list, donated: Any) -> Any:
                return impl.compute(attrs, args, out_type, config)
        if self._device == "cpu":
            return kernel
        return lambda args, donated: kernel([a if isinstance(a, np.ndarray) else to_host(a) for a in args], donated)

    def _select(self, args: list) -> tuple[Selection, Kernel]:
        """The selection and kernel for these argument values (symbolic shapes; memoized per shape)."""
        shapes = tuple(getattr(a, "shape", None) if not isinstance(a, tuple) else tuple(x.shape for x in a)
                       for a in args)
        chosen = self._by_shape.get(shapes)
        if chosen is None:
            try:
                workload = Workload.of_values(self.call.op.name, self.call.attrs, [to_host(a) for a in args])
            except ShapeError as err:
                raise KernelError(f"{self.call.op.name}: {err}") from None
            selection = self._choose(workload)
            chosen = self._by_shape[shapes] = (selection, self._prepare(selection, workload.out_type))
        return chosen

    def run(self, args: list, donated: Collection[int] = NO_DONATION) -> Any:
        """The call's value for these arguments; `donated` lists arguments its kernel may overwrite."""
        if self.kernel is not None:
            selection, kernel = self.selection, self.kernel
        else:
            selection, kernel = self._select(args)
            self.last = selection
        try:
            return kernel(args, donated)
        except (ValueError, TypeError, IndexError, FloatingPointError) as err:
            impl = selection.implementation
            raise KernelError(f"{impl.name} failed on {selection.workload.describe()}: {err}") from err


class Executable:
    """A program built for a target: `run` computes its outputs, `profile` times each call."""

    def __init__(self, func: Function, target: Target, history: TuningHistory | None,
                 reference_fallback: bool = False):
        self.func = func
        self.target = target
        self._history = history
        self._reference_fallback = reference_fallback
        self._selections: dict[str, Selection] = {}
        self._fallbacks: set[str] = set()
        self._untuned: set[str] = set()
        """workloads the tuning history has no usable record for (with a history only)."""
        self._kernels: dict[int, _CallKernel] = {}
        self._times: list[tuple[_CallKernel, float]] | None = None
        self._device_constants: dict[int, Any] = {}
        for node in post_order(func):
            if isinstance(node, Call) and isinstance(node.op, Op):
                self._kernels[id(node)] = self._plan_call(node)
        self._warn_fallbacks()
        self._program: StraightLineProgram | None = None
        if target.device == "cpu" and is_straight_line(func):
            self._program = StraightLineProgram(func, self._kernels)
        else:
            self._evaluator = Evaluator(self._run_op, self._load_constant if target.device != "cpu" else None)
            self._evaluator.prepare(func)

    # -- selection ------------------------------------------------------------------------------
    def _select(self, workload: Workload) -> Selection:
        known = self._selections.get(workload.key)
        if known is not None:
            return known
        try:
            selection = select_implementation(workload, self.target, self._history)
        except NoImplementationError:
            if not self._reference_fallback:
                raise
            impl = reference_strategy(workload.op)(workload.attrs, list(workload.in_types), workload.out_type,
                                                   self.target).implementations()[0]
            selection = Selection(workload, impl, {}, "reference", (impl.name,))
        self._selections[workload.key] = selection
        if selection.reason == "fallback":
            self._fallbacks.add(workload.op)
        if self._history is not None and selection.reason != "tuned":
            self._untuned.add(workload.key)
        logger.info("%s", selection.describe(self.target))
        return selection

    def _plan_call(self, call: Call) -> _CallKernel:
        workload = Workload.of_call(call)
        if workload.static:
            return _CallKernel(call, self._select(workload), self._select, self.target.device)
        try:
            _, _, fallback = candidate_implementations(workload, self.target)  # fails now if nothing can run it
        except NoImplementationError:
            if not self._reference_fallback:
                raise
            fallback = False
        if fallback:
            self._fallbacks.add(workload.op)
        logger.info("%s: %s has symbolic shapes; it dispatches per actual shape at run time",
                    self.target, workload.describe())
        return _CallKernel(call, None, self._select, self.target.device)

    def _warn_fallbacks(self) -> None:
        if self._fallbacks:
            logger.warning("target %s has no implementation of %s; they fall back to the generic ones",
                           self.target, ", ".join(sorted(self._fallbacks)))
        if self._untuned:
            logger.warning("%s has no usable record for %d of %d workload(s) on target %s; they run untuned "
                           "(strategies.coverage.tuning_coverage lists them)", self._history.source,
                           len(self._untuned), len(self._selections), self.target)

    @property
    def selections(self) -> list[Selection]:
        """The selection of every distinct workload met so far, in the order first met."""
        return list(self._selections.values())

    # -- running --------------------------------------------------------------------------------
    def _load_constant(self, node: Constant) -> Any:
        value = self._device_constants.get(id(node))
        if value is None:
            value = self._device_constants[id(node)] = to_torch(node.data, self.target.device)
        return value

    def _clock(self) -> float:
        """Seconds for timing kernels; on a GPU, after the kernels queued so far have finished."""
        if self.target.device == "cuda":
            import torch
            torch.cuda.synchronize()
        return time.perf_counter()

    def _run_op(self, call: Call, args: list) -> Any:
        kernel = self._kernels[id(call)]
        if self._times is None:
            return kernel.run(args)
        start = self._clock()
        out = kernel.run(args)
        self._times.append((kernel, self._clock() - start))
        return out

    def _execute(self, inputs: Mapping[str, Any] | None, named: Mapping[str, Any],
                 times: list[tuple[_CallKernel, float]] | None = None) -> Any:
        both = sorted(set(inputs or {}) & set(named))
        if both:
            raise InputError(f"input(s) {both} given twice")
        bound = bind_inputs(self.func, {**(inputs or {}), **named})
        if self._program is not None:
            return self._program.run(bound, times, self._clock)
        self._times = times
        try:
            return to_host(self._evaluator.run(self.func, bound))
        finally:
            self._times = None

    def run(self, inputs: Mapping[str, Any] | None = None, /, **named: Any) -> Any:
        """The program's output for named inputs: a numpy array, or a tuple of them.

        Inputs come as a mapping, as keywords, or both. A missing, unexpected or ill-shaped input
        raises `InputError` naming it, with the expected and the given type.
        """
        return self._execute(inputs, named)

    def profile(self, inputs: Mapping[str, Any] | None = None, /, repeat: int = 3, **named: Any) -> Profile:
        """Run `repeat` times (after one warm-up run) and report each call's median kernel time."""
        self._execute(inputs, named)
        per_run: list[list[tuple[Selection, float]]] = []
        latencies = []
        for _ in range(max(1, repeat)):
            times: list[tuple[_CallKernel, float]] = []
            start = time.perf_counter()
            self._execute(inputs, named, times)
            latencies.append((time.perf_counter() - start) * 1e6)
            per_run.append([(kernel.last, seconds * 1e6) for kernel, seconds in times])
        rows = []
        for calls in zip(*per_run):
            selection = calls[0][0]
            rows.append(ProfileRow(selection.workload.op, selection.implementation.name, selection.reason,
                                   selection.workload.key, statistics.median(t for _, t in calls)))
        return Profile(tuple(rows), statistics.median(latencies))


def build(mod: IRModule | Expr, target: Target | str = "cpu", params: Mapping[str, Any] | None = None, *,
          reference_fallback: bool = False) -> Executable:
    """Build `mod` (or a function / expression) for `target`; `params` become constants.

    Constant-only subgraphs are folded, the program is type-checked, and every call gets its
    implementation (tuning history of the enclosing `apply_history_best`, else highest plevel).
    Raises `NoImplementationError` naming the op and target when some call cannot run there
    (unless `reference_fallback`: such a call runs its op's reference kernel on the host), and
    `TargetError` when the target's device is not present.
    """
    target = as_target(target)
    require_device(target)
    return Executable(prepare_program(mod, params), target, current_history(), reference_fallback)


def prepare_program(mod: IRModule | Expr, params: Mapping[str, Any] | None = None) -> Function:
    """The entry function of `mod` with `params` bound as constants, constants folded, types inferred."""
    func = entry_function(mod)
    if params:
        try:
            func = bind_params_by_name(func, params)
        except ValueError as err:
            raise InputError(str(err)) from None
    func = fold_constants(func)
    infer_type(func)
    return func
