"""Soundness bisection: the first rule application whose result computes something else.

When an optimized program fails verification, some rule merged two classes that are not equal.
`bisect_unsound` replays the saturation on a fresh e-graph, with the same rules and limits, and
checks every result a rule returns before it is merged, in the order the runner applies them
(iteration by iteration, rule by rule, match by match). Each class of the e-graph has a value
per input set: the model's inputs are `verify`'s seeded sets (typical values, edge values, inf and
NaN), and a class computes what its first e-node computes from its children's values (so the
value of every class follows from the input program and the results checked before it). For a
result, both sides are evaluated on the values of the classes the match bound:

- the matched term (a declarative rule's left side found again among the e-nodes the search
  saw, with its real attributes; a dataflow pattern's matched expression), and
- the rule's result expression.

They must agree as `check_rule` demands: bit for bit for an exact rule (signed zeros, NaN and
infinities included), within a relative tolerance for a rule declared `exact=False` and for a
callback. Where the matched term cannot be rebuilt, the matched class's value stands for it and
the check uses the tolerance. The first disagreement stops the replay and is reported with the
rule, the iteration, the classes the match bound and both expressions in text.

    report = eqsat.bisect_unsound(mod, params, rules=rules, limits=limits)
    print(report)            # "rule relu-as-identity is unsound: in iteration 1 ..." or "no unsound ..."
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

import ir
from ir import Call, Expr, IRModule, Tuple, TupleGetItem, Var, get_op
import strategies
from strategies.interpreter import Evaluator
from strategies.kernels.reference import run_reference

from ..egraph.egraph import EGraph
from ..egraph.lower import lower
from ..egraph.terms import Handle, Kind, Term
from ..limits import Limits
from ..report import IterationRow
from ..rules.dominator import node_inputs
from ..rules.library import resolve_rules
from ..rules.match import Match
from ..rules.pattern import AVar, Pat, PCall, PConst, PGetItem, PTuple, PVar
from ..rules.rule import Result, Rewrite, Rule
from ..runner import StopRun, saturate
from ..scheduler import Scheduler
from .check import output_difference
from .verify import INPUT_KINDS, flat_outputs, random_inputs

__all__ = ["Bisection", "UnsoundApplication", "bisect_unsound"]

_UNKNOWN = object()
"""the value of a class that cannot be computed (an inner function, a kernel error)."""


@dataclass(frozen=True)
class UnsoundApplication:
    """One rule result that differs from the term it was matched on."""

    rule: str
    iteration: int
    """the saturation iteration (from 1) in which the rule fired."""
    application: int
    """how many results were checked before this one, in the runner's order."""
    root: str
    """the e-class the result was to be merged into, with its first form (as `bindings`)."""
    bindings: Mapping[str, str]
    """each variable the match bound -> its e-class and that class's first form, e.g. 'e-class 7: nn.dense'."""
    before: str
    """the matched term in text (leaves as '?name' placeholders)."""
    after: str
    """the rule's result in text."""
    input_kind: str
    """the kind of the model's input set on which they differ (see `verify.INPUT_KINDS`)."""
    problem: str
    """what differs, as `check_rule` states it."""
    exact: bool
    """whether the two sides were compared bit for bit (else within a tolerance)."""

    def __str__(self) -> str:
        bound = "\n".join(f"  {name} = {text}" for name, text in self.bindings.items())
        how = "bit for bit" if self.exact else "within the rounding tolerance"
        return (f"rule {self.rule} is unsound: in iteration {self.iteration}, after {self.application} sound "
                f"result(s), its result for {self.root} differs from the matched term on the {self.input_kind} "
                f"input set ({how}): {self.problem}\nmatched:\n{bound}\n"
                f"before:\n{_indent(self.before)}\nafter:\n{_indent(self.after)}")


@dataclass(frozen=True)
class Bisection:
    """What `bisect_unsound` found: the first unsound application (None: every result checked out)."""

    culprit: UnsoundApplication | None
    checked: int
    """rule results checked."""
    finished: bool
    """False when the `seconds` budget ran out before the replay found a culprit or ended."""
    unchecked: int
    """rule results whose sides could not be evaluated (inner functions, kernels failing)."""
    iterations: int
    input_kinds: tuple[str, ...]
    seconds: float

    @property
    def found(self) -> bool:
        return self.culprit is not None

    def summary(self) -> str:
        if self.culprit is not None:
            c = self.culprit
            return (f"first unsound application: rule {c.rule} in iteration {c.iteration} "
                    f"({c.root}; {c.problem}); {self.checked} result(s) checked in {self.seconds:.2f} s")
        if not self.finished:
            return (f"no unsound rule application among the first {self.checked} result(s) checked: the "
                    f"bisection's budget of {self.seconds:.0f} s ran out in iteration {self.iterations + 1}; "
                    "eqsat.bisect_unsound(mod, params, rules=..., limits=...) or `eqsat bisect MODEL` goes on")
        return (f"no unsound rule application: {self.checked} result(s) checked over {self.iterations} "
                f"iteration(s) on {len(self.input_kinds)} input set(s) ({', '.join(self.input_kinds)}), "
                f"{self.unchecked} not evaluable, {self.seconds:.2f} s")

    def __str__(self) -> str:
        return self.summary() if self.culprit is None else f"{self.summary()}\n{self.culprit}"


def bisect_unsound(mod: IRModule | Expr, params: Mapping[str, Any] | None = None, *, rules: Any = "default",
                   limits: Limits = Limits(), scheduler: Scheduler | None = None, input_sets: int = 3,
                   seconds: float | None = None, progress: Callable[[IterationRow], None] | None = None) -> Bisection:
    """Replay saturating `mod` under `rules` within `limits`' iterations and e-nodes (and `scheduler`,
    as `optimize` ran it) and return the first rule result that differs from the term it was matched
    on, evaluated on `input_sets` of the model's inputs (kinds cycle through `verify.INPUT_KINDS`:
    typical, edge values, inf/NaN, ...). `seconds` bounds the whole bisection (default: none);
    `progress` is called after every iteration, as by `saturate`.

    The time limit does not apply: checking is slower than saturating, so a replay under the same
    seconds would stop earlier than the run it explains. Give the iterations a run made
    (`Report.iterations`) to replay no further than it went."""
    start = time.perf_counter()
    mod = mod if isinstance(mod, IRModule) else IRModule.from_expr(mod)
    ir.infer_type(mod)
    lowered = lower(mod, params)
    kinds = tuple(INPUT_KINDS[k % len(INPUT_KINDS)] for k in range(input_sets))
    inputs = [random_inputs(mod, skip=list(params or {}), seed=k, kind=kind) for k, kind in enumerate(kinds)]
    deadline = None if seconds is None else start + seconds
    checker = _Checker(lowered.egraph, inputs, kinds, progress, deadline)
    checked_rules = [_Checked(r, checker) for r in resolve_rules(rules)]
    culprit, finished = None, True
    try:
        untimed = Limits(iterations=limits.iterations, nodes=limits.nodes, seconds=math.inf)
        saturate(lowered.egraph, checked_rules, untimed, scheduler=scheduler, progress=checker.next_iteration)
    except _Found as found:
        culprit = found.culprit
    except _OutOfTime:
        finished = False
    return Bisection(culprit, checker.checked, finished, checker.unchecked, checker.iteration, kinds,
                     time.perf_counter() - start)


class _Found(StopRun):
    """Stops the replay at the first unsound result."""

    def __init__(self, culprit: UnsoundApplication):
        super().__init__(culprit.rule)
        self.culprit = culprit


class _OutOfTime(StopRun):
    """Stops the replay when the bisection's budget is spent."""


class _Checked(Rule):
    """A rule whose every result is checked (by `_Checker`) before the runner merges it."""

    def __init__(self, inner: Rule, checker: "_Checker"):
        self.inner, self.checker, self.name = inner, checker, inner.name

    def queries(self, egraph: EGraph):
        return self.inner.queries(egraph)

    def select(self, matches: list[Match]) -> list[Match]:
        return self.inner.select(matches)

    def fire(self, m: Match) -> list[Result]:
        results = self.inner.fire(m)
        for i, res in enumerate(results):
            self.checker.check(self.inner, m, i, res)
        return results


class _Checker:
    """Class values per input set, and the check of one rule result against its matched term."""

    def __init__(self, egraph: EGraph, inputs: list[dict[str, np.ndarray]], kinds: tuple[str, ...],
                 progress: Callable[[IterationRow], None] | None, deadline: float | None):
        self.egraph, self.inputs, self.kinds, self.progress = egraph, inputs, kinds, progress
        self.deadline = deadline
        self.values: dict[Handle, list[Any]] = {}
        self.iteration = 0
        self.checked = 0
        self.unchecked = 0
        self.evaluator = Evaluator(lambda call, args: run_reference(call.op.name, call.attrs, args))
        self.selections: dict[str, Any] = {}

    def next_iteration(self, row: IterationRow) -> None:
        self.iteration = row.iteration
        if self.progress is not None:
            self.progress(row)
        self._in_time()

    def _in_time(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise _OutOfTime

    # -- class values ----------------------------------------------------------------------------
    def value(self, handle: Handle) -> list[Any]:
        """The class's value on every input set: its first e-node applied to its children's values."""
        nodes = self.egraph.class_nodes()
        root = self.egraph.canonical(handle)
        stack = [(root, False)]
        while stack:
            h, expanded = stack.pop()
            if h in self.values:
                continue
            term = nodes[h][0]
            kids = [self.egraph.canonical(k) for k in term.children]
            if not expanded:
                stack.append((h, True))
                stack.extend((k, False) for k in kids if k not in self.values)
                continue
            self.values[h] = [self._apply(term, [self.values[k][s] for k in kids], s)
                              for s in range(len(self.inputs))]
        return self.values[root]

    def _apply(self, term: Term, args: list[Any], s: int) -> Any:
        if any(a is _UNKNOWN for a in args):
            return _UNKNOWN
        kind = term.kind
        try:
            with np.errstate(all="ignore"):
                if kind is Kind.VAR:
                    return self.inputs[s].get(self.egraph.variables[term.payload[0]].name_hint, _UNKNOWN)
                if kind is Kind.CONST:
                    return np.asarray(self.egraph.constants[term.payload[0]].data)
                if kind is Kind.CALL:
                    return self._run_cpu(term.payload[0], self.egraph.attrs[term.payload[1]], args)
                if kind is Kind.NIL:
                    return ()
                if kind is Kind.CONS:
                    return (args[0], *args[1])
                if kind is Kind.TUPLE:
                    return tuple(args[0])
                if kind is Kind.GETITEM:
                    return args[0][term.payload[0]]
        except Exception:  # noqa: BLE001 - a kernel refusing these values: the class is not checked
            return _UNKNOWN
        return _UNKNOWN  # inner functions, their calls, If and Let

    def _run_cpu(self, op: str, attrs: ir.Attrs, args: list[Any]) -> Any:
        """One call with the implementation the cpu target selects (BLAS-backed, unlike the reference
        kernels): class values only feed both sides of a check alike, so their kernel does not matter."""
        workload = strategies.Workload.of_values(op, attrs, args)
        selection = self.selections.get(workload.key)
        if selection is None:
            selection = self.selections[workload.key] = strategies.select_implementation(workload, "cpu")
        return selection.implementation.compute(attrs, args, workload.out_type, selection.config)

    def evaluate(self, expr: Expr, leaves: Mapping[int, Handle]) -> list[Any]:
        """`expr` on every input set, each leaf variable taking its class's value."""
        params = [v for v in ir.post_order(expr) if isinstance(v, Var)]
        if any(id(v) not in leaves for v in params):
            return [_UNKNOWN] * len(self.inputs)
        func = ir.Function(params, expr)
        out = []
        for s in range(len(self.inputs)):
            args = [self.value(leaves[id(v)])[s] for v in params]
            if any(a is _UNKNOWN for a in args):
                out.append(_UNKNOWN)
                continue
            try:
                with np.errstate(all="ignore"):
                    out.append(self.evaluator.run(func, {id(v): a for v, a in zip(params, args)}))
            except Exception:  # noqa: BLE001 - as in `_apply`
                out.append(_UNKNOWN)
        return out

    # -- one result ------------------------------------------------------------------------------
    def check(self, rule: Rule, m: Match, index: int, res: Result) -> None:
        """Raise `_Found` when `res` differs from the term `m` matched at `res.root`."""
        self._in_time()
        try:
            ir.infer_type(res.expr)
        except ir.IRError:
            return  # the runner drops an ill-typed result
        before = self._matched_term(rule, m, index)
        exact = bool(getattr(rule, "exact", False)) and before is not None
        wants = self.evaluate(before, m.placeholders) if before is not None else self.value(res.root)
        gots = self.evaluate(res.expr, m.placeholders)
        evaluable = False
        for s, (want, got) in enumerate(zip(wants, gots)):
            if want is _UNKNOWN or got is _UNKNOWN:
                continue
            evaluable = True
            problem = _difference(flat_outputs(want), flat_outputs(got), exact)
            if problem:
                raise _Found(UnsoundApplication(
                    rule.name, self.iteration + 1, self.checked, self._class_text(res.root),
                    self._bindings(m), _text(before) if before is not None else self._class_text(res.root),
                    _text(res.expr), self.kinds[s], problem, exact))
        if evaluable:
            self.checked += 1
        else:
            self.unchecked += 1

    def _matched_term(self, rule: Rule, m: Match, index: int) -> Expr | None:
        """The term `m` matched at its `index`-th root, built over the match's leaves; None when it
        cannot be rebuilt."""
        pre = getattr(m, "pre", None)
        if isinstance(pre, Expr):
            return pre
        if not isinstance(rule, Rewrite) or index >= len(rule.lhs):
            return None
        return next(_find(rule.lhs[index], self.egraph.canonical(m.roots[index]), m, self.egraph.class_nodes()),
                    None)

    def _bindings(self, m: Match) -> dict[str, str]:
        return {name: self._class_text(h) for name, h in sorted(m.classes.items())}

    def _class_text(self, handle: Handle) -> str:
        """'e-class N: <its first form, children as e-classes>'."""
        c = self.egraph.canonical(handle)
        term = self.egraph.class_nodes()[c][0]
        kids = ", ".join(f"e-class {self.egraph.canonical(k)}" for k in term.children)
        if term.kind is Kind.CALL:
            label = f"{term.payload[0]}({kids})"
        elif term.kind is Kind.VAR:
            label = f"input {self.egraph.variables[term.payload[0]].name_hint}"
        elif term.kind is Kind.CONST:
            label = f"constant {self.egraph.constants[term.payload[0]].checked_type}"
        else:
            label = f"{term.kind}({kids})"
        return f"e-class {c}: {label}"


def _find(p: Pat, cls: Handle, m: Match, nodes: Mapping[Handle, tuple[Term, ...]]) -> Iterator[Expr]:
    """Every way the left side `p` matches class `cls` with `m`'s bindings, as IR over `m`'s leaves."""
    canonical = m.egraph.canonical
    if isinstance(p, (PVar, PConst)):
        if canonical(m.classes[p.name]) == cls:
            yield m.expr(p.name)
        return
    if isinstance(p, PCall):
        for term in nodes.get(cls, ()):
            if term.kind is not Kind.CALL or term.payload[0] != p.op:
                continue
            attrs = m.egraph.attrs[term.payload[1]]
            if not _attrs_agree(p, attrs, m):
                continue
            for args in _find_all(p.args, [canonical(k) for k in term.children], m, nodes):
                yield Call(get_op(p.op), list(args), attrs)
        return
    if isinstance(p, PTuple):
        for term in nodes.get(cls, ()):
            if term.kind is Kind.TUPLE:
                items = node_inputs(nodes, term)
                if len(items) == len(p.fields):
                    for fields in _find_all(p.fields, items, m, nodes):
                        yield Tuple(list(fields))
        return
    if isinstance(p, PGetItem):
        for term in nodes.get(cls, ()):
            if term.kind is Kind.GETITEM and term.payload[0] == p.index:
                for tup in _find(p.tup, canonical(term.children[0]), m, nodes):
                    yield TupleGetItem(tup, p.index)


def _find_all(patterns: Sequence[Pat], classes: Sequence[Handle], m: Match,
              nodes: Mapping[Handle, tuple[Term, ...]]) -> Iterator[tuple[Expr, ...]]:
    if len(patterns) != len(classes):
        return
    if not patterns:
        yield ()
        return
    for head in _find(patterns[0], classes[0], m, nodes):
        for rest in _find_all(patterns[1:], classes[1:], m, nodes):
            yield (head, *rest)


def _attrs_agree(p: PCall, attrs: ir.Attrs, m: Match) -> bool:
    """Whether a call's attributes meet the pattern's literal values and the match's bound ones."""
    if p.bind_attrs is not None and m.values.get(p.bind_attrs) != attrs:
        return False
    for key, want in p.attrs:
        if callable(want):
            continue
        expected = m.values.get(want.name) if isinstance(want, AVar) else want
        if attrs[key] != expected:
            return False
    return True


def _difference(wants: list[np.ndarray], gots: list[np.ndarray], exact: bool) -> str:
    if len(wants) != len(gots):
        return f"{len(gots)} output(s) where the matched term has {len(wants)}"
    for k, (want, got) in enumerate(zip(wants, gots)):
        problem = output_difference(np.asarray(want), np.asarray(got), exact)
        if problem:
            return problem if len(wants) == 1 else f"output {k}: {problem}"
    return ""


def _text(expr: Expr) -> str:
    return ir.astext(expr, show_types=False)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
