"""Run IR programs on numpy values: the numerical ground truth for every other path.

`evaluate` runs `mod["main"]` (or a function, or an expression over its free variables) with the
reference kernels. The machinery under it, `Evaluator`, is shared with the executor, which plugs
in the implementations it selected instead of the reference kernels:

- it walks each body in a precomputed order without recursion, so a graph of thousands of nodes
  needs no deep Python stack (only calls of inner functions and `If` branches nest);
- an intermediate value is dropped as soon as its last user has run;
- `If` evaluates the condition, then only the branch it selects; `Let` binds its variable;
  a `Function` evaluates to a closure, and calling one (e.g. a partitioned composite) runs its body
  in a fresh frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ir.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from ir.module import IRModule, entry_function
from ir.op.registry import Op
from ir.types import AnyDim, SizeVar, TensorType, TupleType, Type
from ir.visitor import children, post_order

from .errors import InputError, KernelError
from .kernels.reference import run_reference, value_type

__all__ = ["evaluate", "Evaluator", "Closure", "entry_function", "bind_inputs", "OpRunner"]

#: runs one call of a registered op: (the call node, its argument values) -> its value
OpRunner = Callable[[Call, list], Any]


# -- inputs -------------------------------------------------------------------------------------

def _as_array(value: Any) -> Any:
    """An input as a numpy array; a Python tuple of arrays stays a tuple (a tuple-typed input)."""
    if isinstance(value, tuple) and value and all(isinstance(v, np.ndarray) for v in value):
        return tuple(_as_array(v) for v in value)
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    return np.asarray(value)


def _check_value(name: str, expected: Type | None, value: Any, sizes: dict[str, tuple[int, str]]) -> None:
    """Raise `InputError` unless `value` fits `expected`; symbolic dims bind to sizes on first use."""
    if expected is None:
        return
    given = value_type(value)
    mismatch = InputError(f"input {name!r}: expected {expected}, got {given}")
    if isinstance(expected, TupleType):
        if not isinstance(given, TupleType) or len(given.fields) != len(expected.fields):
            raise mismatch
        for i, (want, v) in enumerate(zip(expected.fields, value)):
            _check_value(f"{name}[{i}]", want, v, sizes)
        return
    if not isinstance(expected, TensorType) or not isinstance(given, TensorType):
        raise mismatch
    if given.dtype != expected.dtype or given.ndim != expected.ndim:
        raise mismatch
    for want, got in zip(expected.shape, given.shape):
        if isinstance(want, AnyDim):
            continue
        if isinstance(want, SizeVar):
            bound = sizes.setdefault(want.name, (got, name))
            if bound[0] != got:
                raise InputError(f"input {name!r}: dimension {want.name} is {got}, but input {bound[1]!r} "
                                 f"gave it {bound[0]} (expected {expected}, got {given})")
        elif want != got:
            raise mismatch


def bind_inputs(func: Function, inputs: Mapping[str, Any],
                params: Mapping[str, Any] | None = None) -> dict[int, Any]:
    """Match named values to the parameters of `func`, checking names, shapes and dtypes.

    Returns the values by parameter (keyed by `id(var)`). A missing, unexpected or ill-shaped value
    raises `InputError` naming it; so does a symbolic dimension given two different sizes.
    """
    params = dict(params or {})
    both = sorted(set(inputs) & set(params))
    if both:
        raise InputError(f"{both} given both as inputs and as params")
    given = {**params, **inputs}
    names = [p.name_hint for p in func.params]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"the program has several parameters named {repeated}; names must be unique to bind them")
    missing = [f"{p.name_hint!r} ({p.type_annotation})" for p in func.params if p.name_hint not in given]
    if missing:
        raise InputError(f"missing input(s): {', '.join(missing)}")
    unexpected = sorted(set(given) - set(names))
    if unexpected:
        raise InputError(f"unexpected input(s) {unexpected}; the program's inputs are {names}")
    values: dict[int, Any] = {}
    sizes: dict[str, tuple[int, str]] = {}
    for p in func.params:
        value = _as_array(given[p.name_hint])
        if isinstance(value, np.ndarray) and value.dtype == object:
            raise InputError(f"input {p.name_hint!r}: expected {p.type_annotation}, got a non-numeric value")
        _check_value(p.name_hint, p.type_annotation, value, sizes)
        values[id(p)] = value
    return values


# -- evaluation ---------------------------------------------------------------------------------

@dataclass
class Closure:
    """A function value: the function and the frame it was created in (its free variables live there)."""

    func: Function
    frame: "_Frame"


@dataclass
class _Frame:
    bindings: dict[int, Any]               # parameters bound by a call (never dropped)
    parent: "_Frame | None" = None
    shares_parent_values: bool = False     # an If branch may reuse values its enclosing body computed
    values: dict[int, Any] = field(default_factory=dict)

    def lookup_binding(self, var: Var) -> Any:
        frame: _Frame | None = self
        while frame is not None:
            if id(var) in frame.bindings:
                return frame.bindings[id(var)]
            frame = frame.parent
        raise KernelError(f"variable %{var.name_hint} is not bound here")

    def reusable_value(self, node: Expr) -> tuple[bool, Any]:
        frame = self
        while frame.shares_parent_values and frame.parent is not None:
            frame = frame.parent
            if id(node) in frame.values:
                return True, frame.values[id(node)]
        return False, None


@dataclass(frozen=True)
class _Plan:
    """The nodes of one body in evaluation order, each with its operand nodes, plus use counts."""

    root: Expr
    steps: tuple[tuple[Expr, tuple[Expr, ...]], ...]
    uses: Mapping[int, int]


def _operands(node: Expr, let_value: Mapping[int, Expr]) -> tuple[Expr, ...]:
    """What must be computed before `node` in the same body (not function bodies, not If branches)."""
    if isinstance(node, If):
        return (node.cond,)
    if isinstance(node, Function):
        return ()
    if isinstance(node, Var):
        return (let_value[id(node)],) if id(node) in let_value else ()
    return children(node)


class Evaluator:
    """Evaluates programs, running each call of a registered op through `run_op`.

    `load_constant` gives a constant's runtime value (default: its numpy array). Plans are computed
    once per body and reused across runs, so a built executable pays for the graph walk only once.
    """

    def __init__(self, run_op: OpRunner, load_constant: Callable[[Constant], Any] | None = None):
        self.run_op = run_op
        self.load_constant = load_constant or (lambda node: np.asarray(node.data))
        self._plans: dict[int, _Plan] = {}
        self._let_value: dict[int, Expr] = {}
        self._prepared: dict[int, Function] = {}

    def prepare(self, func: Function) -> None:
        """Record the let bindings of `func` (and everything nested in it) and plan its body, once."""
        if self._prepared.get(id(func)) is func:
            return
        for node in post_order(func):
            if isinstance(node, Let):
                self._let_value[id(node.var)] = node.value
        self._plan(func.body)
        self._prepared[id(func)] = func

    def run(self, func: Function, bound: Mapping[int, Any]) -> Any:
        """The value of `func`'s body with its parameters bound (`bind_inputs` gives `bound`)."""
        self.prepare(func)
        return self._run(func.body, _Frame(dict(bound)))

    def _plan(self, root: Expr) -> _Plan:
        plan = self._plans.get(id(root))
        if plan is not None and plan.root is root:
            return plan
        steps: list[tuple[Expr, tuple[Expr, ...]]] = []
        uses: dict[int, int] = {id(root): 1}  # the result itself is never dropped
        seen: set[int] = set()
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                operands = _operands(node, self._let_value)
                steps.append((node, operands))
                for child in operands:
                    uses[id(child)] = uses.get(id(child), 0) + 1
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(_operands(node, self._let_value))
                         if id(child) not in seen)
        plan = _Plan(root, tuple(steps), uses)
        self._plans[id(root)] = plan
        return plan

    def _run(self, root: Expr, frame: _Frame) -> Any:
        plan = self._plan(root)
        values = frame.values
        remaining = dict(plan.uses)
        for node, operands in plan.steps:
            if frame.shares_parent_values:
                found, value = frame.reusable_value(node)
                if found:
                    values[id(node)] = value
                    continue
            args = [values[id(child)] for child in operands]
            values[id(node)] = self._step(node, args, frame)
            for child in operands:
                remaining[id(child)] -= 1
                if remaining[id(child)] == 0:
                    del values[id(child)]
        return values[id(root)]

    def _step(self, node: Expr, args: list, frame: _Frame) -> Any:
        if isinstance(node, Call):
            if isinstance(node.op, Op):
                return self.run_op(node, args)
            return self._call(node, args[0], args[1:])
        if isinstance(node, Var):
            return args[0] if args else frame.lookup_binding(node)
        if isinstance(node, Constant):
            return self.load_constant(node)
        if isinstance(node, Tuple):
            return tuple(args)
        if isinstance(node, TupleGetItem):
            if not isinstance(args[0], tuple) or not 0 <= node.index < len(args[0]):
                raise KernelError(f"TupleGetItem [{node.index}] of a value of type {value_type(args[0])}")
            return args[0][node.index]
        if isinstance(node, Let):
            return args[1]
        if isinstance(node, Function):
            return Closure(node, frame)
        if isinstance(node, If):
            cond = np.asarray(args[0])
            if cond.size != 1:
                raise KernelError(f"an If condition must hold one value, got shape {cond.shape}")
            branch = node.true_branch if bool(cond.reshape(())) else node.false_branch
            return self._run(branch, _Frame({}, frame, shares_parent_values=True))
        raise KernelError(f"cannot evaluate a {type(node).__name__} node")

    def _call(self, call: Call, callee: Any, args: list) -> Any:
        if not isinstance(callee, Closure):
            raise KernelError(f"calling a value that is not a function: {type(callee).__name__}")
        params = callee.func.params
        if len(params) != len(args):
            raise KernelError(f"a function of {len(params)} parameter(s) is called with {len(args)} argument(s)")
        return self._run(callee.func.body, _Frame({id(p): a for p, a in zip(params, args)}, callee.frame))


def _run_reference(call: Call, args: list) -> Any:
    return run_reference(call.op.name, call.attrs, args)


def evaluate(program: IRModule | Expr, inputs: Mapping[str, Any] | None = None,
             params: Mapping[str, Any] | None = None) -> Any:
    """The value of `program` on named inputs (and params), computed with the reference kernels.

    `program` is an `IRModule` (its `main` runs), a `Function`, or an expression whose free
    variables are the inputs. Returns a numpy array, or a tuple for a tuple-valued program.
    Missing, unexpected or ill-shaped inputs raise `InputError` naming the input.

        >>> x = relay.var("x", shape=(2,))
        >>> evaluate(relay.nn.relu(x), {"x": np.array([-1.0, 2.0], "float32")})
        array([0., 2.], dtype=float32)
    """
    func = entry_function(program)
    bound = bind_inputs(func, inputs or {}, params)
    return Evaluator(_run_reference).run(func, bound)
