"""A plain-data snapshot of an e-graph: what extractors, costs and lifting work on.

Classes are named by `ClassId`s (the smallest handle of the class, so names are stable across
runs), e-nodes by their index in `nodes`. Nodes are sorted by class, then kind and payload, so
that everything downstream iterates in a deterministic order. A view can also be built by hand
(`EGraphView.build`), which is how tests make e-graphs with cycles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable, Mapping, Sequence

from ir import Attrs, Constant, Function, Var
from ir.types import Type

from .terms import Kind

__all__ = ["ClassId", "NodeId", "ENode", "ClosedRegion", "EGraphView"]

ClassId = int
NodeId = int


@dataclass(frozen=True, slots=True)
class ENode:
    """One e-node: `kind`, payload (for calls: op name and `Attrs`), child classes, own class."""

    kind: Kind
    payload: tuple
    children: tuple[ClassId, ...]
    eclass: ClassId

    @property
    def op(self) -> str | None:
        """The op name of a call node; None for every other kind."""
        return self.payload[0] if self.kind is Kind.CALL else None

    @property
    def attrs(self) -> Attrs:
        return self.payload[1] if self.kind is Kind.CALL else Attrs()

    def label(self) -> str:
        if self.kind is Kind.CALL:
            return self.payload[0]
        if self.kind in (Kind.VAR, Kind.GETITEM):
            return f"{self.kind}:{self.payload[0]}"
        return str(self.kind)


@dataclass(frozen=True, slots=True)
class ClosedRegion:
    """A dominator region a rule fused into `node`: if `node` is extracted, no extracted node outside
    the region may use its `interior` classes (an intermediate may not escape the fused op)."""

    node: NodeId
    interior: frozenset[ClassId]


def _sort_keys(nodes: Sequence[tuple]) -> list[tuple]:
    """(class, kind, payload, children) per node, with call attributes as text (one repr per `Attrs`)."""
    texts: dict[int, str] = {}
    keys = []
    for kind, payload, children, eclass in nodes:
        if kind is Kind.CALL:
            attrs = payload[1]
            text = texts.get(id(attrs))
            if text is None:
                text = texts[id(attrs)] = repr(tuple(attrs.items()))
            payload = (payload[0], text)
        keys.append((eclass, kind.value, payload, children))
    return keys


@dataclass(frozen=True)
class EGraphView:
    """Nodes, classes, class types, roots and extraction constraints of one e-graph snapshot."""

    nodes: tuple[ENode, ...]
    classes: Mapping[ClassId, tuple[NodeId, ...]]
    types: Mapping[ClassId, Type | None]
    roots: tuple[ClassId, ...]
    closed_regions: tuple[ClosedRegion, ...] = ()
    variables: Mapping[str, Var] = field(default_factory=dict)
    constants: Mapping[str, Constant] = field(default_factory=dict)
    functions: Mapping[str, Function] = field(default_factory=dict)
    origins: tuple[str | None, ...] = ()
    """per node, the rule that made it (None: lowered from the input); empty when no rule made any."""
    births: tuple[int, ...] = ()
    """per node, the e-graph handle it was first added under, so creation order (`EGraph.application_of`
    tells which rule result made it); empty when no rule made any node."""

    @staticmethod
    def build(nodes: Iterable[tuple[Kind, tuple, Sequence[ClassId], ClassId]],
              types: Mapping[ClassId, Type | None], roots: Sequence[ClassId],
              closed_regions: Iterable[ClosedRegion] = (), origins: Sequence[str | None] = (),
              births: Sequence[int] = (), **tables: Any) -> "EGraphView":
        """A view from `(kind, payload, children, class)` tuples; nodes are put in canonical order.

        `closed_regions`, `origins` and `births` (one per node, or none) refer to positions in the given `nodes`.
        """
        given = [(k, tuple(p), tuple(c), e) for k, p, c, e in nodes]
        keys = _sort_keys(given)
        order = sorted(range(len(given)), key=keys.__getitem__)
        position = {old: new for new, old in enumerate(order)}
        enodes = tuple(ENode(*given[i]) for i in order)
        classes: dict[ClassId, list[NodeId]] = {}
        for i, n in enumerate(enodes):
            classes.setdefault(n.eclass, []).append(i)
        missing = sorted({c for n in enodes for c in n.children if c not in classes} |
                         {r for r in roots if r not in classes})
        if missing:
            raise ValueError(f"e-graph view refers to classes without nodes: {missing[:10]}")
        regions = tuple(ClosedRegion(position[x.node], x.interior) for x in closed_regions)
        ordered_origins = tuple(origins[i] for i in order) if origins else ()
        ordered_births = tuple(births[i] for i in order) if births else ()
        return EGraphView(enodes, {c: tuple(ns) for c, ns in sorted(classes.items())},
                          {c: types.get(c) for c in classes}, tuple(roots), regions, origins=ordered_origins,
                          births=ordered_births, **tables)

    @cached_property
    def parents(self) -> Mapping[ClassId, tuple[NodeId, ...]]:
        """class -> the nodes that use it as a child (each node once per class)."""
        out: dict[ClassId, list[NodeId]] = {c: [] for c in self.classes}
        for i, n in enumerate(self.nodes):
            for c in dict.fromkeys(n.children):
                out[c].append(i)
        return {c: tuple(ns) for c, ns in out.items()}

    def reachable(self, roots: Iterable[ClassId] | None = None) -> list[ClassId]:
        """Classes reachable from `roots` (default: the view's roots) through any node, sorted."""
        seen: set[ClassId] = set()
        stack = list(self.roots if roots is None else roots)
        while stack:
            c = stack.pop()
            if c in seen:
                continue
            seen.add(c)
            for n in self.classes[c]:
                stack.extend(k for k in self.nodes[n].children if k not in seen)
        return sorted(seen)
