"""Graphs far deeper than Python's recursion limit, and the fusion patterns over the model zoo."""

from __future__ import annotations

import ir
from ir import models, relay
from ir.dataflow_pattern import (
    DFPatternCallback,
    DominatorPattern,
    dominates,
    find_matches,
    is_constant,
    is_op,
    is_var,
    rewrite,
    wildcard,
)
from ir.expr import Call, Function
from ir.visitor import post_order

from .fusion_patterns import fusion_patterns
from .graphs import conv_bias_relu_chain, deep_residual_chain, inline

DEPTH = 1500  # graphs about 3000 nodes deep, three times Python's default recursion limit


def test_dominators_on_a_deep_chain_of_diamonds():
    graph = deep_residual_chain(DEPTH)
    def step():
        return is_op("add")(wildcard(), wildcard())

    diamond = dominates(step() | is_var(), is_op("nn.relu")(wildcard()), step())
    assert len(find_matches(diamond, graph)) == DEPTH
    partitioned = diamond.partition(graph)
    assert ir.structural_equal(inline(partitioned), graph)


def test_path_search_through_a_long_path_is_iterative():
    x = relay.var("x", shape=(2,))
    y = x
    for _ in range(2 * DEPTH):
        y = relay.nn.relu(y)
    out = y + relay.tanh(x)
    path = is_op("nn.relu")(wildcard()) | is_op("tanh")(wildcard())
    assert dominates(is_var(), path, wildcard() + wildcard()).match(out)
    assert not dominates(is_constant(), wildcard(), wildcard() + wildcard()).match(out)


def test_partition_and_rewrite_a_deep_chain():
    graph = ir.infer_type(conv_bias_relu_chain(layers=400))
    fused = fusion_patterns()["conv_bias_relu"]
    partitioned = fused.partition(graph, {"Composite": "conv_bias_relu"})
    calls = [n for n in post_order(partitioned) if isinstance(n, Call) and isinstance(n.op, Function)]
    assert len(calls) == 400
    assert ir.infer_type(partitioned).checked_type == graph.checked_type

    class ReluToMax(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = is_op("nn.relu")(wildcard())

        def callback(self, pre, post, node_map):
            return relay.maximum(post.args[0], relay.const(0.0))

    rewritten = rewrite(ReluToMax(), graph)
    assert not find_matches(is_op("nn.relu")(wildcard()), rewritten)
    assert len(find_matches(is_op("maximum")(wildcard(), is_constant()), rewritten)) == 400
    assert "maximum" in str(rewritten)


def zoo_graphs():
    for name in models.list_models():
        mod, _ = models.get(name, small=True)
        yield name, mod["main"]


def test_fusion_patterns_over_every_zoo_model():
    for name, main in zoo_graphs():
        for label, pattern in fusion_patterns().items():
            matches = find_matches(pattern, main)
            assert all(pattern.match(m) or isinstance(pattern, DominatorPattern) for m in matches), (name, label)
            partitioned = pattern.partition(main)
            assert ir.structural_equal(inline(partitioned), main), (name, label)
            assert ir.infer_type(partitioned).checked_type == main.checked_type, (name, label)
