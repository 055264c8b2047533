"""`tune`: measure the implementations and knob configurations of every workload of a program.

For each distinct workload with static shapes, every implementation whose condition holds is
measured with its default configuration first (highest plevel first), then the other
configurations in turn, up to `trials` measurements per workload. Each is timed as the executor
runs it: inputs that are constants in the program (weights) are prepared once, outside the
timing (`strategies.kernels.prepared`). Each measurement checks its output against the first
candidate's (the one selection would pick untuned) and appends one JSON-lines record to the log
(`strategies.records`), so an interrupted run keeps what it measured; with a tuning database
(`strategies.tuning_db`) instead, workloads it already holds for this kind of device are skipped.

On a target with the `ort` key the kernels are ONNX Runtime's: each workload is timed as ONNX
Runtime runs it (`strategies.ort_timing`), one record per workload, all workloads interleaved
across `repeat` rounds; `trials` does not apply (ONNX Runtime offers no knobs to try).
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from functools import partial
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ir.expr import Call, Constant, Expr
from ir.module import IRModule
from ir.op.registry import Op
from ir.visitor import post_order

from .devices import require_device, to_host, to_torch
from .executor import prepare_program
from .kernels.prepared import NO_DONATION, PreparedCompute
from .ort_timing import time_workloads
from .records import ErrorCode, TuningRecord, append_records
from .select import candidate_implementations, config_space
from .strategy import OpImplementation
from .target import Target, as_target
from .values import random_value
from .tuning_db import TuningDatabase, measure_once, this_device
from .workload import Workload

__all__ = ["tune", "tune_workloads", "measure_workloads", "program_workloads", "workload_constants", "program_weight_bytes",
           "random_value"]

logger = logging.getLogger("strategies")


def program_workloads(mod: IRModule | Expr, params: Mapping[str, Any] | None = None) -> list[Workload]:
    """The distinct workloads of a program's calls (after binding params and folding constants), in order."""
    return [workload for workload, _ in workload_constants(mod, params)]


def workload_constants(mod: IRModule | Expr,
                       params: Mapping[str, Any] | None = None) -> list[tuple[Workload, frozenset[int]]]:
    """Each distinct workload, in order, with the input positions that are constants at its first call."""
    seen: dict[str, tuple[Workload, frozenset[int]]] = {}
    for node in post_order(prepare_program(mod, params)):
        if isinstance(node, Call) and isinstance(node.op, Op):
            workload = Workload.of_call(node)
            constant = frozenset(i for i, arg in enumerate(node.args) if isinstance(arg, Constant))
            seen.setdefault(workload.key, (workload, constant))
    return list(seen.values())


def program_weight_bytes(mod: IRModule | Expr, params: Mapping[str, Any] | None = None) -> int:
    """The bytes of a program's constants (weights), after binding params and folding constants."""
    return sum(np.asarray(node.data).nbytes for node in post_order(prepare_program(mod, params))
               if isinstance(node, Constant))


def _trial_plan(workload: Workload, candidates: list[OpImplementation], target: Target,
                trials: int) -> list[tuple[OpImplementation, dict]]:
    """Default configurations first (highest plevel first), then the others round-robin."""
    def stream(impl: OpImplementation) -> Iterator[tuple[OpImplementation, dict]]:
        return ((impl, config) for config in config_space(impl, workload, target).configs())

    streams = [stream(impl) for impl in sorted(candidates, key=lambda impl: -impl.plevel)]
    plan = []
    for batch in itertools.zip_longest(*streams):
        plan.extend(entry for entry in batch if entry is not None)
    return plan[:trials]


def _matches(out: Any, expected: Any) -> bool:
    if isinstance(expected, tuple):
        return isinstance(out, tuple) and len(out) == len(expected) and all(map(_matches, out, expected))
    out = np.asarray(out)
    if out.shape != expected.shape or out.dtype != expected.dtype:
        return False
    if expected.dtype.kind != "f":
        return bool(np.array_equal(out, expected))
    finite = np.abs(expected[np.isfinite(expected)])
    scale = max(1.0, float(finite.max()) if finite.size else 1.0)
    return bool(np.allclose(out, expected, rtol=1e-3, atol=1e-4 * scale, equal_nan=True))


def _measure(impl: OpImplementation, workload: Workload, inputs: list, config: dict, target: Target,
             repeat: int, constant: frozenset[int]) -> tuple[list[float], Any]:
    """Time `impl` as the executor runs it: inputs that are constants in the program prepared once."""
    args = [to_torch(v, target.device) for v in inputs] if impl.device == "torch" else inputs
    sync = target.device == "cuda"
    if sync:
        import torch
    if isinstance(impl.compute, PreparedCompute) and impl.device == "host":
        kernel = impl.compute.prepare(workload.attrs, [v if i in constant else None for i, v in enumerate(args)],
                                      workload.out_type, config)
        run = partial(kernel, args, NO_DONATION)
    else:
        run = partial(impl.compute, workload.attrs, args, workload.out_type, config)
    out = run()  # warm-up, and the checked output
    costs = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        if sync:
            torch.cuda.synchronize()
        costs.append((time.perf_counter() - start) * 1e6)
    return costs, to_host(out)


def _tune_workload(workload: Workload, target: Target, trials: int, repeat: int, rng: np.random.Generator,
                   constant: frozenset[int]) -> list[TuningRecord]:
    _, candidates, _ = candidate_implementations(workload, target)
    inputs = [random_value(t, rng) for t in workload.in_types]
    expected = None
    records = []
    for impl, config in _trial_plan(workload, candidates, target, trials):
        costs: list[float] = []
        error, message = ErrorCode.NO_ERROR, ""
        try:
            with np.errstate(all="ignore"):
                costs, out = _measure(impl, workload, inputs, config, target, repeat, constant)
            if expected is None:
                expected = out
            elif not _matches(out, expected):
                error, message, costs = ErrorCode.WRONG_RESULT, "output differs from the first candidate's", []
        except Exception as err:  # a failing candidate is a measurement result, not a crash
            error, message = ErrorCode.RUNTIME_ERROR, f"{type(err).__name__}: {err}"
        records.append(TuningRecord(target.kind, workload.key, workload.op, impl.name, config, tuple(costs),
                                    int(error), message, time.time()))
    return records


def tune(mod: IRModule | Expr, target: Target | str = "cpu", log: "str | os.PathLike | TuningDatabase" = "tuning.jsonl",
         trials: int = 16, params: Mapping[str, Any] | None = None, repeat: int = 3,
         seed: int = 0, threads: int | None = None) -> list[TuningRecord]:
    """Measure every static workload of `mod` on `target`, adding one record per measurement to `log`
    (a JSON-lines file, or a `TuningDatabase`, which skips workloads it holds: see `tune_workloads`).

    `trials` caps the measurements per workload; each measurement times `repeat` runs (after a
    warm-up) and records them in microseconds. Workloads with symbolic shapes are skipped (their
    shapes are known only at run time). On an `ort` target each workload is one ONNX Runtime
    measurement of `repeat` rounds with `threads` intra-op threads (default: the CPUs this process
    may use). Returns the records written.
    """
    weights = program_weight_bytes(mod, params) if "ort" in as_target(target).keys else 0
    return tune_workloads(workload_constants(mod, params), target, log, trials, repeat, seed, threads, weights)


def tune_workloads(items: Sequence[tuple[Workload, frozenset[int]]], target: Target | str = "cpu",
                   log: "str | os.PathLike | TuningDatabase" = "tuning.jsonl", trials: int = 16, repeat: int = 3,
                   seed: int = 0, threads: int | None = None, weight_bytes: int = 0) -> list[TuningRecord]:
    """`tune` for given workloads, each paired with the input positions that are constants (weights)
    where it is called (see `workload_constants`); each distinct static workload is measured once.

    `log` is a JSON-lines file the records are appended to, or a `TuningDatabase`: then a workload
    it already holds for this kind of device (`this_device(threads)`) is not measured again, nor one
    another process is measuring (its records are waited for; see `strategies.tuning_db`).
    `weight_bytes` is the size of the program's weights (`program_weight_bytes`): on an `ort`
    target each call's weights are timed as cold as in a program of that size (see
    `strategies.ort_timing`)."""
    target = as_target(target)
    require_device(target)
    for name, value in (("trials", trials), ("repeat", repeat)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    distinct: dict[str, tuple[Workload, frozenset[int]]] = {}
    for workload, constant in items:
        if not workload.static:
            logger.info("tune: %s has symbolic shapes; skipped", workload.describe())
            continue
        distinct.setdefault(workload.key, (workload, constant))
    measure = partial(measure_workloads, target=target, trials=trials, repeat=repeat, seed=seed, threads=threads,
                      weight_bytes=weight_bytes)
    if isinstance(log, TuningDatabase):
        return measure_once(log, list(distinct.values()), target.kind, this_device(threads).key, measure)
    written: list[TuningRecord] = []
    for records in measure(list(distinct.values())):
        append_records(log, records)
        written.extend(records)
    return written


def measure_workloads(items: Sequence[tuple[Workload, frozenset[int]]], target: Target | str, trials: int = 16,
                      repeat: int = 3, seed: int = 0, threads: int | None = None,
                      weight_bytes: int = 0) -> Iterator[list[TuningRecord]]:
    """Measure distinct static workloads (as `tune_workloads` does, writing nothing), yielding each
    workload's records as soon as it is measured; on an `ort` target all are timed together, in the
    same rounds, and yielded at once."""
    target = as_target(target)
    if "ort" in target.keys:
        records = time_workloads(items, target.kind, rounds=repeat, threads=threads, seed=seed,
                                 weight_bytes=weight_bytes)
        for record, (workload, _) in zip(records, items):
            logger.info("tune: %s: %s", workload.describe(),
                        f"{record.latency_us:.1f} us in ONNX Runtime" if record.ok else record.error_msg)
        yield records
        return
    rng = np.random.default_rng(seed)
    for workload, constant in items:
        records = _tune_workload(workload, target, trials, repeat, rng, constant)
        best = min((r for r in records if r.ok), key=lambda r: r.latency_us, default=None)
        logger.info("tune: %s: %d trial(s), best %s", workload.describe(), len(records),
                    f"{best.implementation} {best.latency_us:.1f} us" if best else "none succeeded")
        yield records
