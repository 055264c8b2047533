"""Rules and rule sets: e-matching queries that find candidates, Python that builds results.

A rule never edits the e-graph itself. `Rule.fire(match)` returns `Result`s (a root class and an
IR expression built from `match.expr(...)` leaves); the runner type-checks each expression,
lowers it and merges it into the root's class only when the types agree.
"""

from __future__ import annotations

import abc
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol, Sequence

from ir import Expr

from ..egraph.query import Query
from ..egraph.terms import Handle
from ..errors import RuleError
from .match import Match
from .compiled import CompiledPattern, compile_patterns, tuple_arities
from .pattern import MAX_PARTS, Pat, check_template, copy_attributes, instantiate, name_literals, variables, variadic

__all__ = ["DTYPE_GROUPS", "MatchQuery", "RETRY_LATER", "UNDECIDED", "Undecided", "Result", "Rule", "Rewrite", "rule",
           "birewrite", "RuleSet", "ruleset"]

RETRY_LATER = object()
"""What `MatchQuery.decode` returns for a row that may still match once the e-graph has grown (a
dominator region not complete yet); the runner decodes it again after the next change."""


class Undecided(list):
    """What `Rule.fire` returns (an empty list) for a match it cannot decide yet: a fact its guard
    reads (a precise shape, say) that later rewrites may still add; the runner fires it again after
    the next change, as it decodes a `RETRY_LATER` row again."""


UNDECIDED = Undecided()
"""the one `Undecided` value; a builder returns it instead of None to be asked again later."""


class MatchQuery(Protocol):
    """A compiled query and the decoder of its rows (None: the row fails a Python-side check)."""

    query: Query

    def decode(self, egraph, row: tuple) -> Match | None | object: ...


@dataclass(frozen=True)
class Result:
    """`expr` is equal to class `root`; `interior` classes must not escape if `expr` is extracted."""

    root: Handle
    expr: Expr
    interior: frozenset[Handle] = frozenset()


class Rule(abc.ABC):
    """A named rewrite: `queries()` find matches, `fire(match)` says what each match is equal to."""

    name: str

    @abc.abstractmethod
    def queries(self, egraph) -> Sequence[MatchQuery]:
        """The conjunctive queries whose rows are this rule's matches in `egraph`."""

    @abc.abstractmethod
    def fire(self, m: Match) -> list[Result]:
        """Results for one match (empty to decline it)."""

    def select(self, matches: list[Match]) -> list[Match]:
        """The matches of one iteration that should fire (all of them unless a rule says otherwise)."""
        return matches


Builder = Callable[[Match], "Expr | Sequence[Expr] | None"]


DTYPE_GROUPS: dict[str, frozenset[str]] = {
    "float": frozenset({"float16", "bfloat16", "float32", "float64"}),
    "int": frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}),
}
DTYPE_GROUPS["number"] = DTYPE_GROUPS["float"] | DTYPE_GROUPS["int"]


@dataclass(frozen=True, eq=False)
class Rewrite(Rule):
    """`lhs -> rhs` when `when(match)`; several left sides make a multi-pattern rule (one rhs each).

    `dtypes` names the dtype group (`DTYPE_GROUPS`: "float", "int", "number") that the first
    root's result must have for the equality to hold exactly, or None when it holds for every
    dtype the ops accept; the rule declines matches of other dtypes. `lhs` and `rhs` are kept as
    compiled: literals named, the attributes a template call copies by default named on both sides
    (`eqsat.rules.pattern`). A left side with a `many` tuple has one query per tuple size.
    """

    name: str
    lhs: tuple[Pat, ...]
    rhs: tuple[Pat, ...] | Builder
    when: Callable[[Match], bool] | None = None
    dtypes: str | None = None
    exact: bool = True
    """True: both sides give the same bits for every input; False: they agree within float rounding
    (the rule reassociates or refolds float arithmetic), which `check_rule` tests with a tolerance."""
    example: Callable[[], Expr] | None = None
    """a small program the rule fires on (its soundness test, see `check_rule`)."""
    near_misses: tuple[Callable[[], Expr], ...] = ()
    """programs that look like a match but where a guard must refuse (tests check it never fires)."""
    _forms: dict = field(init=False, repr=False)
    """field count of the left side's `many` tuple (None without one) -> its compiled query."""
    _min_parts: int | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.dtypes is not None and self.dtypes not in DTYPE_GROUPS:
            raise RuleError(f"{self.name}: unknown dtype group {self.dtypes!r}; choose from {sorted(DTYPE_GROUPS)}")
        lhs, rhs = self.lhs, self.rhs
        if not callable(rhs):
            if len(rhs) != len(lhs):
                raise RuleError(f"{self.name}: {len(lhs)} left side(s) but {len(rhs)} right side(s)")
            lhs, rhs = copy_attributes(lhs, rhs)
            object.__setattr__(self, "rhs", rhs)
            bound = set().union(*(variables(p) for p in lhs))
            for t in rhs:
                check_template(t, bound, self.name)
        object.__setattr__(self, "lhs", name_literals(lhs))
        object.__setattr__(self, "_min_parts", variadic(lhs))
        object.__setattr__(self, "_forms", {})
        if self._min_parts is None:
            self._form(None)

    def _form(self, parts: int | None) -> CompiledPattern:
        """The query of the left side with its `many` tuple of `parts` fields."""
        if parts not in self._forms:
            self._forms[parts] = compile_patterns(self.lhs, parts)
        return self._forms[parts]

    def queries(self, egraph) -> Sequence[MatchQuery]:
        """One query; with a `many` tuple, one per tuple size the e-graph holds (up to `MAX_PARTS`)."""
        if self._min_parts is None:
            return (self._form(None),)
        sizes = sorted(n for n in tuple_arities(egraph) if self._min_parts <= n <= MAX_PARTS)
        return tuple(self._form(n) for n in sizes)

    def fire(self, m: Match) -> list[Result]:
        if self.dtypes is not None and getattr(m.root_type(), "dtype", None) not in DTYPE_GROUPS[self.dtypes]:
            return []
        if self.when is not None and not self.when(m):
            return []
        if callable(self.rhs):
            built = self.rhs(m)
            if built is UNDECIDED:
                return UNDECIDED
            if built is None:
                return []
            exprs = (built,) if isinstance(built, Expr) else tuple(built)
        else:
            exprs = tuple(instantiate(t, m, i) for i, t in enumerate(self.rhs))
            if any(e is None for e in exprs):
                return []
        return [Result(root, e) for root, e in zip(m.roots, exprs)]


def rule(name: str, lhs: Pat | tuple[Pat, ...], rhs: Pat | tuple[Pat, ...] | Builder,
         when: Callable[[Match], bool] | None = None, *, dtypes: str | None = None, exact: bool = True,
         example: Callable[[], Expr] | None = None,
         near_miss: Callable[[], Expr] | Sequence[Callable[[], Expr]] = ()) -> Rewrite:
    """A declarative rewrite; `rhs` may be a template or a function of the match returning IR.

    `dtypes` restricts it to a dtype group where the equality holds only there; `exact=False`
    declares an equality up to float rounding; `example` and `near_miss` are programs it must
    and must not fire on, which the library's tests run.
    """
    lhs_t = lhs if isinstance(lhs, tuple) else (lhs,)
    rhs_t = rhs if callable(rhs) or isinstance(rhs, tuple) else (rhs,)
    misses = (near_miss,) if callable(near_miss) else tuple(near_miss)
    return Rewrite(name, lhs_t, rhs_t, when, dtypes, exact, example, misses)


def birewrite(name: str, a: Pat, b: Pat, when: Callable[[Match], bool] | None = None, *,
              dtypes: str | None = None, exact: bool = True) -> tuple[Rewrite, Rewrite]:
    """`a -> b` (named `name`) and `b -> a` (named `name-rev`)."""
    return (rule(name, a, b, when, dtypes=dtypes, exact=exact),
            rule(f"{name}-rev", b, a, when, dtypes=dtypes, exact=exact))


@dataclass(frozen=True)
class RuleSet:
    """A named, ordered collection of rules with unique names."""

    name: str
    rules: tuple[Rule, ...]

    def __add__(self, other: "RuleSet") -> "RuleSet":
        return ruleset(f"{self.name}+{other.name}", (*self.rules, *other.rules))

    def __iter__(self):
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.rules]


def ruleset(name: str, rules: Iterable[Rule | Iterable[Rule]]) -> RuleSet:
    """A rule set; nested iterables (e.g. from `birewrite`) are flattened. Names must be unique."""
    flat: list[Rule] = []
    for r in rules:
        flat.extend([r] if isinstance(r, Rule) else r)
    repeated = sorted(n for n, k in Counter(r.name for r in flat).items() if k > 1)
    if repeated:
        raise RuleError(f"{name}: rule names key the reports, so they must be unique: {repeated}")
    return RuleSet(name, tuple(flat))
