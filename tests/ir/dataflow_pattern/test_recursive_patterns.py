"""Recursive patterns (`wildcard().redirect_to`): chains of any length, bindings, rewrite, partition, text."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ir
from ir import relay
from ir.dataflow_pattern import (
    DFPatternCallback,
    DFPatternMatcher,
    InvalidPatternError,
    WildcardPattern,
    explain_match,
    find_matches,
    is_op,
    is_recursive,
    is_var,
    partition,
    rewrite,
    wildcard,
)
from ir.expr import Call, Function
from ir.visitor import post_order

from .graphs import inline

x = relay.var("x", shape=(2, 8))
dense_weight = relay.const(np.ones((4, 8), "float32"))


def casts(y, links: int):
    """`links` casts over `y` (each to float32: a cast that changes nothing, so any chain type-checks)."""
    for _ in range(links):
        y = relay.cast(y, "float32")
    return y


def dense():
    return relay.nn.dense(x, dense_weight)


def cast_chain():
    """Casts of any number (one or more) over a dense layer; returns (chain, the dense pattern)."""
    rec = wildcard()
    chain = is_op("cast")(rec)
    base = is_op("nn.dense")(wildcard(), wildcard())
    rec.redirect_to(chain | base)
    return chain, base


def relu_chain():
    """relu over relu ... over any node: (chain, the cycle's wildcard, the base wildcard)."""
    rec, leaf = wildcard(), wildcard()
    chain = is_op("nn.relu")(rec)
    rec.redirect_to(chain | leaf)
    return chain, rec, leaf


def relus(y, links: int):
    for _ in range(links):
        y = relay.nn.relu(y)
    return y


# -- matching ------------------------------------------------------------------------------------
@pytest.mark.parametrize("links", [1, 2, 5])
def test_chains_of_one_two_and_five_links_match(links):
    chain, _ = cast_chain()
    assert chain.match(casts(dense(), links))


def test_a_chain_needs_its_base():
    chain, _ = cast_chain()
    assert not chain.match(casts(relay.nn.relu(x), 3))
    assert not chain.match(dense())  # no link at all: the root must be a cast


def test_a_chain_broken_in_the_middle_does_not_match_the_whole():
    chain, _ = cast_chain()
    lower = casts(dense(), 2)
    graph = casts(relay.nn.relu(lower), 2)
    assert not chain.match(graph)
    assert find_matches(chain, graph) == [lower.args[0], lower]


@pytest.mark.parametrize("form", ["call-argument", "left-alternative", "right-alternative"])
def test_the_recursion_may_sit_anywhere_in_the_cycle(form):
    rec = wildcard()
    base = is_op("nn.dense")(wildcard(), wildcard())
    if form == "call-argument":
        chain = is_op("cast")(rec)
        rec.redirect_to(chain | base)
    else:
        either = rec | base if form == "left-alternative" else base | rec
        chain = is_op("cast")(either)
        rec.redirect_to(chain)
    assert chain.match(casts(dense(), 4))
    assert not chain.match(casts(relay.nn.relu(x), 4))


def test_a_conv_relu_chain_sharing_one_weight_matches():
    data, weight = relay.var("data", shape=(1, 2, 4, 4)), relay.var("w", shape=(2, 2, 3, 3))
    rec = wildcard()
    block = is_op("nn.relu")(is_op("nn.conv2d")(rec, wildcard()))
    rec.redirect_to(block | is_var("data"))
    graph = data
    for links in range(1, 6):
        graph = relay.nn.relu(relay.nn.conv2d(graph, weight, padding=(1, 1)))
        assert block.match(graph), links


def test_a_node_inside_the_cycle_binds_once_per_match():
    # TVM's memo spans the whole match: the weight wildcard next to the recursion binds the
    # innermost weight, so an outer link with another weight does not match
    data = relay.var("data", shape=(1, 2, 4, 4))
    w1, w2 = relay.var("w1", shape=(2, 2, 3, 3)), relay.var("w2", shape=(2, 2, 3, 3))
    rec, weight = wildcard(), wildcard()
    block = is_op("nn.relu")(is_op("nn.conv2d")(rec, weight))
    rec.redirect_to(block | is_var("data"))
    one = relay.nn.relu(relay.nn.conv2d(data, w1))
    assert block.match(one)
    assert block.match(relay.nn.relu(relay.nn.conv2d(one, w1)))
    assert not block.match(relay.nn.relu(relay.nn.conv2d(one, w2)))


def test_a_failed_alternative_forgets_what_its_recursion_bound():
    # the left side walks the relu chain down to %a (binding the leaf to %a), then fails at %b;
    # the right side needs the same leaf at %b, so it must start from a clean memo
    a, b = relay.var("a", shape=(2,)), relay.var("b", shape=(2,))
    chain, rec, leaf = relu_chain()
    left = is_op("add")(chain, is_op("tanh")(leaf))
    right = is_op("add")(wildcard(), leaf)
    graph = relus(a, 2) + b
    matcher = DFPatternMatcher(graph)
    assert not matcher.match(left)
    assert matcher.match(left | right)
    node_map = matcher.node_map
    assert node_map[leaf] == [b]
    assert chain not in node_map and rec not in node_map


def test_node_map_lists_each_link_innermost_first():
    chain, rec, leaf = relu_chain()
    graph = relus(x, 3)
    matcher = DFPatternMatcher(graph)
    assert matcher.match(chain)
    links = [graph.args[0].args[0], graph.args[0], graph]
    assert matcher.node_map[chain] == links
    assert matcher.node_map[rec] == [x, *links[:2]]
    assert matcher.node_map[leaf] == [x]


def test_a_later_use_of_a_cycle_node_meets_its_latest_binding():
    chain, _, _ = relu_chain()
    both = is_op("add")(chain, chain)
    shared = relus(x, 2)
    assert both.match(shared + shared)
    assert not both.match(relus(x, 2) + relus(x, 2))  # two chains: one pattern node, two nodes


def test_a_redirect_without_a_cycle_is_an_alias():
    alias = wildcard()
    relu = is_op("nn.relu")(wildcard())
    alias.redirect_to(relu)
    assert not is_recursive(alias) and not is_recursive(is_op("add")(alias, alias))
    assert alias.match(relay.nn.relu(x)) and not alias.match(relay.tanh(x))
    assert is_op("add")(alias, wildcard()).match(relay.nn.relu(x) + x)


def test_is_recursive():
    chain, _ = cast_chain()
    assert is_recursive(chain)
    assert is_recursive(is_op("add")(chain, wildcard()))
    assert not is_recursive(is_op("cast")(wildcard()))


# -- building ------------------------------------------------------------------------------------
def test_redirect_refuses_a_cycle_that_stays_on_one_node():
    for build in (lambda w: w, lambda w: w | is_var(), lambda w: is_var() | w.has_dtype("float32"),
                  lambda w: w.has_attr({"TOpPattern": 0}), lambda w: w.dominates(is_var())):
        rec = wildcard()
        with pytest.raises(InvalidPatternError, match="without moving to an operand"):
            rec.redirect_to(build(rec))
        assert rec.redirect is None
    first, second = wildcard(), wildcard()
    first.redirect_to(second | is_var())
    with pytest.raises(InvalidPatternError, match="never end"):
        second.redirect_to(first)


def test_a_wildcard_is_redirected_once():
    chain, _ = cast_chain()
    rec = chain.args[0]
    with pytest.raises(InvalidPatternError, match="redirected once"):
        rec.redirect_to(wildcard())


def test_redirect_takes_a_pattern_or_an_expression():
    rec = wildcard()
    rec.redirect_to(x)
    assert rec.match(x) and not rec.match(relay.var("x", shape=(2, 8)))
    with pytest.raises(InvalidPatternError, match="redirect_to"):
        wildcard().redirect_to(3)
    with pytest.raises(TypeError):
        WildcardPattern(is_var())  # only redirect_to sets the target


def test_recursive_patterns_hash_and_compare_by_identity():
    chain, base = cast_chain()
    twin, _ = cast_chain()
    assert chain == chain and chain != twin and hash(chain) == hash(chain)
    assert len({chain, twin, base, chain.args[0]}) == 4


# -- text ----------------------------------------------------------------------------------------
def test_printing_names_the_wildcard_and_its_redirect():
    chain, _ = cast_chain()
    assert repr(chain) == "\n".join([
        "%0 = wildcard()",
        '%1 = is_op("cast")(%0)',
        '%0.redirect_to((%1 | is_op("nn.dense")(wildcard(), wildcard())))',
        "%1",
    ])
    rec = wildcard()
    inner = is_op("cast")(rec | is_var("x"))
    rec.redirect_to(inner)
    assert repr(is_op("nn.relu")(inner)) == "\n".join([
        "%0 = wildcard()",
        '%1 = is_op("cast")((%0 | is_var("x")))',
        "%0.redirect_to(%1)",
        'is_op("nn.relu")(%1)',
    ])


def test_explain_names_the_link_that_broke_the_chain():
    chain, _ = cast_chain()
    explanation = explain_match(chain, casts(relay.nn.relu(x), 3))
    assert not explanation.matched
    assert explanation.cause == "op"
    assert "nn.relu" in explanation.first_failure.reason
    assert explain_match(chain, casts(dense(), 3)).matched


# -- rewrite and partition -----------------------------------------------------------------------
class DropCasts(DFPatternCallback):
    """Replaces a whole cast chain by its base, counting calls."""

    def __init__(self):
        super().__init__()
        self.pattern, self.base = cast_chain()
        self.seen: list[int] = []

    def callback(self, pre, post, node_map):
        self.seen.append(len(node_map[self.pattern]))
        return node_map[self.base][0]


def test_rewrite_replaces_a_whole_chain_in_one_call():
    callback = DropCasts()
    graph = relay.nn.relu(casts(dense(), 5))
    out = rewrite(callback, graph)
    assert ir.structural_equal(out, relay.nn.relu(dense()))
    assert callback.seen == [5]


def test_rewrite_once_wraps_a_chain_once():
    class WrapInRelu(DFPatternCallback):
        def __init__(self):
            super().__init__(rewrite_once=True)
            self.pattern, _ = cast_chain()

        def callback(self, pre, post, node_map):
            return relay.nn.relu(post)

    chain = casts(dense(), 6)
    assert ir.structural_equal(rewrite(WrapInRelu(), chain), relay.nn.relu(chain))


def test_partition_wraps_each_chain_into_one_function():
    chain, _ = cast_chain()
    lower = casts(dense(), 3)
    other = relay.nn.dense(x, relay.const(np.zeros((4, 8), "float32")))
    graph = relay.Tuple([casts(relay.nn.relu(lower), 2), casts(other, 1)])
    out = partition(chain, graph)
    funcs = [n for n in post_order(out) if isinstance(n, Call) and isinstance(n.op, Function)]
    assert sorted(f.op.attrs["PartitionedFromPattern"] for f in funcs) == [
        "nn.dense_cast_", "nn.dense_cast_cast_cast_"]
    assert all(len(f.op.params) == 2 for f in funcs)  # the dense layer's data and weight
    assert ir.structural_equal(inline(out), graph)


def test_partition_leaves_a_chain_without_base_alone():
    chain, _ = cast_chain()
    graph = casts(relay.nn.relu(x), 3)
    assert partition(chain, graph) is graph


# -- scale ---------------------------------------------------------------------------------------
def test_chains_deeper_than_the_recursion_limit():
    links = 3 * sys.getrecursionlimit()
    limit = sys.getrecursionlimit()
    chain, _ = cast_chain()
    graph = casts(dense(), links)
    assert chain.match(graph)
    assert not chain.match(casts(relay.nn.relu(x), links))
    assert not explain_match(chain, casts(relay.nn.relu(x), links)).matched
    callback = DropCasts()
    assert ir.structural_equal(rewrite(callback, graph), dense())
    assert callback.seen == [links]
    assert sys.getrecursionlimit() == limit
