"""The rule library: named rule sets, and `resolve_rules` to turn names or callbacks into one set.

| name       | what                                                                  |
|------------|-----------------------------------------------------------------------|
| `simplify` | idempotence, cancellation (transpose, reshape, negation), x + 0, x * 1 |
| `folding`  | inference batch norm into an affine map, or into the preceding conv2d |
| `fusion`   | conv/dense + bias + activation, bias + gelu, add + layer norm, scaled matmul; bias_add as add |
| `merge`    | two conv2d / dense sharing an input become one wider op and a split   |
| `ac`       | commutativity and associativity of add and multiply (grows without bound) |
| `default`  | simplify + folding + fusion + merge                                   |
| `all`      | default + ac                                                          |
"""

from __future__ import annotations

from typing import Iterable

from ir.dataflow_pattern import DFPatternCallback

from ...errors import RuleError
from ..callback import CallbackRule
from ..rule import Rule, RuleSet, ruleset
from .ac import AC
from .folding import FOLDING
from .fusion import FUSION
from .merge import MERGE
from .simplify import SIMPLIFY

__all__ = ["RULESETS", "resolve_rules", "AC", "FOLDING", "FUSION", "MERGE", "SIMPLIFY"]

_DEFAULT = ruleset("default", [*SIMPLIFY, *FOLDING, *FUSION, *MERGE])
RULESETS: dict[str, RuleSet] = {
    "simplify": SIMPLIFY, "folding": FOLDING, "fusion": FUSION, "merge": MERGE, "ac": AC,
    "default": _DEFAULT, "all": ruleset("all", [*_DEFAULT, *AC]),
}


def resolve_rules(rules: str | RuleSet | Rule | DFPatternCallback | Iterable[Rule | DFPatternCallback]) -> RuleSet:
    """One rule set from a library name (`"fusion+ac"` joins sets), a rule set, rules or callbacks."""
    if isinstance(rules, RuleSet):
        return rules
    if isinstance(rules, str):
        names = [n.strip() for n in rules.split("+")]
        unknown = [n for n in names if n not in RULESETS]
        if unknown:
            raise RuleError(f"unknown rule set(s) {unknown}; choose from {sorted(RULESETS)} (join with '+')")
        return ruleset(rules, [r for n in names for r in RULESETS[n]])
    items = [rules] if isinstance(rules, (Rule, DFPatternCallback)) else list(rules)
    out = []
    for item in items:
        if isinstance(item, DFPatternCallback):
            out.append(CallbackRule(item))
        elif isinstance(item, Rule):
            out.append(item)
        else:
            raise RuleError(f"expected rules or DFPatternCallback objects, got {type(item).__name__} {item!r}")
    return ruleset("custom", out)
