"""Installing a rule in an e-graph: its e-matching queries, compiled and loaded once per e-graph."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..egraph.egraph import EGraph

__all__ = ["install_rule"]


def install_rule(egraph: "EGraph", rule) -> tuple[str, list[tuple[str, object]]]:
    """Load `rule`'s queries into `egraph`'s backend (once per rule); returns its backend key and
    its (query name, query) pairs, which a search names to read the rule's matches."""
    entry = egraph.installed_rules.get(id(rule))
    if entry is None:
        key = f"rule{len(egraph.installed_rules)}"
        queries = [(f"{key}_{i}", mq) for i, mq in enumerate(rule.queries(egraph))]
        egraph.backend.add_rule_queries(key, {name: mq.query for name, mq in queries})
        entry = egraph.installed_rules[id(rule)] = (rule, key, queries)
    return entry[1], entry[2]
