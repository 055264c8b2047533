"""Bounded pictures of an e-graph: the neighbourhood of one e-class as networkx, DOT or text.

A saturated real model has thousands of e-classes, and a drawing of all of them shows nothing.
`neighbourhood` walks out from one e-class, breadth first, to its operands, its users or both,
for at most `depth` steps, and keeps at most `max_nodes` e-nodes (a chosen node first, then
the nodes on the path walked, then by id). Classes that kept nodes point to but that were not
kept stay visible as stubs, so every edge still says where it goes.

    view = lowered.view()                                     # or Saturated.view
    hood = neighbourhood(view, view.roots[0], depth=2, max_nodes=30, choice=choice, costs=costs)
    print(describe_eclass(view, view.roots[0], costs=costs, choice=choice))
    Path("root.dot").write_text(to_dot(hood))                # e-classes drawn as clusters
    graph = to_networkx(hood)                                 # e-class and e-node vertices
    render(to_dot(hood), "root.svg")                          # needs Graphviz's `dot` program

Everything works on `EGraphView` (plain data) and is deterministic: the same view and arguments
give the same text.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections import deque
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

import networkx as nx

from ir.op.registry import REQUIRED, get_op

from .egraph.terms import Kind
from .egraph.view import ClassId, EGraphView, ENode, NodeId
from .errors import EqsatError
from .extract import Choice, CostModel
from .extract.cost import resolve_costs

__all__ = ["Neighbourhood", "DIRECTIONS", "neighbourhood", "to_networkx", "to_dot", "describe_eclass",
           "eclasses_with_op", "render"]

Direction = Literal["operands", "users", "both"]
DIRECTIONS: tuple[Direction, ...] = ("operands", "users", "both")
_ATTR_TEXT_WIDTH = 48  # attribute text shown in a drawn node; `describe_eclass` shows all of it


@dataclass(frozen=True)
class Neighbourhood:
    """The part of an e-graph around `center` that `neighbourhood` kept, and how to show it."""

    view: EGraphView
    center: ClassId
    depth: Mapping[ClassId, int]
    """kept e-classes -> steps from the center, in the order they were reached."""
    nodes: Mapping[ClassId, tuple[NodeId, ...]]
    """the kept e-nodes of each kept e-class (a class may have more, see `hidden`)."""
    stubs: tuple[ClassId, ...]
    """e-classes that kept nodes use as operands but that were not kept."""
    chosen: frozenset[NodeId]
    """e-nodes of the program a `Choice` extracts (drawn highlighted); empty without one."""
    costs: Sequence[float] | None
    """cost of every e-node of the view, when costs were given."""

    @property
    def classes(self) -> tuple[ClassId, ...]:
        return tuple(self.depth)

    def hidden(self, eclass: ClassId) -> int:
        """How many e-nodes of a kept class were left out by the node budget."""
        return len(self.view.classes[eclass]) - len(self.nodes[eclass])

    @property
    def node_count(self) -> int:
        return sum(len(ns) for ns in self.nodes.values())


def _check_class(view: EGraphView, eclass: ClassId) -> None:
    if eclass not in view.classes:
        low, high = min(view.classes), max(view.classes)
        raise EqsatError(f"e-class {eclass} is not in this e-graph ({len(view.classes)} e-classes, ids {low}..{high})")


def _costs_of(view: EGraphView, costs: CostModel | Sequence[float] | None) -> Sequence[float] | None:
    return None if costs is None else resolve_costs(view, costs)


def neighbourhood(view: EGraphView, eclass: ClassId, *, depth: int = 2, max_nodes: int = 40,
                  direction: Direction = "operands", choice: Choice | None = None,
                  costs: CostModel | Sequence[float] | None = None) -> Neighbourhood:
    """The e-classes within `depth` steps of `eclass` and at most `max_nodes` of their e-nodes.

    `direction` says which edges a step follows: "operands" (an e-node's child classes), "users"
    (the classes of e-nodes that use a class) or "both". Classes are visited breadth first, in
    id order within a step. `choice` marks the e-nodes of the program it extracts; `costs` (a
    `CostModel` or one number per e-node) labels every e-node with its own cost.
    """
    _check_class(view, eclass)
    if depth < 0 or max_nodes < 1:
        raise ValueError(f"neighbourhood needs depth >= 0 and max_nodes >= 1, got depth={depth}, "
                         f"max_nodes={max_nodes}")
    if direction not in DIRECTIONS:
        raise ValueError(f"neighbourhood direction must be one of {DIRECTIONS}, got {direction!r}")
    chosen = frozenset(choice.node_of[c] for c in choice.classes(view)) if choice is not None else frozenset()
    reached = {eclass: 0}
    via: dict[ClassId, set[NodeId]] = {}  # nodes of a class through which the walk reached it
    kept: dict[ClassId, tuple[NodeId, ...]] = {}
    budget = max_nodes
    queue = deque([eclass])
    while queue and budget:
        cls = queue.popleft()
        first = via.get(cls, set())
        members = sorted(view.classes[cls], key=lambda n: (n not in chosen, n not in first, n))
        kept[cls] = tuple(members[:budget])
        budget -= len(kept[cls])
        if reached[cls] == depth:
            continue
        step: dict[ClassId, None] = {}
        if direction in ("operands", "both"):
            step.update(dict.fromkeys(k for n in kept[cls] for k in view.nodes[n].children))
        if direction in ("users", "both"):
            for n in view.parents[cls]:
                step.setdefault(view.nodes[n].eclass)
                via.setdefault(view.nodes[n].eclass, set()).add(n)
        for k in sorted(step):
            if k not in reached:
                reached[k] = reached[cls] + 1
                queue.append(k)
    operands = dict.fromkeys(k for ns in kept.values() for n in ns for k in view.nodes[n].children)
    stubs = tuple(k for k in operands if k not in kept)
    return Neighbourhood(view, eclass, {c: reached[c] for c in kept}, kept, stubs, chosen, _costs_of(view, costs))


def eclasses_with_op(view: EGraphView, op_name: str) -> list[ClassId]:
    """The e-classes holding at least one call of `op_name`, in id order."""
    return sorted({n.eclass for n in view.nodes if n.op == op_name})


# -- text of one e-node ----------------------------------------------------------------------------------

@cache
def _defaults(op_name: str) -> Mapping[str, Any]:
    """An op's attribute defaults in their canonical form (floats held at float32, like given values)."""
    op = get_op(op_name)
    return {f.name: None if f.default is None else f.normalize(op_name, f.default)
            for f in op.attr_fields if f.default is not REQUIRED}


def _value_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, tuple):
        return "(" + ", ".join(map(_value_text, value)) + ")"
    return repr(value)


def _attr_text(node: ENode) -> str:
    """The attributes of a call that differ from the op's defaults, as `key=value` pairs."""
    if node.kind is not Kind.CALL or not node.attrs:
        return ""
    defaults = _defaults(node.op)
    return " ".join(f"{k}={_value_text(v)}" for k, v in node.attrs.items() if defaults.get(k, REQUIRED) != v)


def _head(view: EGraphView, node: ENode) -> str:
    """A short name for an e-node: its op, variable name, constant shape or structural kind."""
    if node.kind is Kind.CALL:
        return node.op
    if node.kind is Kind.VAR:
        return f"var {node.payload[0]}"
    if node.kind is Kind.CONST:
        shape = getattr(view.types.get(node.eclass), "shape", None)
        return f"const {list(shape)}" if shape is not None else "const"
    if node.kind is Kind.GETITEM:
        return f"getitem[{node.payload[0]}]"
    if node.kind is Kind.FUNC:
        return f"fn {node.payload[0][:8]}"
    return str(node.kind)


def _cost_text(costs: Sequence[float] | None, n: NodeId) -> str:
    if costs is None:
        return ""
    return "cost inf (illegal)" if math.isinf(costs[n]) else f"cost {costs[n]:.4g}"


def describe_eclass(view: EGraphView, eclass: ClassId, *, costs: CostModel | Sequence[float] | None = None,
                    choice: Choice | None = None) -> str:
    """A text summary of one e-class: its type, users, and every e-node with op, attributes and cost.

    With a `choice`, the header says whether the class is in the program it extracts, and a `*`
    marks the e-node the program uses.
    """
    _check_class(view, eclass)
    node_costs = _costs_of(view, costs)
    in_program = choice is not None and eclass in choice.classes(view)
    picked = choice.node_of[eclass] if in_program else None
    members = view.classes[eclass]
    users = view.parents[eclass]
    user_classes = {view.nodes[n].eclass for n in users}
    head = [f"e-class {eclass}: {view.types.get(eclass)}", f"{len(members)} e-node(s)",
            f"used by {len(users)} e-node(s) in {len(user_classes)} e-class(es)"]
    if eclass in view.roots:
        head.append("root")
    if choice is not None:
        head.append("in the extracted program" if in_program else "not in the extracted program")
    lines = [" · ".join(head)]
    for n in members:
        node = view.nodes[n]
        operands = f"({', '.join(f'c{k}' for k in node.children)})" if node.children else ""
        parts = [f"{'*' if n == picked else ' '} n{n}  {_head(view, node)}{operands}", _attr_text(node),
                 _cost_text(node_costs, n)]
        lines.append("  ".join(p for p in parts if p))
    return "\n".join(lines)


# -- networkx and DOT --------------------------------------------------------------------------------------

def to_networkx(hood: Neighbourhood) -> nx.DiGraph:
    """The neighbourhood as a bipartite DiGraph: `c<id>` e-class vertices and `n<id>` e-node vertices.

    Edges run e-class -> member e-node (`role="member"`) and e-node -> operand e-class
    (`role="operand"`, `positions` = the argument positions). E-class vertices carry `type`,
    `depth` (None for stubs), `stub` and `hidden`; e-node vertices carry `eclass`, `label`, `op`,
    `attrs` (non-default, as text), `chosen` and `cost` (None without costs).
    """
    view = hood.view
    graph = nx.DiGraph(center=f"c{hood.center}")
    for c in (*hood.classes, *hood.stubs):
        stub = c not in hood.nodes
        graph.add_node(f"c{c}", kind="eclass", eclass=c, type=str(view.types.get(c)), stub=stub,
                       depth=None if stub else hood.depth[c], hidden=len(view.classes[c]) if stub else hood.hidden(c))
    for c, members in hood.nodes.items():
        for n in members:
            node = view.nodes[n]
            graph.add_node(f"n{n}", kind="enode", eclass=c, label=_head(view, node), op=node.op,
                           attrs=_attr_text(node), chosen=n in hood.chosen,
                           cost=None if hood.costs is None else hood.costs[n])
            graph.add_edge(f"c{c}", f"n{n}", role="member")
            positions: dict[ClassId, list[int]] = {}
            for i, k in enumerate(node.children):
                positions.setdefault(k, []).append(i)
            for k, where in positions.items():
                graph.add_edge(f"n{n}", f"c{k}", role="operand", positions=tuple(where))
    return graph


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _quote(text: str) -> str:
    return f'"{_escape(text)}"'


def _node_label(hood: Neighbourhood, n: NodeId) -> str:
    node = hood.view.nodes[n]
    lines = [f"n{n}: {_head(hood.view, node)}"]
    attrs = _attr_text(node)
    if attrs:
        lines.append(attrs if len(attrs) <= _ATTR_TEXT_WIDTH else attrs[:_ATTR_TEXT_WIDTH - 3] + "...")
    cost = _cost_text(hood.costs, n)
    if cost:
        lines.append(cost)
    return "\\n".join(_escape(line) for line in lines)


def to_dot(hood: Neighbourhood, name: str = "egraph") -> str:
    """Graphviz DOT text: one cluster per kept e-class, chosen e-nodes filled, stubs dashed.

    An edge leaves an e-node and ends on the cluster of its operand class (`lhead`), drawn to the
    class's first kept e-node; edges carry the argument position when a node has several operands.
    """
    view = hood.view
    lines = [f"digraph {_quote(name)} {{", "  compound=true;", "  rankdir=BT;",
             '  node [shape=box, style="rounded", fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=8];']
    for c, members in hood.nodes.items():
        hidden = hood.hidden(c)
        label = f"c{c} · {view.types.get(c)}" + (f" · +{hidden} e-node(s) not shown" if hidden else "")
        style = "bold" if c == hood.center else "solid"
        lines.append(f"  subgraph cluster_{c} {{")
        lines.append(f'    label={_quote(label)}; style={style}; color="#5b7bb2"; fontsize=9;')
        for n in members:
            fill = ', style="rounded,filled", fillcolor="#ffd36e", penwidth=2' if n in hood.chosen else ""
            lines.append(f'    n{n} [label="{_node_label(hood, n)}"{fill}];')
        lines.append("  }")
    for c in hood.stubs:
        label = f"c{c} · {len(view.classes[c])} e-node(s)"
        lines.append(f'  c{c} [label={_quote(label)}, shape=ellipse, style=dashed, color="#888888"];')
    for members in hood.nodes.values():
        for n in members:
            children = view.nodes[n].children
            for i, k in enumerate(children):
                head = f"n{hood.nodes[k][0]}" if k in hood.nodes else f"c{k}"
                attrs = [f"lhead=cluster_{k}"] if k in hood.nodes else []
                if len(children) > 1:
                    attrs.append(f'label="{i}"')
                lines.append(f"  n{n} -> {head}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot_text: str, path: str | Path, *, fmt: str | None = None) -> Path:
    """Write `dot_text` drawn by Graphviz's `dot` program to `path` (format from the suffix: svg, png, pdf).

    Raises `EqsatError` when `dot` is not installed; the DOT text itself never needs it.
    """
    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".")
    if not fmt:
        raise EqsatError(f"render: cannot tell the image format of {path}; give a suffix (.svg, .png) or fmt=")
    dot = shutil.which("dot")
    if dot is None:
        raise EqsatError(f"render: Graphviz's `dot` program is not on PATH, so {path} cannot be drawn; "
                         "write the DOT text (to_dot) and render it elsewhere")
    done = subprocess.run([dot, f"-T{fmt}", "-o", str(path)], input=dot_text, text=True, capture_output=True,
                          check=False)
    if done.returncode:
        raise EqsatError(f"render: dot -T{fmt} failed for {path}: {done.stderr.strip()}")
    return path
