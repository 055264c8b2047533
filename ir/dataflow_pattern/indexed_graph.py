"""A dataflow index of one expression: post-DFS order, inputs, users and the post-dominator tree.

Built once per match run (TVM's `IndexedGraph`), iteratively, so graphs thousands of nodes deep
are fine. Op objects are not nodes: they are global and shared by every call of the op, so they
carry no dataflow. Every other node reachable from the root is, including function parameters
and let-bound variables (a let variable's input is its value).
"""

from __future__ import annotations

from ..expr import Call, Expr, Function, Let, Var
from ..visitor import operands, post_order

__all__ = ["IndexedGraph"]


def _dataflow_inputs(expr: Expr, let_values: dict[Var, Expr]) -> tuple[Expr, ...]:
    """The nodes whose values flow into `expr` (a function's parameters do not; its body does)."""
    if isinstance(expr, Function):
        return (expr.body,)
    if isinstance(expr, Let):
        return (expr.body,)
    if isinstance(expr, Var):
        value = let_values.get(expr)
        return () if value is None else (value,)
    return operands(expr)


class IndexedGraph:
    """Nodes of `root` in post-DFS order with their inputs, users and immediate post-dominators."""

    def __init__(self, root: Expr):
        self.root = root
        self.order: list[Expr] = list(post_order(root, operands))
        self.index: dict[Expr, int] = {node: i for i, node in enumerate(self.order)}
        let_values = {node.var: node.value for node in self.order if isinstance(node, Let)}
        self._inputs: list[tuple[Expr, ...]] = [_dataflow_inputs(n, let_values) for n in self.order]
        self._outputs: list[list[int]] = [[] for _ in self.order]
        for i, ins in enumerate(self._inputs):
            for inp in ins:
                self._outputs[self.index[inp]].append(i)
        self._dom_parent, self._depth = self._post_dominators()

    def __len__(self) -> int:
        return len(self.order)

    def __contains__(self, expr: object) -> bool:
        return expr in self.index

    def inputs(self, expr: Expr) -> tuple[Expr, ...]:
        """The nodes flowing into `expr` (callee first for calls of non-op callees)."""
        return self._inputs[self._node(expr)]

    def path_inputs(self, expr: Expr) -> tuple[Expr, ...]:
        """The nodes a dominator path follows from `expr`: a call's arguments (never its callee), any
        other node's inputs."""
        return expr.args if isinstance(expr, Call) else self.inputs(expr)

    def outputs(self, expr: Expr) -> list[Expr]:
        """The nodes using `expr`, in post-DFS order."""
        return [self.order[i] for i in self._outputs[self._node(expr)]]

    def dominates(self, dominator: Expr, expr: Expr) -> bool:
        """True when every path from `expr` to the root passes through `dominator` (strictly)."""
        target = self._node(dominator)
        i = self._dom_parent[self._node(expr)]
        while i >= 0:
            if i == target:
                return True
            i = self._dom_parent[i]
        return False

    def _node(self, expr: Expr) -> int:
        try:
            return self.index[expr]
        except KeyError:
            raise ValueError(f"{expr!r} is not part of the indexed graph rooted at {self.root!r}") from None

    def _post_dominators(self) -> tuple[list[int], list[int]]:
        """Immediate post-dominator (-1: none) and tree depth of each node, root first (TVM's PostDom)."""
        count = len(self.order)
        parent = [-1] * count
        depth = [1] * count

        def lca(a: int, b: int) -> int:
            while a != b:
                if a < 0 or b < 0:
                    return -1
                if depth[a] < depth[b]:
                    b = parent[b]
                elif depth[a] > depth[b]:
                    a = parent[a]
                else:
                    a, b = parent[a], parent[b]
            return a

        for i in range(count - 2, -1, -1):  # the root (last) is used externally: no post-dominator
            users = self._outputs[i]
            if not users:
                continue
            p = users[0]
            for u in users[1:]:
                p = lca(p, u)
            parent[i] = p
            depth[i] = depth[p] + 1 if p >= 0 else 1
        return parent, depth
