"""Timing workloads as ONNX Runtime runs them: the measurements behind the `ort` target's costs.

Each workload becomes a one-call program: inputs that are constants in the program (weights) are
constant initializers, the others graph inputs. It is exported with ONNX Runtime's contrib forms
(`ir.frontend.to_onnx(contrib=True)`), so a fused call is timed as the contrib node or the small
standard subgraph the exporter emits for it, and run in an `InferenceSession` on the CPU with the
ort target's graph optimization level (`GRAPH_OPTIMIZATION`: the ort target's programs run with
ONNX Runtime's optimizer off) and a fixed intra-op thread count.

Weights are as cold as in the program: a program holding `weight_bytes` of weights reads each
call's weights from wherever that many bytes live (L2, L3 or main memory), which decides the
latency of a call that streams its weights (a matrix-vector product). So a workload with weights
is timed as `copies` calls on the same data inputs, each with its own weights, adding up to about
`weight_bytes` (at most `COLD_BYTES`, and `MAX_COPIES` calls); only the last call's outputs are
graph outputs, and each sample is divided by `copies`. Sessions holding more than `RESIDENT_BYTES`
of weights and outputs in all are timed in groups, one after another.

Timing: every session is warmed up, then each of `rounds` rounds runs every workload (of its
group) once (a batch of runs at least `MIN_BATCH_US` long, averaged), so a change of load on the
machine hits all workloads alike. With one intra-op thread ONNX Runtime computes on the calling thread, so the
clock is that thread's CPU time (`timing_clock`): the latency on an idle machine, which foreign
load on a shared one barely moves; with more threads it is wall-clock time. The fixed cost of a
session run (a one-element `Identity`, timed in the same rounds, less the cost of one node in a
graph: the slope of a chain of them) is subtracted from each sample, so a workload keeps the
dispatch cost of its nodes, as it has in a whole model. One record per workload holds the
samples; its median is the workload's latency. The record names the implementation
`ORT_IMPLEMENTATION`, and its config says how it was measured (thread count, optimization level,
clock, ONNX Runtime version, the overhead subtracted, copies).
"""

from __future__ import annotations

import logging
import math
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ir.expr import Call, Constant, Expr, Function, Tuple, Var
from ir.op.registry import get_op
from ir.types import TensorType, TupleType, Type

from .records import ORT_IMPLEMENTATION, ErrorCode, TuningRecord
from .values import random_value
from .work import nbytes
from .workload import Workload

__all__ = ["ORT_IMPLEMENTATION", "GRAPH_OPTIMIZATION", "MIN_BATCH_US", "MAX_COPIES", "COLD_BYTES", "RESIDENT_BYTES",
           "ort_session", "copies_for", "default_threads", "nchwc_block_size",
           "workload_program", "bound_run", "timing_clock", "time_workloads"]

logger = logging.getLogger("strategies")

#: ONNX Runtime's graph optimization level for the ort target's programs: "disabled", "basic", "extended", "all"
GRAPH_OPTIMIZATION = "disabled"
#: a timed batch of runs lasts at least this long (microseconds), so fast workloads are not timer noise
MIN_BATCH_US = 500.0
_MAX_BATCH = 1000
_WARMUP_RUNS = 3
_CHAIN = 33  # nodes of the chain whose slope is the cost of one node in a graph
#: calls of a workload with weights timed together, at most (see the module docstring)
MAX_COPIES = 64
#: weights beyond every cache: a program holding more reads each call's weights from main memory
COLD_BYTES = 64 << 20
#: sessions under timing at once hold at most this many bytes of weights and outputs: more are timed in groups
RESIDENT_BYTES = 256 << 20


def default_threads() -> int:
    """The CPUs this process may run on: the intra-op thread count when none is given."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def nchwc_block_size() -> int | None:
    """The channel block of ONNX Runtime's NCHWc kernels on this machine; None without onnx or onnxruntime."""
    try:
        from ir.frontend.ort_nchwc import ort_nchwc_block_size  # ir.frontend needs onnx, an optional extra
    except ImportError:
        return None
    return ort_nchwc_block_size()


def timing_clock(threads: int) -> tuple[str, Callable[[], float]]:
    """The clock that times ONNX Runtime with `threads` intra-op threads, and its name: the calling
    thread's CPU time for one thread (all work runs on it), else wall-clock time."""
    return ("thread_cpu", time.thread_time) if threads == 1 else ("wall", time.perf_counter)


def ort_session(model: Any, threads: int, optimization: str = GRAPH_OPTIMIZATION,
                external: Mapping[str, np.ndarray] | None = None, prepack: bool = True) -> Any:
    """A CPU `InferenceSession` of an ONNX model (a `ModelProto` or its bytes) with `threads` intra-op
    threads (0: ONNX Runtime's default) at an optimization level; `external` holds the arrays of the
    initializers the model writes as held in memory (`ir.frontend.to_onnx(external=...)`), which
    the session copies when it is made (no copy into the model and out again; a run fed an array
    reads it in place, see `eqsat.soundness.verify`). Not `prepack`: weights are not repacked for
    the kernels when the session is made (half the making of a large model's session, for slightly
    slower runs: for a session that runs a few times).

    Idle worker threads sleep instead of spinning, so sessions left open do not hold the cores.
    """
    import onnxruntime as ort
    levels = {"disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
              "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
              "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
              "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}
    if optimization not in levels:
        raise ValueError(f"unknown graph optimization level {optimization!r}; choose from {sorted(levels)}")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = levels[optimization]
    options.add_session_config_entry("session.disable_prepacking", "0" if prepack else "1")
    held = {name: ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(value))
            for name, value in (external or {}).items()}
    if external:
        options.add_external_initializers(list(held), list(held.values()))
    data = model if isinstance(model, bytes) else model.SerializeToString()
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    session.held_initializers = held  # ONNX Runtime reads their buffers for the session's lifetime
    return session


def quiet_runner(session: Any) -> Callable[..., list]:
    """`run(inputs, overrides=None)`: `session.run` on the inputs of a feed the session takes (and on
    `overrides`: values of other inputs, or of initializers the model also lists as graph inputs),
    with ONNX Runtime's own logging of a failed run off: the caller decides what a failure means (an
    input set passed over, say)."""
    import onnxruntime as ort
    names = [i.name for i in session.get_inputs()]
    quiet = ort.RunOptions()
    quiet.log_severity_level = 4

    def run(inputs: Mapping[str, np.ndarray], overrides: Mapping[str, np.ndarray] | None = None) -> list:
        overrides = overrides or {}
        return session.run(None, {**{n: inputs[n] for n in names if n not in overrides}, **overrides}, quiet)
    return run


def _weight_bytes(workload: Workload, constant: frozenset[int]) -> int:
    return sum(nbytes(workload.in_types[i]) for i in constant)


def copies_for(workload: Workload, constant: frozenset[int], weight_bytes: int) -> int:
    """How many calls of `workload`, each with its own weights, add up to about `weight_bytes` of weights
    (`COLD_BYTES` at most: that much is out of every cache)."""
    own = _weight_bytes(workload, constant)
    return max(1, min(MAX_COPIES, round(min(weight_bytes, COLD_BYTES) / own))) if own else 1


def _groups(held: Sequence[int]) -> list[list[int]]:
    """Consecutive indices whose sessions hold at most `RESIDENT_BYTES` together, or a single index;
    one empty group for no indices (the session overhead is still timed)."""
    groups: list[list[int]] = [[]]
    total = 0
    for i, size in enumerate(held):
        if groups[-1] and total + size > RESIDENT_BYTES:
            groups.append([])
            total = 0
        groups[-1].append(i)
        total += size
    return groups


def workload_program(workload: Workload, constant: frozenset[int], rng: np.random.Generator,
                     copies: int = 1) -> tuple[Function, dict[str, np.ndarray]]:
    """A function of `copies` calls of `workload` (a tuple of them when more than one) and random
    values for its parameters.

    Inputs at the positions in `constant` are random constants, distinct per call; the others are
    parameters every call shares. A tuple-typed input is a tuple of parameters (or constants).
    """
    params: list[Var] = []
    feeds: dict[str, np.ndarray] = {}

    def leaf(name: str, ty: Type) -> Expr:
        if isinstance(ty, TupleType):
            return Tuple([leaf(f"{name}_{i}", f) for i, f in enumerate(ty.fields)])
        assert isinstance(ty, TensorType)
        params.append(Var(name, ty))
        feeds[name] = random_value(ty, rng)
        return params[-1]

    def weight(ty: Type) -> Expr:
        if isinstance(ty, TupleType):
            return Tuple([weight(f) for f in ty.fields])
        return Constant(random_value(ty, rng))

    shared = {i: leaf(f"in{i}", ty) for i, ty in enumerate(workload.in_types) if i not in constant}
    calls = [Call(get_op(workload.op), [weight(ty) if i in constant else shared[i]
                                        for i, ty in enumerate(workload.in_types)], workload.attrs)
             for _ in range(copies)]
    return Function(params, calls[0] if copies == 1 else Tuple(calls)), feeds


def _export(workload: Workload, constant: frozenset[int], rng: np.random.Generator,
            copies: int) -> tuple[Any, dict[str, np.ndarray]]:
    """The ONNX model of `workload_program` whose graph outputs are the last call's alone."""
    from ir.frontend import to_onnx
    func, feeds = workload_program(workload, constant, rng, copies)
    model = to_onnx(func, contrib=True)
    del model.graph.output[:len(model.graph.output) - len(model.graph.output) // copies]
    return model, feeds


@dataclass
class _Timed:
    """One session under timing: a run of it, how many runs a batch makes, the per-run samples."""

    run: Callable[[], Any]
    clock: Callable[[], float]
    batch: int = 1
    samples: list[float] = field(default_factory=list)

    def calibrate(self) -> None:
        for _ in range(_WARMUP_RUNS):
            self.run()
        start = time.perf_counter()
        self.run()
        once_us = (time.perf_counter() - start) * 1e6
        self.batch = max(1, min(_MAX_BATCH, math.ceil(MIN_BATCH_US / max(once_us, 1e-3))))

    def sample(self) -> None:
        start = self.clock()
        for _ in range(self.batch):
            self.run()
        self.samples.append((self.clock() - start) * 1e6 / self.batch)


def bound_run(session: Any, feeds: dict[str, np.ndarray]) -> Callable[[], Any]:
    """A run of `session` on `feeds` bound once: no per-run conversion of inputs."""
    binding = session.io_binding()
    for name, value in feeds.items():
        binding.bind_cpu_input(name, np.ascontiguousarray(value))
    for out in session.get_outputs():
        binding.bind_output(out.name)
    return lambda: session.run_with_iobinding(binding)


def _identity_chain(nodes: int, threads: int, optimization: str, clock: Callable[[], float]) -> _Timed:
    """A chain of `nodes` one-element `Identity` nodes: what running a session and its nodes costs."""
    from onnx import TensorProto, helper
    names = ["x"] + [f"t{i}" for i in range(1, nodes + 1)]
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in (names[0], names[-1])]
    graph = helper.make_graph([helper.make_node("Identity", [a], [b]) for a, b in zip(names, names[1:])],
                              "overhead", info[:1], info[1:])
    opsets = [helper.make_opsetid("", 17)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets))
    return _Timed(bound_run(ort_session(model, threads, optimization), {"x": np.zeros(1, "float32")}), clock)


def time_workloads(items: Sequence[tuple[Workload, frozenset[int]]], target: str = "ort", rounds: int = 5,
                   threads: int | None = None, optimization: str = GRAPH_OPTIMIZATION, seed: int = 0,
                   weight_bytes: int = 0) -> list[TuningRecord]:
    """One record per workload with its latencies in ONNX Runtime, in the order given.

    `items` pairs each workload (static shapes) with the input positions that are constants in the
    program; `weight_bytes` is how many bytes of weights the program holds (see the module
    docstring). A workload that cannot be exported or run gets a failed record saying why.
    """
    import onnxruntime as ort

    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    threads = default_threads() if threads is None else threads
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    clock_name, clock = timing_clock(threads)
    rng = np.random.default_rng(seed)
    samples: dict[int, list[float]] = {}
    failed: dict[int, str] = {}
    copies = [copies_for(workload, constant, weight_bytes) for workload, constant in items]
    one, chain = (_identity_chain(n, threads, optimization, clock) for n in (1, _CHAIN))
    for entry in (one, chain):
        entry.calibrate()
    held = [copies[i] * (_weight_bytes(w, c) + nbytes(w.out_type)) for i, (w, c) in enumerate(items)]
    for group in _groups(held):
        timed: dict[int, _Timed] = {}
        for i in group:
            workload, constant = items[i]
            try:
                model, feeds = _export(workload, constant, rng, copies[i])
                timed[i] = _Timed(bound_run(ort_session(model, threads, optimization), feeds), clock)
                timed[i].calibrate()
            except Exception as err:  # a workload ONNX Runtime cannot run is a measurement result, not a crash
                timed.pop(i, None)
                failed[i] = f"{type(err).__name__}: {err}"
                logger.info("tune: %s failed in ONNX Runtime: %s", workload.describe(), failed[i])
        for _ in range(rounds):
            for entry in (one, chain, *timed.values()):
                entry.sample()
        samples.update((i, entry.samples) for i, entry in timed.items())
    one_us, chain_us = statistics.median(one.samples), statistics.median(chain.samples)
    overhead_us = max(0.0, one_us - max(0.0, chain_us - one_us) / (_CHAIN - 1))
    config = {"graph_optimization": optimization, "intra_op_threads": threads, "clock": clock_name,
              "onnxruntime": ort.__version__, "session_overhead_us": round(overhead_us, 3)}
    now = time.time()
    records = []
    for i, (workload, _) in enumerate(items):
        if i in samples:
            costs = tuple(max(0.0, s - overhead_us) / copies[i] for s in samples[i])
            error, message = ErrorCode.NO_ERROR, ""
        else:
            costs, error, message = (), ErrorCode.RUNTIME_ERROR, failed[i]
        records.append(TuningRecord(target, workload.key, workload.op, ORT_IMPLEMENTATION,
                                    {**config, "copies": copies[i]}, costs, int(error), message, now))
    return records
