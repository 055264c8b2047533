"""Why a rule did not rewrite a node: the answer for one e-class of a saturated e-graph.

    res = eqsat.optimize(mod, params, limits=eqsat.Limits(iterations=2))
    print(eqsat.why_not(res, "dense-bias-tanh", "%86"))       # BERT (small): %86 = tanh(%85)
    # dense-bias-tanh at %86 (e-class 132): limit
    #   the rule matches e-class 132 now, but saturation stopped (iteration_limit after 2 iteration(s)) ...

The answer, in the order it is decided (`WhyNot.cause`):

1. `applied`: the rule did rewrite the class (its result is there); for an `optimize` result a
   note says whether the extracted program uses it, or what it computes the class with instead.
2. The rule's queries, run afresh on the saturated e-graph, match the class: then `dtype_group`
   (the rule holds for other dtypes), `guard` (its `when` returned false), `declined` (it, or
   its callback, returned nothing new), `type_rejected` (its result is ill-typed or of another
   type than the class), `dominator_path` (a dominator region that is not complete), or, when
   the result is fine, the reason the runner never applied it: `limit` (the run stopped at a
   limit before the rule saw this match) or `banned` (the back-off scheduler held the rule back
   at the end of the run); after a saturated run the result was already in the class (`applied`).
3. They do not: the rule's left side (`rules.lhs`) is walked over the class's forms, every
   e-node of every class it meets, and the first failure names the class that lacks a form and
   why each of its forms does not fit, with `ir.dataflow_pattern.explain`'s causes (`op`,
   `attr`, `not_constant`, ...). When the run stopped at a limit, more iterations may still make
   the missing form; the answer says so.

A bare dataflow pattern (no rule) gets steps 2 and 3 only, with `matched` when it matches.
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from typing import Any

import ir
from ir import Expr
from ir.dataflow_pattern import DFPattern, DFPatternCallback, MatchExplanation
from ir.dataflow_pattern.explain import Explainer, explain
from ir.printer import node_names
from ir.type_infer import types_compatible

from .egraph.egraph import EGraph
from .egraph.pattern_graph import EGraphForms
from .egraph.view import ClassId
from .errors import EqsatError
from .limits import StopReason
from .optimize import Optimized, Saturated
from .report import Report
from .rules.callback import CallbackRule, DFMatch, find_matches
from .rules.install import install_rule
from .rules.lhs import left_sides
from .rules.library import RULESETS
from .rules.rule import DTYPE_GROUPS, RETRY_LATER, Rewrite, Rule

__all__ = ["WhyNot", "why_not", "find_rule", "WHY_CAUSES"]

WHY_CAUSES: dict[str, str] = {
    "applied": "the rule rewrote the class (or its result was already there)",
    "matched": "the pattern matches the class",
    "dtype_group": "the rule holds for another dtype group than the class's",
    "guard": "the rule's guard (`when`) returned false",
    "declined": "the rule (or its callback) returned nothing new for the match",
    "type_rejected": "the rule's result does not type-check, or has another type than the class",
    "limit": "the rule matches, but the run stopped at a limit before it saw the match",
    "banned": "the rule matches, but the back-off scheduler held it back at the end of the run",
}
"""causes decided on the e-graph; a failed match adds `ir.dataflow_pattern.CAUSES`."""


@dataclass(frozen=True)
class WhyNot:
    """The answer of `why_not`: the cause (a `WHY_CAUSES` or `CAUSES` key), in words, and details."""

    rule: str
    node: str
    """the node asked about, as the input program prints it (or the e-class)."""
    eclass: ClassId
    cause: str
    reason: str
    explanation: MatchExplanation | None = None
    """for a failed match: the walk of the rule's left side over the class's forms."""
    notes: tuple[str, ...] = ()
    """what else helps: a limit that may have kept a form from appearing, what extraction chose."""

    def __str__(self) -> str:
        lines = [f"{self.rule} at {self.node} (e-class {self.eclass}): {self.cause}", f"  {self.reason}"]
        if self.explanation is not None:
            lines += ["  " + line for line in self.explanation.lines()]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


class _Source:
    """The e-graph, its view, the saturation report and the input program's node names."""

    def __init__(self, source: Any):
        self.result: Optimized | None = None
        """the `optimize` result asked about, whose extraction the answer can comment on."""
        if isinstance(source, Optimized):
            if source.saturated is None:
                raise EqsatError("this result holds no e-graph; pass the `Saturated` run instead")
            self.result, source = source, source.saturated
        if isinstance(source, Saturated):
            self.egraph, self.view, self.report = source.lowered.egraph, source.view, source.report
        elif isinstance(source, EGraph):
            self.egraph, self.view, self.report = source, source.view(source.roots), None
        else:
            raise TypeError(f"why_not expects an optimize result, a Saturated run or an EGraph, got "
                            f"{type(source).__name__}")
        self.report: Report | None
        programs = self.egraph.program_nodes()
        self.by_name: dict[str, ClassId] = {}
        self.names: dict[ClassId, str] = {}
        self.classes: dict[Expr, ClassId] = {}
        if programs:
            root, by_class = programs[0]
            names = node_names(root)
            for cls, nodes in by_class.items():
                for node in nodes:
                    self.classes[node] = cls
                    if node in names:
                        self.by_name.setdefault(names[node], cls)
                        self.names.setdefault(cls, names[node])
            result = self.egraph.canonical(self.egraph.roots[0])
            self.names.setdefault(result, "%result")
            self.by_name.setdefault("%result", result)

    def eclass(self, node: Any) -> ClassId:
        """The class of a node named as the input program prints it (`%12`, `12`, `%x`; `%result` for
        the unnamed last value), or of an IR node of the lowered program."""
        if isinstance(node, Expr):
            if node not in self.classes:
                raise EqsatError(f"{node!r} is not a node of the lowered program; name it as the input program "
                                 "prints it, e.g. '%12'")
            return self.classes[node]
        name = f"%{node}" if isinstance(node, int) or not str(node).startswith("%") else str(node)
        if name not in self.by_name:
            numbered = sorted(int(n[1:]) for n in self.by_name if n[1:].isdigit())
            span = f"%0 to %{numbered[-1]}" if numbered else "no numbered node"
            raise EqsatError(f"the program has no node {name}; its nodes are {span} and its variables "
                             f"(as `print(mod)` shows them)")
        return self.by_name[name]

    def describe(self, cls: ClassId) -> str:
        return self.names.get(cls, f"e-class {cls}")


class _Fresh:
    """A rule's queries under a new registration: egglog then reports all their matches, not only
    those that are new since the rule last ran."""

    def __init__(self, rule: Rule):
        self.rule, self.name = rule, f"why {rule.name}"

    def queries(self, egraph: EGraph):
        return self.rule.queries(egraph)


def find_rule(name: str, egraph: EGraph | None = None) -> Rule:
    """The library rule (or one `egraph` ran) named `name`; an unknown name is an `EqsatError` that
    suggests close names."""
    known = {r.name: r for r in RULESETS["all"]}
    if egraph is not None:
        known.update((n, r) for n, r in egraph.registered_rules().items() if isinstance(r, Rule))
    if name in known:
        return known[name]
    close = difflib.get_close_matches(name, list(known), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `eqsat rules` lists them"
    raise EqsatError(f"no rule named {name!r}{hint}")


def _resolve(rule: Any, egraph: EGraph) -> Rule | DFPattern:
    if isinstance(rule, (Rule, DFPattern)):
        return rule
    if isinstance(rule, DFPatternCallback):
        return CallbackRule(rule)
    if isinstance(rule, str):
        return find_rule(rule, egraph)
    raise TypeError(f"why_not expects a rule, a rule name, a DFPatternCallback or a pattern, got "
                    f"{type(rule).__name__} {rule!r}")


def _matches_at(rule: Rule, egraph: EGraph, cls: ClassId) -> list[Any]:
    """The rule's matches rooted at `cls` (a `Match`, or `RETRY_LATER` for a row whose dominator
    region is not complete); rows that fail the query's Python checks are left out."""
    key, queries = install_rule(egraph, _Fresh(rule))
    frozen = egraph.run_queries(key, [name for name, _ in queries])
    out = []
    for name, mq in queries:
        for row in sorted(frozen.matches[name]):
            decoded = mq.decode(egraph, row)
            if decoded is RETRY_LATER:
                compiled = mq.compiled
                if egraph.canonical(compiled.values(row)[compiled.root.name]) == cls:
                    out.append(decoded)
            elif decoded is not None and cls in {egraph.canonical(r) for r in decoded.roots}:
                out.append(decoded)
    return out


def _guard_name(rule: Rewrite) -> str:
    """The guard's name and the first line of its docstring ("a lambda" for an anonymous one)."""
    name = getattr(rule.when, "__name__", "when")
    if name == "<lambda>":
        return "(a lambda)"
    doc = (inspect.getdoc(rule.when) or "").split("\n")[0]
    return f"{name} ({doc})" if doc else name


def _verdict(rule: Rule, matches: list[Any], egraph: EGraph) -> tuple[str, str] | None:
    """Why matches at the class did not rewrite it, when the rule itself refused them; None when a
    match gives a well-typed result (so only the runner can have kept it back)."""
    decoded = [m for m in matches if m is not RETRY_LATER]
    if not decoded:
        if any(m is RETRY_LATER for m in matches):
            return "dominator_path", "the rule's dominator region below the class is not complete"
        return None
    refusals: list[tuple[str, str]] = []
    for m in decoded:
        if isinstance(rule, Rewrite) and rule.dtypes is not None:
            dtype = getattr(m.root_type(), "dtype", None)
            if dtype not in DTYPE_GROUPS[rule.dtypes]:
                refusals.append(("dtype_group", f"the rule holds for {rule.dtypes} dtypes; the class is {dtype}"))
                continue
        if isinstance(rule, Rewrite) and rule.when is not None and not rule.when(m):
            refusals.append(("guard", f"the guard {_guard_name(rule)} returned false"))
            continue
        try:
            results = rule.fire(m)
        except ir.IRError as err:
            refusals.append(("type_rejected", f"the rule built an invalid call: {err}"))
            continue
        if not results:
            what = "its callback returned the match unchanged" if isinstance(m, DFMatch) else "it built no result"
            refusals.append(("declined", f"the rule declined the match: {what}"))
            continue
        for res in results:
            try:
                ir.infer_type(res.expr)
            except ir.IRError as err:
                refusals.append(("type_rejected", f"the result does not type-check: {err}"))
                break
            have, got = egraph.type_of(res.root), res.expr.checked_type
            if not types_compatible(have, got):  # what `EGraph.union` refuses
                refusals.append(("type_rejected", f"the result has type {got}, the class {have}"))
                break
        else:
            return None
    return refusals[0]


def _applied(rule: Rule, egraph: EGraph, cls: ClassId) -> bool:
    return any(a.rule == rule.name and egraph.canonical(a.root) == cls for a in egraph.applications)


def _limit_note(report: Report | None) -> tuple[str, ...]:
    if report is None or report.stop_reason in (StopReason.SATURATED, StopReason.GOAL_REACHED):
        return ()
    return (f"saturation stopped ({report.stop_reason} after {report.iterations} iteration(s)); more iterations "
            "might still make the missing form",)


def _extraction_note(src: _Source, rule: str, cls: ClassId) -> tuple[str, ...]:
    """For an `optimize` result: whether its program uses what the rule made at the class."""
    res = src.result
    if res is None:
        return ()
    where = f"the program extracted for {res.target} ({res.extractor})"
    if res.choice.info.get("kept_input"):
        return (f"{where} is the input: nothing cheaper was found",)
    if cls not in set(res.choice.classes(src.view)):
        return (f"{where} does not compute e-class {cls}",)
    node = res.choice.node_of[cls]
    chain = res.saturated.provenance.chain(node)
    label = src.view.nodes[node].label()
    made = f"made by {' > '.join(chain)}" if chain else "from the input"
    if rule in chain:
        return (f"{where} uses it: {label}, {made}",)
    return (f"{where} computes e-class {cls} with {label} ({made}) instead: the rule's form costs more on "
            f"{res.target}, cannot run there, or needs values its region hides",)


def _walk(pattern: DFPattern, src: _Source, cls: ClassId) -> MatchExplanation:
    program = src.egraph.program_nodes()
    graph = EGraphForms(src.view, src.names, program=program[0] if program else None)
    return explain(Explainer(graph), pattern, cls, matched=False)


def why_not(source: Any, rule: Any, node: Any) -> WhyNot:
    """Why `rule` (a rule, its name, a `DFPatternCallback`, or a bare `DFPattern`) did not rewrite
    `node` in a saturated e-graph (`source`: an `optimize` result, a `Saturated` run or an
    `EGraph`); `node` is named as `print(mod)` shows the input program (`"%12"`, `12`, `"%x"`,
    `"%result"` for the returned value) or is an IR node of the lowered program. The module
    docstring lists the causes."""
    src = _Source(source)
    egraph = src.egraph
    resolved = _resolve(rule, egraph)
    cls = src.eclass(node)
    where = src.describe(cls)
    if isinstance(resolved, DFPattern):
        name = " ".join(repr(resolved).split())[:60]
        if cls in find_matches(resolved, egraph):
            return WhyNot(name, where, cls, "matched", f"the pattern matches a form of e-class {cls}")
        expl = _walk(resolved, src, cls)
        return WhyNot(name, where, cls, expl.cause or "unexplained", "the pattern matches no form of the class",
                      expl, _limit_note(src.report))
    if _applied(resolved, egraph, cls):
        if isinstance(resolved, CallbackRule) and cls not in find_matches(resolved.callback.pattern, egraph):
            expl = _walk(resolved.callback.pattern, src, cls)
            return WhyNot(resolved.name, where, cls, expl.cause or "unexplained", "the rule rewrote the class, but "
                          "the lowered program does not satisfy its pattern, so extraction will not use the result",
                          expl)
        return WhyNot(resolved.name, where, cls, "applied", f"the rule rewrote e-class {cls}: its result is there",
                      notes=_extraction_note(src, resolved.name, cls))
    matches = _matches_at(resolved, egraph, cls)
    if matches:
        refused = _verdict(resolved, matches, egraph)
        if refused is not None:
            return WhyNot(resolved.name, where, cls, *refused)
        report = src.report
        if report is not None and report.rows and resolved.name in report.rows[-1].banned:
            return WhyNot(resolved.name, where, cls, "banned", "the rule matches, but the back-off scheduler held it "
                          f"back in the last iteration ({report.iterations}) of a run that stopped at "
                          f"{report.stop_reason}")
        if report is not None and report.stop_reason not in (StopReason.SATURATED, StopReason.GOAL_REACHED):
            return WhyNot(resolved.name, where, cls, "limit", f"the rule matches e-class {cls} now, but saturation "
                          f"stopped ({report.stop_reason} after {report.iterations} iteration(s)) before the rule "
                          "saw the forms this match needs")
        return WhyNot(resolved.name, where, cls, "applied", "the rule matches and its result was already in the "
                      "class (another rule made it first)", notes=_extraction_note(src, resolved.name, cls))
    walks = [_walk(p, src, cls) for p in left_sides(resolved)]
    expl = next((w for w in walks if not w.matched), None)
    if expl is None:
        return WhyNot(resolved.name, where, cls, "unexplained", "the rule's left side fits the class's forms, but "
                      "its query found no match (attribute variables that disagree?)")
    return WhyNot(resolved.name, where, cls, expl.cause or "unexplained", "the rule's left side matches no form "
                  "of the class", expl, _limit_note(src.report))
