"""Finding the non-overlapping matches that `partition` and `rewrite` act on (TVM's PatternGrouper).

Candidates are tried root first (reverse post-DFS order); a node already inside a group is not
tried again. For each match the pattern's leaves give the group's inputs, in the pattern's
post-DFS order, deduplicated: `FunctionVar_{candidate}_{i}`. Ops and functions are never
inputs; a constant matched by `is_constant()` or `is_expr(const)` is embedded, one matched by
anything else is an input; dominator parent/path matches and the bodies of matched functions are
part of the group, not inputs, while the variables and constants a dominator path skips are inputs
(after the dominator's sub-patterns' inputs) unless a pattern node bound them. A candidate is
rejected when it shares an interior node with an earlier group, or when an interior node is used
outside the group by a node the root does not post-dominate. Every candidate, rejected or not,
consumes a number (TVM's numbering).

A recursive pattern (`redirect_to`) gives one group per chain, as in TVM: the root-most link
is tried first and its match takes the whole chain down to the base, so the inner links are
never candidates of their own. A redirected wildcard is not a leaf; the leaves its target
reaches give the inputs (the base's operands and whatever the links take besides the chain).
Each node of a chain that lacks its base is still tried, so such a chain costs time quadratic
in its length, as in TVM.

Functions marked `PartitionedFromPattern`, and their bodies, are not candidates (TVM). When
partitioning, functions marked `Composite` count as partitioned too, and calls of partitioned
functions are not candidates either, so partitioning twice changes nothing; rewrite callbacks
may still match such calls (e.g. to inline a composite).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from ..op.registry import Op
from ..visitor import operands, post_order, with_children
from .indexed_graph import IndexedGraph
from .match import DFPatternMatcher
from .semantics import is_leaf
from .nodes import (
    CallPattern,
    ConstantPattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    TuplePattern,
)

__all__ = ["Group", "group_matches", "is_partitioned"]


@dataclass(frozen=True)
class Group:
    """One accepted match: its root, bindings, inputs and the function that computes it."""

    root: Expr
    node_map: dict[DFPattern, list[Expr]]  # pattern node -> bound expressions (before rewriting)
    args: tuple[Expr, ...]                 # the inputs, in parameter order
    function: Function                     # fn(FunctionVar_...) { the matched subgraph }
    name: str                              # ops in post-DFS order, each followed by "_"
    nodes: tuple[Expr, ...]                # the matched subgraph, inputs excluded, post-DFS order


def is_partitioned(expr: Expr, partitioning: bool = False) -> bool:
    """A function made by partitioning; when `partitioning`, also a composite one or a call of either."""
    if partitioning and isinstance(expr, Call):
        expr = expr.op
    markers = ("PartitionedFromPattern", "Composite") if partitioning else ("PartitionedFromPattern",)
    return isinstance(expr, Function) and any(key in expr.attrs for key in markers)


def _embeds_constant(expr: Expr, leaf: DFPattern) -> bool:
    return isinstance(expr, Constant) and (
        isinstance(leaf, ConstantPattern) or (isinstance(leaf, ExprPattern) and isinstance(leaf.expr, Constant)))


def _name_part(node: Expr) -> str:
    if isinstance(node, Call):
        return node.op.name + "_" if isinstance(node.op, Op) else "Call_"
    if isinstance(node, TupleGetItem):
        return f"TupleGetItem{node.index}_"
    if isinstance(node, Function):
        return "Function"  # sic: TVM adds no separator here
    return {Tuple: "Tuple_", Let: "Let_", If: "If_"}.get(type(node), "")


def _extract(root: Expr, inputs: dict[Expr, Var]) -> tuple[Expr, list[Expr], str]:
    """The subgraph under `root` with `inputs` replaced by their variables, its nodes, and its name."""
    covered = list(post_order(root, operands, stop=inputs))
    replaced: dict[int, Expr] = {id(e): v for e, v in inputs.items()}
    for node in covered:
        updated = with_children(node, replaced)
        if updated is not node:
            replaced[id(node)] = updated
    return replaced.get(id(root), root), covered, "".join(_name_part(n) for n in covered)


class _Grouper:
    def __init__(self, pattern: DFPattern, expr: Expr, partitioning: bool):
        self.pattern = pattern
        self.partitioning = partitioning
        self.graph = IndexedGraph(expr)
        self.matcher = DFPatternMatcher(expr, self.graph)
        self.pattern_order = list(post_order(pattern, lambda p: p.children()))
        self.group_of: dict[Expr, int] = {}
        self.candidates = 0

    def run(self) -> list[Group]:
        groups: list[Group] = []
        skipped: dict[Expr, None] = {}
        for node in reversed(self.graph.order):
            if node in self.group_of or node in skipped:
                continue
            if is_partitioned(node, self.partitioning):
                skipped[node] = None
                if isinstance(node, Function):
                    skipped.update(dict.fromkeys(post_order(node.body, operands)))
                continue
            if self.matcher.match(self.pattern, node):
                group = self._create_group(node)
                if group is not None:
                    self.group_of.update(dict.fromkeys(group.nodes, len(groups)))
                    groups.append(group)
        return groups

    def _fuzzy_matches(self, node_map: dict[DFPattern, list[Expr]]) -> dict[Expr, None]:
        fuzzy: dict[Expr, None] = {}
        for p in self.pattern_order:
            if isinstance(p, DominatorPattern):
                for part in (p.parent, p.path):
                    fuzzy.update(dict.fromkeys(node_map.get(part, ())))
            elif isinstance(p, FunctionPattern):
                for func in node_map.get(p, ()):
                    fuzzy.update(dict.fromkeys(post_order(func.body, operands)))
        return fuzzy

    def _create_group(self, root: Expr) -> Group | None:
        node_map = self.matcher.node_map
        fuzzy = self._fuzzy_matches(node_map)
        number = self.candidates
        self.candidates += 1
        inputs: dict[Expr, Var] = {}

        def add_input(expr: Expr, leaf: DFPattern) -> None:
            if (expr in fuzzy or expr in inputs or isinstance(expr, (Op, Function))
                    or _embeds_constant(expr, leaf)):
                return
            ty = expr.checked_type if expr.type_inferred else None
            inputs[expr] = Var(f"FunctionVar_{number}_{len(inputs)}", ty)

        for p in self.pattern_order:
            if isinstance(p, TuplePattern) and p.fields is None:
                for tup in node_map.get(p, ()):
                    for field in tup.fields:
                        add_input(field, p)
            elif isinstance(p, CallPattern) and p.args is None:
                for call in node_map.get(p, ()):
                    for arg in call.args:
                        add_input(arg, p)
            elif not p.children():
                for expr in node_map.get(p, ()):
                    add_input(expr, p)
            elif isinstance(p, DominatorPattern):
                for leaf in self._skipped_leaves(p, node_map):
                    add_input(leaf, p)

        body, covered, name = _extract(root, inputs)
        if not self._is_self_contained(root, covered):
            return None
        return Group(root, node_map, tuple(inputs), Function(list(inputs.values()), body), name, tuple(covered))

    def _skipped_leaves(self, p: DominatorPattern, node_map: dict[DFPattern, list[Expr]]) -> list[Expr]:
        """The variables and constants that the dominator's child and path nodes take as inputs, other
        than the parent and leaves some pattern node bound (those are handled as that node's)."""
        bound = {e for exprs in node_map.values() for e in exprs}
        out: dict[Expr, None] = {}
        for node in [*node_map.get(p.child, ()), *node_map.get(p.path, ())]:
            for inp in self.graph.path_inputs(node):
                if is_leaf(inp) and inp not in bound:
                    out[inp] = None
        return list(out)

    def _is_self_contained(self, root: Expr, covered: list[Expr]) -> bool:
        """No overlap with earlier groups, and no interior value escaping around the root."""
        inside = dict.fromkeys(covered)
        for node in covered:
            if isinstance(node, (Op, Function, Constant)):
                continue  # global values, shared freely
            if node in self.group_of:
                return False
            if node is not root and any(user not in inside and not self.graph.dominates(root, user)
                                        for user in self.graph.outputs(node)):
                return False
        return True


def group_matches(pattern: DFPattern, expr: Expr, partitioning: bool = False) -> list[Group]:
    """The accepted, non-overlapping matches of `pattern` in `expr`, in discovery (root-first) order.

    `partitioning` selects partition's stricter notion of already-partitioned code (module docstring).
    """
    return _Grouper(pattern, expr, partitioning).run()
