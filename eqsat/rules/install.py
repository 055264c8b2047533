"""Installing a rule in an e-graph: its e-matching queries, compiled and loaded once per e-graph.

Loading a rule's queries into egglog is most of what a small program's saturation costs (a
millisecond a rule, two hundred rules), and most rules of a set cannot match a given program: a
query that needs a call of an op the e-graph holds no e-node of has no match. `can_match` says
whether a rule could match now, so a saturation installs a rule when it first could (the e-graph
only grows: a rule that could match stays so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..egraph.terms import Kind

if TYPE_CHECKING:
    from ..egraph.egraph import EGraph

__all__ = ["install_rule", "can_match"]


def install_rule(egraph: "EGraph", rule) -> tuple[str, list[tuple[str, object]]]:
    """Load `rule`'s queries into `egraph`'s backend (once per rule); returns its backend key and
    its (query name, query) pairs, which a search names to read the rule's matches."""
    entry = egraph.installed_rules.get(id(rule))
    if entry is None:
        key = f"rule{len(egraph.installed_rules)}"
        queries = [(f"{key}_{i}", mq) for i, mq in enumerate(_prepared(egraph, rule)[0])]
        egraph.backend.add_rule_queries(key, {name: mq.query for name, mq in queries})
        entry = egraph.installed_rules[id(rule)] = (rule, key, queries)
    return entry[1], entry[2]


def can_match(egraph: "EGraph", rule) -> bool:
    """Whether some query of `rule` could match `egraph`: every call it names by op and number of
    arguments is the shape of some e-node of the e-graph (`EGraph.call_shapes`). The queries are
    those of the e-graph when first asked (a rule with one query per tuple size present, say)."""
    needs = _prepared(egraph, rule)[1]
    return not needs or any(need <= egraph.call_shapes for need in needs)


def _prepared(egraph: "EGraph", rule) -> tuple[list, list[frozenset[tuple[str, int]]]]:
    """`rule`'s queries in `egraph` (made once) and, per query, the call shapes it names."""
    entry = egraph.prepared_rules.get(id(rule))
    if entry is None:
        queries = list(rule.queries(egraph))
        needs = [frozenset((a.payload[0], len(a.children)) for a in mq.query.atoms
                           if a.kind is Kind.CALL and isinstance(a.payload[0], str)) for mq in queries]
        entry = egraph.prepared_rules[id(rule)] = (rule, queries, needs)
    return entry[1], entry[2]
