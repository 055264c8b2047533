"""`build`: select an implementation for every call of a program on a target, and run it.

    exe = strategies.build(mod, target="cpu", params=params)
    out = exe.run(data=x)                  # a numpy array, or a tuple for tuple outputs
    print(exe.profile(data=x))             # per-call and per-op-type times

Selection follows the op-strategy rules (`strategies.select`), with the tuning history of the
enclosing `apply_history_best` block. Each distinct workload is logged once on the "strategies"
logger (INFO): which implementation, and why (tuned / plevel / fallback). A call whose shapes are
symbolic is checked when building (some implementation must be possible) and selects when it
runs, per actual shape, among the implementations whose condition holds (memoized per shape).
"""

from __future__ import annotations

import logging
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ir.errors import ShapeError
from ir.expr import Call, Constant, Expr, Function
from ir.module import IRModule
from ir.op.registry import Op
from ir.type_infer import infer_type
from ir.visitor import bind_params_by_name, post_order

from .constants import fold_constants
from .devices import require_device, to_host, to_torch
from .errors import InputError, KernelError
from .interpreter import Evaluator, bind_inputs, entry_function
from .records import TuningHistory, current_history
from .select import Selection, candidate_implementations, select_implementation
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


class _CallKernel:
    """What runs for one call node: a fixed selection, or a per-shape dispatch for symbolic shapes."""

    __slots__ = ("call", "selection", "_by_shape", "_choose")

    def __init__(self, call: Call, selection: Selection | None, choose: Callable[[Workload], Selection]):
        self.call = call
        self.selection = selection
        self._by_shape: dict[tuple, Selection] = {}
        self._choose = choose

    def select(self, args: list) -> tuple[Selection, Any]:
        """The selection and output type for these argument values."""
        if self.selection is not None:
            return self.selection, self.call.checked_type
        shapes = tuple(getattr(a, "shape", None) if not isinstance(a, tuple) else tuple(x.shape for x in a)
                       for a in args)
        selection = self._by_shape.get(shapes)
        if selection is None:
            try:
                workload = Workload.of_values(self.call.op.name, self.call.attrs, [to_host(a) for a in args])
            except ShapeError as err:
                raise KernelError(f"{self.call.op.name}: {err}") from None
            selection = self._choose(workload)
            self._by_shape[shapes] = selection
        return selection, selection.workload.out_type


class Executable:
    """A program built for a target: `run` computes its outputs, `profile` times each call."""

    def __init__(self, func: Function, target: Target, history: TuningHistory | None):
        self.func = func
        self.target = target
        self._history = history
        self._selections: dict[str, Selection] = {}
        self._fallbacks: set[str] = set()
        self._kernels: dict[int, _CallKernel] = {}
        self._times: list[tuple[Selection, float]] | None = None
        self._device_constants: dict[int, Any] = {}
        for node in post_order(func):
            if isinstance(node, Call) and isinstance(node.op, Op):
                self._kernels[id(node)] = self._plan_call(node)
        self._warn_fallbacks()
        self._evaluator = Evaluator(self._run_op, self._load_constant if target.device != "cpu" else None)
        self._evaluator.prepare(func)

    # -- selection ------------------------------------------------------------------------------
    def _select(self, workload: Workload) -> Selection:
        known = self._selections.get(workload.key)
        if known is not None:
            return known
        selection = select_implementation(workload, self.target, self._history)
        self._selections[workload.key] = selection
        if selection.reason == "fallback":
            self._fallbacks.add(workload.op)
        logger.info("%s", selection.describe(self.target))
        return selection

    def _plan_call(self, call: Call) -> _CallKernel:
        workload = Workload.of_call(call)
        if workload.static:
            return _CallKernel(call, self._select(workload), self._select)
        _, _, fallback = candidate_implementations(workload, self.target)  # fails now if nothing can run it
        if fallback:
            self._fallbacks.add(workload.op)
        logger.info("%s: %s has symbolic shapes; it dispatches per actual shape at run time",
                    self.target, workload.describe())
        return _CallKernel(call, None, self._select)

    def _warn_fallbacks(self) -> None:
        if self._fallbacks:
            logger.warning("target %s has no implementation of %s; they fall back to the generic ones",
                           self.target, ", ".join(sorted(self._fallbacks)))

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

    def _run_op(self, call: Call, args: list) -> Any:
        selection, out_type = self._kernels[id(call)].select(args)
        impl = selection.implementation
        if impl.device == "torch":
            args = [to_torch(a, self.target.device) for a in args]
        else:
            args = [a if isinstance(a, np.ndarray) else to_host(a) for a in args]
        start = time.perf_counter() if self._times is not None else 0.0
        try:
            out = impl.compute(call.attrs, args, out_type, selection.config)
        except (ValueError, TypeError, IndexError, FloatingPointError) as err:
            raise KernelError(f"{impl.name} failed on {selection.workload.describe()}: {err}") from err
        if self._times is not None:
            if self.target.device == "cuda":
                import torch
                torch.cuda.synchronize()
            self._times.append((selection, (time.perf_counter() - start) * 1e6))
        return out

    def run(self, inputs: Mapping[str, Any] | None = None, /, **named: Any) -> Any:
        """The program's output for named inputs: a numpy array, or a tuple of them.

        Inputs come as a mapping, as keywords, or both. A missing, unexpected or ill-shaped input
        raises `InputError` naming it, with the expected and the given type.
        """
        both = sorted(set(inputs or {}) & set(named))
        if both:
            raise InputError(f"input(s) {both} given twice")
        bound = bind_inputs(self.func, {**(inputs or {}), **named})
        return to_host(self._evaluator.run(self.func, bound))

    def profile(self, inputs: Mapping[str, Any] | None = None, /, repeat: int = 3, **named: Any) -> Profile:
        """Run `repeat` times (after one warm-up run) and report each call's median kernel time."""
        self.run(inputs, **named)
        per_run: list[list[tuple[Selection, float]]] = []
        latencies = []
        for _ in range(max(1, repeat)):
            self._times = []
            start = time.perf_counter()
            try:
                self.run(inputs, **named)
            finally:
                per_run.append(self._times)
                self._times = None
            latencies.append((time.perf_counter() - start) * 1e6)
        rows = []
        for calls in zip(*per_run):
            selection = calls[0][0]
            rows.append(ProfileRow(selection.workload.op, selection.implementation.name, selection.reason,
                                   selection.workload.key, statistics.median(t for _, t in calls)))
        return Profile(tuple(rows), statistics.median(latencies))


def build(mod: IRModule | Expr, target: Target | str = "cpu", params: Mapping[str, Any] | None = None) -> Executable:
    """Build `mod` (or a function / expression) for `target`; `params` become constants.

    Constant-only subgraphs are folded, the program is type-checked, and every call gets its
    implementation (tuning history of the enclosing `apply_history_best`, else highest plevel).
    Raises `NoImplementationError` naming the op and target when some call cannot run there,
    and `TargetError` when the target's device is not present.
    """
    target = as_target(target)
    require_device(target)
    return Executable(prepare_program(mod, params), target, current_history())


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
