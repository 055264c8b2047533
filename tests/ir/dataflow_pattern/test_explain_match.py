"""explain_match: one near miss per cause, each named; a match explains itself as a match."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay
from ir.dataflow_pattern import (
    CAUSES,
    K_ELEMWISE,
    DFPatternMatcher,
    dominates,
    explain_match,
    is_constant,
    is_op,
    is_var,
    wildcard,
)
from ir.dataflow_pattern.explain import Explainer, ExprGraph
from tests.ir.dataflow_pattern.dominator_leaf_cases import leaf_cases

x = relay.var("x", shape=(1, 3, 8, 8))
w = relay.var("w", shape=(4, 3, 3, 3))
weight = relay.const(np.ones((4, 3, 3, 3), "float32"))
conv_relu = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), is_constant()))
unary = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())
diamond = dominates(is_op("nn.conv2d")(wildcard(), wildcard()), unary, is_op("add")(wildcard(), wildcard()))


def test_a_match_is_explained_as_one():
    expl = explain_match(conv_relu, relay.nn.relu(relay.nn.conv2d(x, weight)))
    assert expl.matched and expl.cause is None and expl.deepest_match[0] is conv_relu
    assert str(expl).startswith("matched at the root")


def test_non_constant_weight():
    expl = explain_match(conv_relu, relay.nn.relu(relay.nn.conv2d(x, w)))
    assert not expl.matched and expl.cause == "not_constant"
    assert expl.first_failure.node is w
    assert "%w is a variable, not a constant" in str(expl)


def test_wrong_op_names_both_ops_and_the_part_that_matched():
    expl = explain_match(conv_relu, relay.sigmoid(relay.nn.conv2d(x, weight)))
    assert expl.cause == "op" and "sigmoid, not nn.relu" in expl.first_failure.reason


def test_missing_outer_op_reports_the_inner_match():
    expl = explain_match(conv_relu, relay.nn.conv2d(x, weight))
    assert expl.cause == "op"
    assert expl.deepest_match[0] is conv_relu.args[0]


def test_wrong_attribute_value():
    pattern = is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"data_layout": "NHWC"})
    expl = explain_match(pattern, relay.nn.conv2d(x, w))
    assert expl.cause == "attr" and "data_layout is 'NCHW', not 'NHWC'" in str(expl)


def test_wrong_axis():
    pattern = is_op("nn.softmax")(wildcard()).has_attr({"axis": -1})
    expl = explain_match(pattern, relay.nn.softmax(x, axis=1))
    assert expl.cause == "attr" and "axis is 1, not -1" in expl.first_failure.reason


@pytest.mark.parametrize("pattern, cause, words", [
    (wildcard().has_dtype("float16"), "dtype", "float32, not float16"),
    (wildcard().has_shape((1, 3)), "shape", "(1, 3, 8, 8), not (1, 3)"),
    (is_var("y"), "name", "%x, not %y"),
    (is_op("add")(wildcard(), wildcard()), "kind", "a variable, not a call"),
])
def test_leaf_causes(pattern, cause, words):
    expl = explain_match(pattern, x)
    assert expl.cause == cause and words in expl.first_failure.reason


def test_a_shared_sub_pattern_must_meet_one_node_in_either_argument_order():
    a = wildcard()
    expl = explain_match(is_op("add")(a, a), relay.add(x, relay.nn.relu(x)))
    assert expl.cause == "binding" and len(expl.miss.options) == 2  # both argument orders were tried


def test_alternatives_list_each_failure():
    expl = explain_match(is_op("nn.relu")(wildcard()) | is_op("sigmoid")(wildcard()), relay.tanh(x))
    assert expl.miss.cause == "alternatives" and expl.causes() == {"op"}
    assert "tanh, not nn.relu" in str(expl) and "tanh, not sigmoid" in str(expl)


def test_a_consumer_outside_the_dominator_region():
    c = relay.nn.conv2d(x, w)
    r = relay.nn.relu(c)
    child = r + relay.nn.leaky_relu(c, alpha=0)
    program = relay.Tuple([child, relay.sigmoid(r)])
    assert explain_match(diamond, child).matched  # alone, the region is closed
    expl = explain_match(diamond, child, graph=program)
    assert expl.cause == "outside_consumer"
    assert "%1 (nn.relu)" in str(expl) and "sigmoid" in str(expl)


def test_a_dominator_path_node_that_is_not_on_the_path():
    c = relay.nn.conv2d(x, w)
    r = relay.nn.relu(c)
    expl = explain_match(diamond, relay.tanh(r + r) + relay.nn.leaky_relu(c, alpha=0))
    assert expl.cause == "dominator_path" and expl.first_failure.because.first_failure().cause == "attr"


def test_a_path_node_fed_only_by_a_variable_does_not_lead_back_to_the_parent():
    c = relay.nn.conv2d(x, w)
    r = relay.nn.relu(relay.var("y", shape=(1, 4, 6, 6)))
    expl = explain_match(diamond, r + relay.nn.leaky_relu(c, alpha=0))
    assert not expl.matched and expl.cause == "dominator_path" and expl.first_failure.node is r
    assert "only variables or constants as inputs" in str(expl)


@pytest.mark.parametrize("case", leaf_cases(), ids=lambda case: case[0])
def test_the_walk_agrees_with_the_matcher_on_paths_through_leaves(case):
    _, pattern, program, expected = case
    for node in ir.post_order(program):
        matched = any(node is e for e in expected)
        assert DFPatternMatcher(program).match(pattern, node) is matched
        walk = Explainer(ExprGraph(program)).visit(pattern, node)
        assert (walk is None) is matched, walk
        if not matched:
            assert explain_match(pattern, node, graph=program).cause != "unexplained"


def test_a_check_returning_false():
    expr = relay.nn.relu(relay.nn.conv2d(x, weight))
    expl = explain_match(conv_relu, expr, check=lambda e: False)
    assert not expl.matched and expl.cause == "check"


def test_every_cause_is_documented():
    for expl in (explain_match(conv_relu, relay.nn.relu(relay.nn.conv2d(x, w))), explain_match(is_var("y"), x)):
        assert expl.causes() <= set(CAUSES)
