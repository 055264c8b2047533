"""Hypothesis strategies for random IR graphs (shared nodes, tuples, attributes, constants)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ir import relay
from ir.expr import Call, Expr, Tuple, TupleGetItem
from ir.op.registry import Op
from ir.visitor import deep_copy

SHAPE = (2, 3)
UNARY = ["nn.relu", "sigmoid", "tanh", "negative", "exp", "abs"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]


@st.composite
def graphs(draw, max_nodes: int = 25) -> Expr:
    """A random element-wise DAG over 1-3 inputs of shape (2, 3); nodes are reused as operands."""
    n_inputs = draw(st.integers(1, 3))
    pool: list[Expr] = [relay.var(f"x{i}", shape=SHAPE) for i in range(n_inputs)]
    for _ in range(draw(st.integers(1, max_nodes))):
        pick = lambda: pool[draw(st.integers(0, len(pool) - 1))]  # noqa: E731
        kind = draw(st.sampled_from(["unary", "binary", "leaky", "clip", "const", "tuple"]))
        if kind == "unary":
            node = relay.op.get(draw(st.sampled_from(UNARY)))(pick())
        elif kind == "binary":
            node = relay.op.get(draw(st.sampled_from(BINARY)))(pick(), pick())
        elif kind == "leaky":
            node = relay.nn.leaky_relu(pick(), alpha=draw(st.sampled_from([0.01, 0.1, 0.2])))
        elif kind == "clip":
            lo = draw(st.sampled_from([-1.0, 0.0]))
            node = relay.clip(pick(), lo, lo + draw(st.sampled_from([1.0, 6.0])))
        elif kind == "const":
            value = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))
            node = relay.add(pick(), relay.const(np.full(SHAPE, value, "float32")))
        else:
            a, b = pick(), pick()
            node = TupleGetItem(Tuple([a, b]), draw(st.integers(0, 1)))
        pool.append(node)
    return pool[-1]


def clone(expr: Expr) -> Expr:
    """A deep copy made of fresh nodes (free variables are kept: they are identities)."""
    return deep_copy(expr)


def mutate_root(expr: Expr) -> Expr:
    """The same graph with the root changed so that it computes something else."""
    if isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == "nn.leaky_relu":
        return relay.nn.leaky_relu(expr.args[0], alpha=expr.attrs.alpha + 1.0)
    if isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == "sigmoid":
        return relay.tanh(expr.args[0])
    return relay.sigmoid(expr)
