"""`CostModel`: what a call, an expression or a whole program costs on a target, in microseconds.

A call costs its tuned latency when the tuning log has its workload (the best measured
implementation among those the target offers), else the roofline estimate (`strategies.roofline`)
of the implementation selection would pick: the highest plevel whose condition holds. A call that
no implementation on the target can run costs `math.inf`: legality is a hard constraint, not a
price. Constant-only subgraphs cost nothing (they are folded before running). Costs are
deterministic: the same program, target and log give the same number in any process.

On a target with the `ort` key the kernels are ONNX Runtime's: a call costs the fastest ONNX
Runtime measurement the log has for its workload (records of `ORT_IMPLEMENTATION`, written by
`tune(mod, "ort")`), else the estimate above. `coverage(program)` says how many of a program's
workloads, and what share of its cost, were estimated rather than measured.

    cost = CostModel("cuda")
    cost.node_cost("nn.conv2d", {"padding": (1, 1)}, [TensorType((1, 64, 56, 56)), TensorType((64, 64, 3, 3))],
                   TensorType((1, 64, 56, 56)))
    cost.program_cost(mod)
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ir.expr import Call, Expr
from ir.module import IRModule
from ir.op.registry import Op, get_op
from ir.type_infer import infer_type
from ir.types import TensorType, TupleType, Type, dim_value
from ir.visitor import post_order

from .constants import constant_subgraph
from .dtype_legality import dtype_problem
from .errors import NoImplementationError
from ir.module import entry_function
from .ort_timing import ORT_IMPLEMENTATION
from .records import TuningHistory, TuningRecord
from .select import candidate_implementations, highest_plevel, select_implementation
from .strategy import OpImplementation
from .target import Target, as_target
from .work import ASSUMED_DIM, op_work
from .workload import Workload, as_attrs

__all__ = ["CostModel", "Coverage"]


@dataclass(frozen=True)
class Coverage:
    """Where a program's cost came from: its distinct workloads measured (tuned) or estimated."""

    measured: int          # distinct workloads whose cost the log has
    estimated: int         # distinct workloads costed by the roofline estimate
    measured_us: float     # the program's cost in measured calls (shared nodes once)
    estimated_us: float    # the program's cost in estimated calls

    @property
    def estimated_share(self) -> float:
        """The estimated part of the program's cost, between 0 and 1 (0 for a program that costs nothing)."""
        total = self.measured_us + self.estimated_us
        return self.estimated_us / total if total else 0.0

    def summary(self) -> str:
        """E.g. "3 of 12 workloads estimated, not measured (8.5% of 1234 µs)"."""
        total = self.measured_us + self.estimated_us
        return (f"{self.estimated} of {self.measured + self.estimated} workloads estimated, not measured "
                f"({100 * self.estimated_share:.1f}% of {total:.4g} µs)")


class CostModel:
    """Per-call latency on `target` in microseconds: tuned when `log` has it, else a roofline estimate.

    `assumed_dim` is the size a symbolic dimension counts as in estimates. On an `ort` target,
    `measured` maps workload keys to the fastest ONNX Runtime latency the log has. `logged` says
    whether a log was given (so a summary of its `coverage` is worth printing).
    """

    def __init__(self, target: Target | str, log: "str | os.PathLike | Iterable[TuningRecord] | None" = None,
                 assumed_dim: int = ASSUMED_DIM):
        self.target = as_target(target)
        history = TuningHistory.load(log) if log is not None else TuningHistory([])
        self.measured: dict[str, float] = {}
        if "ort" in self.target.keys:
            for record in history.records:
                if record.implementation == ORT_IMPLEMENTATION and record.target == self.target.kind and record.ok:
                    known = self.measured.get(record.workload, math.inf)
                    self.measured[record.workload] = min(known, record.latency_us)
            history = TuningHistory([r for r in history.records if r.implementation != ORT_IMPLEMENTATION],
                                    history.source)
        self.history = history
        self.logged = log is not None
        self.assumed_dim = assumed_dim
        self._memo: dict[tuple, tuple[float, bool]] = {}

    def node_cost(self, op_name: str, attrs: Mapping[str, Any] | None, in_types: Sequence[Type],
                  out_type: Type) -> float:
        """The cost in µs of one call of `op_name`; `math.inf` when the target cannot run it.

        `attrs` may name any subset of the op's attributes (the rest take their defaults).
        """
        return self._cost_of(op_name, attrs, in_types, out_type)[0]

    def _cost_of(self, op_name: str, attrs: Mapping[str, Any] | None, in_types: Sequence[Type],
                 out_type: Type) -> tuple[float, bool]:
        """A call's cost and whether it was measured (rather than estimated)."""
        op = get_op(op_name)
        attrs = as_attrs(op, attrs)
        key = (op.name, attrs, tuple(in_types), out_type)
        cost = self._memo.get(key)
        if cost is None:
            cost = self._memo[key] = self._node_cost(Workload(op.name, attrs, tuple(in_types), out_type))
        return cost

    def _node_cost(self, workload: Workload) -> tuple[float, bool]:
        try:
            impl, tuned_us = self._selected(workload)
        except NoImplementationError:
            return math.inf, False
        measured_us = self.measured.get(workload.key) if workload.static else None
        if measured_us is not None:
            return measured_us, True
        if tuned_us is not None:
            return tuned_us, True
        in_types = [self._concrete(t) for t in workload.in_types]
        out_type = self._concrete(workload.out_type)
        work = (impl.estimate(workload.attrs, in_types, out_type) if impl.estimate
                else op_work(workload.op, workload.attrs, in_types, out_type))
        return self.target.roofline.time_us(work), False

    def _concrete(self, ty: Type) -> Type:
        """`ty` with every symbolic dimension replaced by `assumed_dim`."""
        if isinstance(ty, TupleType):
            return TupleType([self._concrete(f) for f in ty.fields])
        return TensorType([dim_value(d, self.assumed_dim) for d in ty.shape], ty.dtype)

    def _selected(self, workload: Workload) -> tuple[OpImplementation, float | None]:
        """The implementation selection would pick, and its tuned latency when the log has one."""
        problem = dtype_problem(workload.op, workload.in_types, workload.out_type, self.target)
        if problem is not None:  # legality per dtype: the target's kernels do not run this element type
            raise NoImplementationError(problem)
        if not workload.static:
            return highest_plevel(candidate_implementations(workload, self.target)[1]), None
        selection = select_implementation(workload, self.target, self.history)
        return selection.implementation, selection.measured_us if selection.reason == "tuned" else None

    def implementation(self, op_name: str, attrs: Mapping[str, Any] | None, in_types: Sequence[Type],
                       out_type: Type) -> str | None:
        """The name of the implementation a call's cost refers to; None when the target cannot run it."""
        op = get_op(op_name)
        try:
            return self._selected(Workload(op.name, as_attrs(op, attrs), tuple(in_types), out_type))[0].name
        except NoImplementationError:
            return None

    def is_legal(self, op_name: str, attrs: Mapping[str, Any] | None, in_types: Sequence[Type],
                 out_type: Type) -> bool:
        """True when some implementation on the target can run this call."""
        return self.implementation(op_name, attrs, in_types, out_type) is not None

    def cost(self, expr: Expr) -> float:
        """The cost of one node: a call of a registered op costs `node_cost`, anything else nothing.

        A call on constants only costs nothing; types are inferred when missing.
        """
        if not (isinstance(expr, Call) and isinstance(expr.op, Op)):
            return 0.0
        if id(expr) in constant_subgraph(expr):
            return 0.0
        if not expr.type_inferred:
            infer_type(expr)
        return self.node_cost(expr.op.name, expr.attrs, [a.checked_type for a in expr.args], expr.checked_type)

    def program_cost(self, program: IRModule | Expr) -> float:
        """The summed cost of every distinct call in a program (shared nodes once, constants free)."""
        return sum(self.breakdown(program).values())

    def breakdown(self, program: IRModule | Expr) -> dict[str, float]:
        """The program's cost per op type, in µs, highest first (ties by name)."""
        totals: dict[str, float] = {}
        for node, cost, _ in self.calls(program):
            totals[node.op.name] = totals.get(node.op.name, 0.0) + cost
        return dict(sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])))

    def coverage(self, program: IRModule | Expr) -> Coverage:
        """How many of the program's distinct workloads, and what share of its cost, were measured or estimated."""
        measured: dict[str, bool] = {}
        costs = [0.0, 0.0]
        for node, cost, was_measured in self.calls(program):
            measured[Workload.of_call(node).key] = was_measured
            costs[was_measured] += cost
        count = sum(measured.values())
        return Coverage(count, len(measured) - count, costs[True], costs[False])

    def calls(self, program: IRModule | Expr) -> Iterable[tuple[Call, float, bool]]:
        """Each call of the program that is not on constants only, its cost and whether it was measured."""
        func = entry_function(program)
        infer_type(func)
        constant = constant_subgraph(func)
        for node in post_order(func):
            if isinstance(node, Call) and isinstance(node.op, Op) and id(node) not in constant:
                yield (node, *self._cost_of(node.op.name, node.attrs, [a.checked_type for a in node.args],
                                            node.checked_type))
