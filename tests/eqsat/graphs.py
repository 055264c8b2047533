"""Programs and e-graphs for the e-graph engine's tests (deterministic, small by default)."""

from __future__ import annotations

import numpy as np

import ir
from ir import relay
from ir.attrs import Attrs

from eqsat.egraph.terms import Kind
from eqsat.egraph.view import EGraphView, ClosedRegion

UNARY = ["nn.relu", "sigmoid", "tanh", "negative"]
BINARY = ["add", "multiply", "subtract", "maximum"]


def synthetic(n_nodes: int, seed: int = 0, n_outputs: int = 20) -> ir.IRModule:
    """A random element-wise DAG of about `n_nodes` calls; operands are mostly recent nodes."""
    rng = np.random.default_rng(seed)
    pool: list[ir.Expr] = [relay.var(f"x{i}", shape=(2, 3)) for i in range(4)]
    while len(pool) < n_nodes:
        def pick() -> ir.Expr:
            back = min(int(rng.geometric(0.2)) - 1, len(pool) - 1)
            return pool[len(pool) - 1 - back]
        if rng.integers(3) == 0:
            pool.append(relay.op.get(UNARY[rng.integers(len(UNARY))])(pick()))
        else:
            pool.append(relay.op.get(BINARY[rng.integers(len(BINARY))])(pick(), pick()))
    return ir.IRModule.from_expr(relay.Tuple(pool[-n_outputs:]))


def add_chain(n_inputs: int, shape=(2, 3), reads: int = 1) -> tuple[ir.Expr, list[ir.Var]]:
    """((v0 + v1) + v2) + ... over the inputs `reads` times in turn: associativity and commutativity
    make this grow without bound."""
    vs = [relay.var(f"v{i}", shape=shape) for i in range(n_inputs)]
    terms = vs * reads
    e: ir.Expr = terms[0]
    for v in terms[1:]:
        e = relay.add(e, v)
    return e, vs


def view_of(classes: dict[int, list[tuple[str, tuple[int, ...]]]], roots: tuple[int, ...],
            closed_regions: dict[str, set[int]] | None = None) -> EGraphView:
    """A hand-made view: class -> [(op label, child classes)]; every node is an op call.

    `closed_regions` maps an op label to the classes that node's extraction forbids others to use.
    """
    nodes = [(Kind.CALL, (op, Attrs()), kids, c) for c, ns in classes.items() for op, kids in ns]
    regions = [ClosedRegion(i, frozenset(cs)) for op, cs in (closed_regions or {}).items()
               for i, n in enumerate(nodes) if n[1][0] == op]
    return EGraphView.build(nodes, {c: None for c in classes}, roots, regions)


def costs_by_op(view: EGraphView, table: dict[str, float]) -> list[float]:
    return [table[n.op] for n in view.nodes]
