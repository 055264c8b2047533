"""Straight-line programs: a function body without control flow, run as a flat list of steps.

A body whose nodes are only variables, constants, op calls, tuples and tuple fields (no `If`,
`Let`, nested function or closure call) is planned once, when the program is built:

- every node gets a slot; constants fill theirs once, parameters at each run;
- each op call, tuple and tuple field becomes a step that reads its argument slots, frees the
  slots it reads for the last time (so memory is released as soon as possible) and fills its own;
- **buffer donation**: when an op call reads a value for the last time and its kernel accepts
  donations (`strategies.kernels.prepared`), the kernel may write its output into that value's
  array instead of a new one (e.g. a ReLU in place on the convolution output it follows).

Donation is decided in two steps. When planning: the call's kernel must use donations, and the
argument must be an intermediate value read for the last time by this call, only once, and
*trusted*: computed by trusted kernels only (kernels that never return a buffer they keep,
`Runner.trusted`) from parameters, constants and trusted values, through tuples and tuple fields
too. When running: the memory of the array (the array at the end of its `.base` chain) must not
be a constant's or an input's, nor be shared with another argument of the call or with any value
still alive after it; memory numpy does not own (e.g. a torch tensor's) is never donated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Protocol

import numpy as np

from ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from ir.op.registry import Op
from ir.visitor import children, post_order

from .errors import KernelError
from .kernels.prepared import NO_DONATION
from .kernels.reference import value_type

__all__ = ["Runner", "StraightLineProgram", "is_straight_line"]


class Runner(Protocol):
    """What runs one op call: `run(args, donated)`, and what the plan may assume about it."""

    trusted: bool          # its outputs are new arrays, views of its inputs or donated inputs
    uses_donations: bool   # it may write its output into donated inputs (implies `trusted`)

    def run(self, args: list, donated: Collection[int]) -> Any: ...


def _straight_line_nodes(body: Expr) -> list[Expr] | None:
    """The nodes of `body` in evaluation order (operands first), or None when it is not straight-line."""
    order = list(post_order(body))
    if all(isinstance(n, (Var, Constant, Tuple, TupleGetItem)) or (isinstance(n, Call) and isinstance(n.op, Op))
           for n in order):
        return order
    return None


def is_straight_line(func: Function) -> bool:
    """True when `func`'s body has only variables, constants, op calls, tuples and tuple fields."""
    return _straight_line_nodes(func.body) is not None


def _tuple_field(index: int) -> Callable[[list, Collection[int]], Any]:
    def field(args: list, donated: Collection[int]) -> Any:
        value = args[0]
        if not isinstance(value, tuple) or not 0 <= index < len(value):
            raise KernelError(f"TupleGetItem [{index}] of a value of type {value_type(value)}")
        return value[index]
    return field


def _make_tuple(args: list, donated: Collection[int]) -> tuple:
    return tuple(args)


_UNKNOWN = -1  # the owner of memory numpy does not own: never donated, and blocks donations it may alias


def _owners(value: Any, into: set[int]) -> None:
    """Add the id of the array owning each array's memory in `value` (recursively for tuples)."""
    if isinstance(value, tuple):
        for field in value:
            _owners(field, into)
        return
    if not isinstance(value, np.ndarray):
        into.add(_UNKNOWN)
        return
    while isinstance(value.base, np.ndarray):
        value = value.base
    into.add(id(value) if value.base is None else _UNKNOWN)


@dataclass(frozen=True)
class _Step:
    run: Callable[[list, Collection[int]], Any]
    args: tuple[int, ...]            # the slot of each argument
    out: int                         # the slot of the value
    frees: tuple[int, ...]           # slots read for the last time here
    #: (position of an argument that may be donated, the intermediate slots that must not share its
    #: memory: the call's other arguments and the values alive after this step)
    candidates: tuple[tuple[int, tuple[int, ...]], ...]
    runner: Runner | None            # set for op calls (profiling reads its selection)


class StraightLineProgram:
    """A straight-line function body planned into steps over slots, with buffer donation.

    `runners` maps `id(call)` to the runner of each op call in the body.
    """

    def __init__(self, func: Function, runners: Mapping[int, Runner]):
        nodes = _straight_line_nodes(func.body)
        if nodes is None:
            raise ValueError("the function body has control flow or closures; it is not straight-line")
        slot = {id(node): i for i, node in enumerate(nodes)}
        self._template: list[Any] = [None] * len(nodes)
        self._params: list[tuple[int, int]] = []
        constant_owners: set[int] = set()
        for node in nodes:
            if isinstance(node, Constant):
                value = self._template[slot[id(node)]] = np.asarray(node.data)
                _owners(value, constant_owners)
            elif isinstance(node, Var):
                self._params.append((slot[id(node)], id(node)))
        self._constant_owners = frozenset(constant_owners)
        self._fixed = frozenset(slot[id(node)] for node in nodes if isinstance(node, (Var, Constant)))
        self._out = slot[id(func.body)]
        self.steps = self._plan(nodes, slot, runners)

    def _plan(self, nodes: list[Expr], slot: dict[int, int], runners: Mapping[int, Runner]) -> tuple[_Step, ...]:
        computed = [node for node in nodes if isinstance(node, (Call, Tuple, TupleGetItem))]
        last_use: dict[int, int] = {self._out: len(computed)}  # the output outlives every step
        for index, node in enumerate(computed):
            for child in children(node):
                if slot[id(child)] != self._out:
                    last_use[slot[id(child)]] = index
        # trusted: parameters, constants, and values only trusted kernels computed from trusted values
        trusted = set(self._fixed)
        alive: set[int] = set()  # intermediate slots still to be read
        steps = []
        for index, node in enumerate(computed):
            args = tuple(slot[id(child)] for child in children(node))
            out = slot[id(node)]
            frees = tuple(sorted({a for a in args if last_use.get(a) == index}))
            alive.difference_update(frees)
            runner = runners[id(node)] if isinstance(node, Call) else None
            if runner is not None:
                run = runner.run
            else:
                run = _make_tuple if isinstance(node, Tuple) else _tuple_field(node.index)
            if (runner is None or runner.trusted) and all(a in trusted for a in args):
                trusted.add(out)
            candidates = ()
            if runner is not None and runner.uses_donations:
                positions = [k for k, a in enumerate(args) if a in trusted and a not in self._fixed
                             and last_use.get(a) == index and args.count(a) == 1]
                # parameters and constants are external memory, which a donation never is: no need to check them
                candidates = tuple((k, tuple(a for j, a in enumerate(args) if j != k and a not in self._fixed)
                                    + tuple(sorted(alive))) for k in positions)
            alive.add(out)
            steps.append(_Step(run, args, out, frees, candidates, runner))
        return tuple(steps)

    def run(self, bound: Mapping[int, Any], times: list[tuple[Runner, float]] | None = None,
            clock: Callable[[], float] | None = None) -> Any:
        """The body's value for parameter values `bound` (keyed by `id(var)`, as `bind_inputs` gives).

        With `times`, each op call appends `(its runner, seconds)` measured with `clock`.
        """
        slots = list(self._template)
        owners: list[frozenset[int] | None] = [None] * len(slots)  # memory owners of each value, when asked
        external = set(self._constant_owners)
        for index, var_id in self._params:
            slots[index] = bound[var_id]
            _owners(slots[index], external)
        for step in self.steps:
            args = [slots[s] for s in step.args]
            donated = self._donations(step, slots, owners, external) if step.candidates else NO_DONATION
            for s in step.frees:
                slots[s] = None
            if times is not None and step.runner is not None:
                start = clock()
                slots[step.out] = step.run(args, donated)
                times.append((step.runner, clock() - start))
            else:
                slots[step.out] = step.run(args, donated)
        return slots[self._out]

    @staticmethod
    def _donations(step: _Step, slots: list, owners: list[frozenset[int] | None],
                   external: set[int]) -> tuple[int, ...]:
        def owners_of(s: int) -> frozenset[int]:
            found = owners[s]
            if found is None:
                collected: set[int] = set()
                _owners(slots[s], collected)
                found = owners[s] = frozenset(collected)
            return found

        donated = []
        for position, others in step.candidates:
            mine = owners_of(step.args[position])
            if len(mine) != 1 or _UNKNOWN in mine or not mine.isdisjoint(external):
                continue
            if all(mine.isdisjoint(theirs) and _UNKNOWN not in theirs for theirs in map(owners_of, others)):
                donated.append(position)
        return tuple(donated)
