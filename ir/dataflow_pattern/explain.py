"""Why a pattern did not match: the first sub-pattern that failed, at which node, and why.

    pattern = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), is_constant()))
    print(explain_match(pattern, relay.nn.relu(relay.nn.conv2d(x, w))))
    # no match at the root (nn.relu): is_constant() failed at %w: %w is a variable, not a constant [not_constant]

The explainer is the matcher's walk (`walk`) with recording on: every failure carries a *cause*,
one of `CAUSES`. Where there is more than one way to match (alternatives, argument orders, or
several forms of one value in an e-graph), the failure lists each way in `options`, and
`first_failure` follows the one that got deepest into the pattern.

The walk runs over a `Graph`: `ExprGraph` for IR (one form per node), or an e-graph, where a
value is an e-class whose forms are its e-nodes (`eqsat.why`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..expr import Expr
from ..op.registry import Op
from ..visitor import post_order
from .errors import InvalidPatternError
from .nodes import DFPattern, ExprPattern, WildcardPattern, is_recursive
from .walk import ExprGraph, Graph, Miss, Walker, raised_recursion_limit, recursion_frames, short

__all__ = ["CAUSES", "Miss", "MatchExplanation", "Graph", "ExprGraph", "Explainer", "explain", "explain_match"]

CAUSES: dict[str, str] = {
    "kind": "another kind of expression (e.g. a tuple where a call was expected)",
    "op": "a call of another op",
    "arity": "another number of arguments or fields",
    "attr": "an attribute is missing or has another value (an axis, a layout, ...)",
    "not_constant": "a constant was expected (e.g. a weight that is a graph input)",
    "name": "a variable of another name",
    "index": "a tuple item of another index",
    "expr": "not the expression `is_expr` names",
    "type": "another type, or no type",
    "dtype": "another dtype",
    "shape": "another shape",
    "binding": "a sub-pattern used twice meets two different nodes",
    "dominator_path": "a node between a dominator's parent and child does not match the path",
    "outside_consumer": "a node of a dominator's region is used outside it",
    "check": "the pattern matches, but the check (a rule's guard, partition's check) says no",
    "alternatives": "no alternative matches (see options)",
    "unexplained": "the matcher says no, but the walk found no failure",
}
"""cause -> what it means; every `Miss.cause` is one of these."""


class Explainer(Walker):
    """The walk with recording on: `visit(pattern, value)` returns None when it matches, else the `Miss`."""

    def __init__(self, graph: Graph):
        super().__init__(graph, record=True)


def _trivial(p: DFPattern) -> bool:
    """Wildcards and bare ops: their matching says nothing about how far a match got."""
    return ((isinstance(p, WildcardPattern) and p.redirect is None)
            or (isinstance(p, ExprPattern) and isinstance(p.expr, Op)))


def _size(p: DFPattern) -> int:
    return sum(1 for _ in post_order(p, lambda q: q.children()))


@dataclass(frozen=True)
class MatchExplanation:
    """Whether `pattern` matched `node`, and if not, the failure tree (`miss`), its first failure
    and the largest sub-pattern that did match on the way (`deepest_match`)."""

    pattern: DFPattern
    node: Any
    matched: bool
    miss: Miss | None
    deepest_match: tuple[DFPattern, Any] | None
    """the largest sub-pattern (by pattern nodes) that matched during the walk, and where."""
    describe: Callable[[Any], str] = field(repr=False, compare=False, default=repr)

    @property
    def first_failure(self) -> Miss | None:
        return None if self.miss is None else self.miss.first_failure()

    @property
    def cause(self) -> str | None:
        """The first failure's cause (a `CAUSES` key); None when the pattern matched."""
        first = self.first_failure
        return None if first is None else first.cause

    def causes(self) -> set[str]:
        """The causes of every leaf failure, all alternatives included."""
        out: set[str] = set()
        stack = [self.miss] if self.miss else []
        while stack:
            m = stack.pop()
            if m.options:
                stack.extend(m.options)
            else:
                out.add(m.cause)
        return out

    def lines(self) -> list[str]:
        """The explanation as text lines (what `str` joins)."""
        if self.matched:
            return [f"matched at {self.describe(self.node)}"]
        assert self.miss is not None
        first = self.miss.first_failure()
        out = [f"no match at {self.describe(self.node)}: {short(first.pattern)} failed at "
               f"{self.describe(first.node)}: {first.reason} [{first.cause}]"]
        if self.deepest_match is not None:
            p, at = self.deepest_match
            out.append(f"  deepest match: {short(p)} at {self.describe(at)}")
        if first.because is not None:
            why = first.because.first_failure()
            out.append(f"  because {short(why.pattern)} failed: {why.reason} [{why.cause}]")
        out += _option_lines(self.miss, "  ")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _option_lines(miss: Miss, indent: str, limit: int = 12) -> list[str]:
    """Each alternative way that was tried, and where it failed (nested, at most `limit` lines)."""
    out: list[str] = []
    stack = [(miss, indent)]
    while stack and len(out) < limit:
        m, pad = stack.pop()
        if not m.options:
            continue
        out.append(f"{pad}{m.reason}:")
        for option in reversed(m.options):
            stack.append((option, pad + "  "))
        for option in m.options:
            leaf = option.first_failure()
            out.append(f"{pad}  - {short(leaf.pattern)}: {leaf.reason} [{leaf.cause}]")
    return out[:limit]


def explain(explainer: Explainer, pattern: DFPattern, value: Any, matched: bool,
            check: Callable[[Any], bool] | None = None) -> MatchExplanation:
    """The explanation of `pattern` at `value` given the matcher's verdict (`matched`)."""
    describe = explainer.graph.describe
    if matched and (check is None or check(value)):
        return MatchExplanation(pattern, value, True, None, (pattern, value), describe)
    if matched:
        miss = Miss(pattern, value, "check", f"the pattern matches {describe(value)} but the check returned false", 0)
        return MatchExplanation(pattern, value, False, miss, (pattern, value), describe)
    miss = explainer.visit(pattern, value)
    if miss is None:
        miss = Miss(pattern, value, "unexplained", "the matcher does not match here, though each part does", 0)
    found = [(p, at) for p, at in explainer.matched if not _trivial(p)]
    for sub in post_order(pattern, lambda q: q.children()):
        if sub is not pattern and not _trivial(sub) and Explainer(explainer.graph).visit(sub, value) is None:
            found.append((sub, value))
    deepest = max(found, key=lambda pv: _size(pv[0]), default=None)
    return MatchExplanation(pattern, value, False, miss, deepest, describe)


def explain_match(pattern: DFPattern, expr: Expr, graph: Expr | None = None,
                  check: Callable[[Expr], bool] | None = None) -> MatchExplanation:
    """Whether `expr` matches `pattern`, and if not why: the first sub-pattern that failed, at which
    node, and its cause (`CAUSES`). `graph` is the program `expr` belongs to (default: `expr`),
    which dominator checks and node names (`%3`, as `print(graph)` shows them) refer to; `check`
    is a predicate on the match, as `partition` takes one."""
    if not isinstance(pattern, DFPattern):
        raise InvalidPatternError(f"explain_match expects a pattern, got {type(pattern).__name__} {pattern!r}")
    if not isinstance(expr, Expr):
        raise TypeError(f"explain_match expects an IR expression, got {type(expr).__name__} {expr!r}")
    g = ExprGraph(expr if graph is None else graph)
    with raised_recursion_limit(recursion_frames(pattern, len(g.index)) if is_recursive(pattern) else 0):
        matched = Walker(g, record=False).visit(pattern, expr) is None
        return explain(Explainer(g), pattern, expr, matched, check)
