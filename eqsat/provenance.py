"""Which rules made each node of an extracted program: a rule chain per e-node, empty for input nodes.

The e-graph records every rule result it lowered (`EGraph.applications`: the rule, the e-nodes
it made, its root). A result's *chain* is its own rule preceded by the chains of the rule-made
e-nodes its match used, in the order they were applied; every e-node the result made shares it.
The match is found again in the saturated e-graph: the first match of the rule's left side
(`rules.lhs`) at the result's class among the e-nodes the search that found it could see, input
forms first. Where none is found (a callback whose match needed a dominator region, say), the
chain is the rule alone.

    bias_add(dense(x, w), b)  --bias-add-as-add-->  add(dense(x, w), b)  --dense-bias-->  dense_bias_act(x, w, b)
    the fused node's chain: ("bias-add-as-add", "dense-bias")
"""

from __future__ import annotations

from functools import cached_property
from typing import Iterator, Mapping

from ir import Expr
from ir.dataflow_pattern.explain import Explainer

from .egraph.egraph import EGraph
from .egraph.pattern_graph import EGraphForms
from .egraph.view import EGraphView, NodeId
from .rules.lhs import left_sides

__all__ = ["Provenance", "Chains"]


class Provenance:
    """Rule chains of the e-nodes of one saturated e-graph (computed on demand, then kept)."""

    def __init__(self, egraph: EGraph, view: EGraphView):
        self.egraph, self.view = egraph, view
        self._rules = egraph.registered_rules()
        self._ancestors: dict[int, frozenset[int]] = {}

    def chain(self, node: NodeId) -> tuple[str, ...]:
        """The rules that made e-node `node`, in the order they were applied (empty: an input node)."""
        app = self._application(node)
        if app is None:
            return ()
        return tuple(self.egraph.applications[a].rule for a in sorted(self._ancestors_of(app)))

    def rule_made(self, node: NodeId) -> bool:
        """Whether a rule made e-node `node` (its chain is not empty), without finding the chain."""
        return self._application(node) is not None

    def _application(self, node: NodeId) -> int | None:
        return self.egraph.application_of(self.view.births[node]) if self.view.births else None

    def _ancestors_of(self, app: int) -> frozenset[int]:
        done = self._ancestors.get(app)
        if done is None:
            found = {app}
            for node in self._used(app):
                earlier = self._application(node)
                if earlier is not None:
                    found |= self._ancestors_of(earlier)
            done = self._ancestors[app] = frozenset(found)
        return done

    def _used(self, app: int) -> list[NodeId]:
        """The e-nodes of the match behind application `app` (empty when it cannot be found)."""
        applied = self.egraph.applications[app]
        rule = self._rules.get(applied.rule)
        if rule is None:
            return []
        graph = EGraphForms(self.view, before=self.egraph.visible_before(applied.first))
        root = self.egraph.canonical(applied.root)
        for pattern in left_sides(rule):
            walk = Explainer(graph)
            if walk.visit(pattern, root) is None:
                return [n for form in walk.forms.values() if (n := graph.node_of(form)) is not None]
        return []


class Chains(Mapping[Expr, tuple[str, ...]]):
    """Each rule-made node of a lifted program -> its rule chain, all computed when one is first read
    (finding a chain's matches again is work a caller that never reads them does not wait for)."""

    def __init__(self, provenance: Provenance, built: Mapping[int, object], node_of: Mapping[int, NodeId]):
        """`built`: e-class -> the program's node for it; `node_of`: e-class -> the e-node chosen."""
        self._provenance, self._built, self._node_of = provenance, built, node_of

    @cached_property
    def _chains(self) -> dict[Expr, tuple[str, ...]]:
        return {node: chain for c, node in self._built.items()
                if isinstance(node, Expr) and (chain := self._provenance.chain(self._node_of[c]))}

    def __getitem__(self, node: Expr) -> tuple[str, ...]:
        return self._chains[node]

    def __iter__(self) -> Iterator[Expr]:
        return iter(self._chains)

    def __len__(self) -> int:
        return len(self._chains)
