"""What an extraction changed: each rule-made node of the extracted program, and its costs.

A *change* is a chosen e-node that a rule made, in a class of the input program (or a program
output): the class now computes differently. Its cost *after* sums the node and the rule-made
nodes below it in classes that did not exist in the input program (e.g. the concatenated weights
and the wide convolution behind a merged pair). Its cost *before* sums the input program's nodes
it replaced: the class's input node and those below it, through input nodes, that the extracted
program no longer computes. A node reached from two changes is counted once, in the first (in
program order). For `strategies` cost models each change also names the implementation the
cost model assumed for the node and why (tuned record, highest plevel, or generic fallback).

*Provenance* goes further back: every node of the program carries the chain of rules that made
it (`eqsat.provenance`), e.g. `bias-add-as-add > dense-bias` for a fused dense; `format_provenance`
counts nodes per chain and `provenance_records` lists them node by node (the CLI's JSON report).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import strategies
from ir import Call, Expr, IRModule, Op, get_op, post_order
from ir.printer import node_names

from .egraph.terms import Kind
from .egraph.view import ClassId, EGraphView, NodeId
from .extract import Choice

__all__ = ["Change", "find_changes", "format_changes", "format_provenance", "provenance_records"]


@dataclass(frozen=True)
class Change:
    """One rule-made node of the extracted program: its rule and op, the new nodes under it, costs."""

    rule: str
    op: str
    nodes: int
    """the node and the rule-made nodes below it in classes the input program did not have."""
    cost_before: float
    cost_after: float
    implementation: str | None = None
    reason: str | None = None
    """why the cost model assumed that implementation: "tuned ...", "plevel ...", "fallback ..."."""


def _implementation(model: Any, view: EGraphView, n: NodeId) -> tuple[str | None, str | None]:
    """The implementation a `strategies.CostModel` assumed for call node `n`, and the reason."""
    node = view.nodes[n]
    if not isinstance(model, strategies.CostModel) or node.kind is not Kind.CALL:
        return None, None
    op = get_op(node.op)
    workload = strategies.Workload(op.name, node.attrs, tuple(view.types[k] for k in node.children),
                                   view.types[node.eclass])
    if not workload.static:
        impl = model.implementation(op.name, node.attrs, workload.in_types, workload.out_type)
        return impl, "symbolic shapes: highest plevel"
    try:
        sel = strategies.select_implementation(workload, model.target, model.history)
    except strategies.NoImplementationError:
        return None, "no implementation"
    if sel.reason == "tuned":
        why = f"tuned, {sel.measured_us:.3g} us measured"
    elif sel.reason == "fallback":
        why = f"generic fallback, plevel {sel.implementation.plevel}"
    else:
        why = f"plevel {sel.implementation.plevel}, highest of {len(sel.candidates)}"
    return sel.implementation.name, why


def find_changes(view: EGraphView, choice: Choice, costs: Sequence[float], model: Any = None) -> list[Change]:
    """The changes of `choice` against the input program, in program order (none when no rule made a node)."""
    if not view.origins:
        return []
    order = choice.classes(view)
    reachable = set(order)
    input_node = {c: next((n for n in ns if view.origins[n] is None), None) for c, ns in view.classes.items()}
    made = {c for c in order if view.origins[choice.node_of[c]] is not None}
    taken_after: set[ClassId] = set()
    taken_before: set[ClassId] = set()
    changes = []
    for top in order:
        if top not in made or (input_node[top] is None and top not in choice.roots):
            continue
        after = _walk(top, taken_after, lambda c: [k for k in view.nodes[choice.node_of[c]].children
                                                   if k in made and input_node[k] is None])
        before = _walk(top, taken_before, lambda c: [] if input_node[c] is None else [
            k for k in view.nodes[input_node[c]].children if k not in reachable and input_node[k] is not None])
        n = choice.node_of[top]
        impl, why = _implementation(model, view, n) if model is not None else (None, None)
        changes.append(Change(str(view.origins[n]), view.nodes[n].label(), len(after),
                              sum(costs[input_node[c]] for c in before if input_node[c] is not None),
                              sum(costs[choice.node_of[c]] for c in after), impl, why))
    return changes


def _walk(start: ClassId, taken: set[ClassId], successors) -> list[ClassId]:
    """Classes reachable from `start` through `successors`, skipping (and then marking) taken ones."""
    out: list[ClassId] = []
    stack = [start]
    while stack:
        c = stack.pop()
        if c in taken:
            continue
        taken.add(c)
        out.append(c)
        stack.extend(successors(c))
    return out


def format_changes(changes: Sequence[Change], unit: str, limit: int = 20) -> str:
    """One line per (rule, op, implementation), largest saving first, at most `limit` lines."""
    groups: dict[tuple, list[Change]] = defaultdict(list)
    for ch in changes:
        groups[(ch.rule, ch.op, ch.implementation, ch.reason)].append(ch)
    rows = []
    for (rule, op, impl, why), members in groups.items():
        before = sum(c.cost_before for c in members)
        after = sum(c.cost_after for c in members)
        line = f"{rule}: {len(members)} x {op}, {before:.4g} -> {after:.4g} {unit}"
        if impl is not None or why is not None:
            line += f" [{impl or '-'}: {why}]"
        rows.append((after - before, rule, op, line))
    rows.sort()
    lines = [line for *_, line in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"... and {len(rows) - limit} more")
    return "\n".join(lines) if lines else "no rule-made node was extracted"


def _label(node: Expr) -> str:
    if isinstance(node, Call):
        return node.op.name if isinstance(node.op, Op) else "call"
    return type(node).__name__.lower()


def _program_nodes(mod: IRModule) -> list[Expr]:
    return [n for n in post_order(mod["main"].body) if not isinstance(n, Op)]


def format_provenance(mod: IRModule, provenance: Mapping[Expr, Sequence[str]], limit: int = 20) -> str:
    """How many nodes of `mod` came from the input, and per (op, rule chain) how many rules made."""
    nodes = _program_nodes(mod)
    chains = Counter((_label(n), tuple(chain)) for n in nodes if (chain := provenance.get(n)))
    made = sum(chains.values())
    lines = [f"provenance: {len(nodes) - made} of {len(nodes)} node(s) from the input, {made} made by rules"]
    for (op, chain), count in sorted(chains.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]:
        lines.append(f"  {count} x {op}: {' > '.join(chain)}")
    if len(chains) > limit:
        lines.append(f"  ... and {len(chains) - limit} more chains")
    return "\n".join(lines)


def provenance_records(mod: IRModule, provenance: Mapping[Expr, Sequence[str]]) -> list[dict[str, Any]]:
    """One record per node of `mod`'s main, in program order: its printed name (`%3`, `%x`; "result"
    for the returned value, "const" for unnamed constants), its op or kind, and its rule chain
    (empty for a node of the input)."""
    names = node_names(mod)
    body = mod["main"].body
    return [{"node": names.get(n, "result" if n is body else "const"), "op": _label(n),
             "rules": list(provenance.get(n, ()))} for n in _program_nodes(mod)]
