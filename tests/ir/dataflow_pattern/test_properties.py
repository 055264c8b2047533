"""Properties over random graphs: patterns cut from a graph match where they were cut, mutated
patterns match nowhere, partition only wraps, and results repeat exactly."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import ir
from ir import relay
from ir.dataflow_pattern import (
    DFPattern,
    DFPatternCallback,
    find_matches,
    is_constant,
    is_expr,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    rewrite,
    wildcard,
)
from ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from ir.visitor import post_order

from .graphs import inline

SHAPE = (2, 3)
UNARY = ["nn.relu", "tanh", "sigmoid", "negative", "exp"]
BINARY = ["add", "multiply", "subtract", "maximum"]
ALPHAS = [0.1, 0.2, 0.3]
# never produced by `graphs`, so a pattern requiring them can match nothing
ABSENT_UNARY, ABSENT_BINARY, ABSENT_ALPHA = "floor", "power", 0.77

PROPERTY = settings(max_examples=60, deadline=None)


@st.composite
def graphs(draw) -> list[Expr]:
    """A random element-wise DAG over typed inputs, with shared nodes; returns every node built."""
    pool: list[Expr] = [relay.var(f"x{i}", shape=SHAPE) for i in range(draw(st.integers(1, 3)))]
    for _ in range(draw(st.integers(1, 20))):
        def pick() -> Expr:
            return pool[draw(st.integers(0, len(pool) - 1))]

        kind = draw(st.sampled_from(["unary", "binary", "leaky", "clip", "const", "item"]))
        if kind == "unary":
            node = relay.op.get(draw(st.sampled_from(UNARY)))(pick())
        elif kind == "binary":
            node = relay.op.get(draw(st.sampled_from(BINARY)))(pick(), pick())
        elif kind == "leaky":
            node = relay.nn.leaky_relu(pick(), alpha=draw(st.sampled_from(ALPHAS)))
        elif kind == "clip":
            node = relay.clip(pick(), draw(st.sampled_from([-1.0, 0.0])), draw(st.sampled_from([1.0, 6.0])))
        elif kind == "const":
            node = relay.add(pick(), relay.const(np.full(SHAPE, draw(st.sampled_from([0.0, 1.0])), "float32")))
        else:
            node = TupleGetItem(Tuple([pick(), pick()]), draw(st.integers(0, 1)))
        pool.append(node)
    return pool


def pattern_for(expr: Expr, depth: int, draw, memo: dict[Expr, DFPattern] | None) -> DFPattern:
    """A pattern that matches `expr`, describing it `depth` levels deep (wildcards below)."""
    if memo is not None and expr in memo:
        return memo[expr]
    if depth == 0:
        pattern = wildcard()
    elif isinstance(expr, Var):
        pattern = draw(st.sampled_from([is_var(expr.name_hint), is_var(), is_expr(expr)]))
    elif isinstance(expr, Constant):
        pattern = draw(st.sampled_from([is_constant(), is_expr(relay.const(np.array(expr.data)))]))
    elif isinstance(expr, TupleGetItem):
        index = draw(st.sampled_from([expr.index, None]))
        pattern = is_tuple_get_item(pattern_for(expr.tuple_value, depth - 1, draw, memo), index)
    elif isinstance(expr, Tuple):
        fields = [pattern_for(f, depth - 1, draw, memo) for f in expr.fields]
        pattern = draw(st.sampled_from([is_tuple(fields), is_tuple(None)]))
    else:
        pattern = is_op(expr.op.name)(*[pattern_for(a, depth - 1, draw, memo) for a in expr.args])
        if expr.attrs and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(expr.attrs)))
            pattern = pattern.has_attr({key: expr.attrs[key]})
        if draw(st.booleans()):
            pattern = pattern.has_dtype("float32") if draw(st.booleans()) else pattern.has_shape(SHAPE)
    if draw(st.integers(0, 4)) == 0:  # an alternative whose first branch fails
        pattern = is_op(ABSENT_UNARY)(wildcard()) | pattern
    if memo is not None:
        memo[expr] = pattern
    return pattern


@st.composite
def cut_patterns(draw) -> tuple[Expr, Expr, DFPattern, list[DFPattern]]:
    """(graph root, cut root, pattern cut at the cut root, mutations of it that cannot match)."""
    pool = draw(graphs())
    calls = [n for n in pool if isinstance(n, Call)]
    root = draw(st.sampled_from(calls)) if calls else pool[-1]
    depth = draw(st.integers(1, 4))
    memo: dict[Expr, DFPattern] | None = {} if draw(st.booleans()) else None
    if not isinstance(root, Call):
        return pool[-1], root, pattern_for(root, depth, draw, memo), []
    args = [pattern_for(a, depth - 1, draw, memo) for a in root.args]
    absent = ABSENT_UNARY if len(args) == 1 else ABSENT_BINARY
    wrong_attr = ({"alpha": ABSENT_ALPHA} if root.op.name == "nn.leaky_relu" else {"no_such_attribute": 1})
    mutations = [
        is_op(absent)(*args),                            # different op
        is_op(root.op.name)(*args).has_attr(wrong_attr),  # different attribute
        is_op(root.op.name)(*args, wildcard()),           # wrong arity
    ]
    return pool[-1], root, is_op(root.op.name)(*args), mutations


@PROPERTY
@given(cut_patterns())
def test_a_pattern_cut_from_a_graph_matches_its_root(case):
    graph, root, pattern, _ = case
    assert pattern.match(root)
    assert root in find_matches(pattern, graph) or root not in set(post_order(graph))


@PROPERTY
@given(cut_patterns())
def test_a_mutated_pattern_matches_nowhere(case):
    graph, root, _, mutations = case
    for mutated in mutations:
        assert not mutated.match(root)
        assert find_matches(mutated, graph) == []


@PROPERTY
@given(cut_patterns())
def test_partition_only_wraps_matches(case):
    graph, _, pattern, _ = case
    partitioned = pattern.partition(graph)
    assert ir.structural_equal(inline(partitioned), graph)
    calls = [n for n in post_order(partitioned) if isinstance(n, Call) and isinstance(n.op, Function)]
    assert all(c.op.attrs["PartitionedFromPattern"] for c in calls)
    assert (partitioned is graph) == (not calls)


@PROPERTY
@given(cut_patterns())
def test_a_rewrite_returning_post_changes_nothing(case):
    graph, _, pattern, _ = case

    class Keep(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = pattern

        def callback(self, pre, post, node_map):
            assert all(isinstance(e, Expr) for exprs in node_map.values() for e in exprs)
            return post

    assert ir.structural_equal(rewrite(Keep(), graph), graph)


@PROPERTY
@given(cut_patterns())
def test_results_repeat_exactly(case):
    graph, _, pattern, _ = case
    assert find_matches(pattern, graph) == find_matches(pattern, graph)
    assert str(pattern.partition(graph)) == str(pattern.partition(graph))
    assert repr(pattern) == repr(pattern)
