"""Extractors over an `EGraphView`, all measured with the same `Choice.dag_cost`."""

from __future__ import annotations

from .base import Choice, CostModel, Extractor, OpCount
from .cost import node_costs
from .greedy import GreedyDagExtractor
from .ilp import IlpExtractor
from .tree import TreeExtractor

__all__ = ["Choice", "CostModel", "Extractor", "OpCount", "node_costs", "TreeExtractor", "GreedyDagExtractor",
           "IlpExtractor", "EXTRACTORS", "get_extractor"]

EXTRACTORS: dict[str, Extractor] = {e.name: e for e in (TreeExtractor(), GreedyDagExtractor(), IlpExtractor())}


def get_extractor(name: str | Extractor) -> Extractor:
    """The registered extractor `name` ("tree", "greedy", "ilp"), or `name` itself if it is one."""
    if not isinstance(name, str):
        return name
    try:
        return EXTRACTORS[name]
    except KeyError:
        raise ValueError(f"unknown extractor {name!r}; choose one of {sorted(EXTRACTORS)}") from None
