"""The regions that pay: programs that keep only part of ours, for when ours is not faster than the input.

Ours differs from the input by the op families its rewrites brought in: ops the input does not
call (`families`). The cost model can rate a family well that runs slowly in the session, while
the rest of ours pays. `without` extracts again from the same saturated e-graph with a family's
ops priced at `math.inf` (`Forbidding`), so the extractor takes the other forms the e-graph holds
for those regions. `eqsat.onnx_io.faster_of` times such programs against the input, largest
estimated saving first, at most `MAX_VARIANTS` of them, and verifies one where it runs only once it
is timed faster (`eqsat.optimize.verified`, which fails closed): a program that is not kept costs
no verification.

The ops the blocked-layout rules made (`layout_transform`, the NCHWc convolutions, and the pools,
pads and slices those rules moved onto blocked values) are one family: each reads or writes blocked
values, so leaving out one side leaves out the others.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import ir
from ir import Attrs
from ir.types import Type

from .extract import CostModel
from .optimize import Optimized, extract_for, op_counts
from .rules.library import RULESETS

__all__ = ["Family", "Forbidding", "families", "without", "MAX_VARIANTS", "BLOCKED_LAYOUT"]

MAX_VARIANTS = 2
"""programs without a family that are extracted and timed at most, after ours (and while the verdict's
time lasts: `eqsat.speed.VERDICT_SECONDS`)."""
BLOCKED_LAYOUT = "blocked layout"
"""the family of the ops that only the blocked-layout rules (`RULESETS["layout"]`) made."""


@dataclass(frozen=True)
class Family:
    """Ops of ours that the input does not call, left out together; `saving` is the cost model's
    estimate of what their regions save (`Optimized.changes`), in its unit."""

    name: str
    ops: tuple[str, ...]
    saving: float


@dataclass(frozen=True)
class Forbidding:
    """`model`, with every call of `ops` priced at `math.inf`: never extracted."""

    model: CostModel
    ops: frozenset[str]

    def node_cost(self, op_name: str, attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> float:
        if op_name in self.ops:
            return math.inf
        return self.model.node_cost(op_name, attrs, in_types, out_type)


def _blocked_layout_ops(res: Optimized) -> set[str]:
    """The ops every call of which in `res`'s program was made by a blocked-layout rule."""
    layout = {r.name for r in RULESETS["layout"]}
    made: dict[str, bool] = {}
    for node in ir.post_order(res.mod["main"].body):
        if isinstance(node, ir.Call) and isinstance(node.op, ir.Op):
            made[node.op.name] = made.get(node.op.name, True) and bool(layout.intersection(res.rules_of(node)))
    return {op for op, by_layout in made.items() if by_layout}


def families(res: Optimized) -> list[Family]:
    """The op families `res` brought in (ops it calls and its input does not): one per op, except that
    the ops of the blocked layout are one; largest estimated saving first, then by name."""
    blocked = _blocked_layout_ops(res)
    groups: dict[str, list[str]] = {}
    for op, count in sorted(res.op_counts_after.items()):
        if count and not res.op_counts_before.get(op):
            groups.setdefault(BLOCKED_LAYOUT if op in blocked else op, []).append(op)
    saving: Counter[str] = Counter()
    for change in res.changes:
        if math.isfinite(change.cost_before - change.cost_after):
            saving[change.op] += change.cost_before - change.cost_after
    found = [Family(name, tuple(ops), sum(saving[op] for op in ops)) for name, ops in groups.items()]
    return sorted(found, key=lambda f: (-f.saving, f.name))


def without(res: Optimized, family: Family) -> Optimized:
    """`res`'s program extracted again from its saturated e-graph with `family`'s ops forbidden, by the
    same extractor; not verified yet (`eqsat.optimize.verified` verifies it as `optimize` would)."""
    if res.saturated is None or res.spec is None:
        raise ValueError("a program without some families is extracted from the saturated e-graph of an "
                         "optimize result; this result has none")
    sat = res.saturated
    spec = dataclasses.replace(res.spec, model=Forbidding(res.spec.model, frozenset(family.ops)))
    out = extract_for(sat, spec, res.extractor, source=sat.input_module(), trials=0)
    return dataclasses.replace(res, mod=out.mod, params=out.params, cost_after=out.cost_after, choice=out.choice,
                               extract_seconds=out.seconds, info=dict(out.choice.info),
                               op_counts_after=dict(sorted(op_counts(out.mod).items())), changes=out.changes,
                               verification=None, unverified="not verified yet", provenance=out.provenance,
                               coverage=None, spec=spec, built=out.built)
