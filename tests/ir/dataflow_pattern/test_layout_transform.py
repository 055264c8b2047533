"""`layout_transform` in the pattern language: its attributes, its fusion kind, dominator paths, rewrites,
and the e-graph finding the same matches as the direct matcher."""

from __future__ import annotations

import numpy as np

import ir
from ir import relay
from ir.dataflow_pattern import (
    K_ELEMWISE, K_INJECTIVE, DFPatternCallback, dominates, find_matches, is_constant, is_op, rewrite, wildcard,
)
from ir.visitor import children, post_order

from eqsat.egraph.lower import add_expr, lower
from eqsat.rules.callback import find_matches as ematches

x = relay.var("x", shape=(1, 16, 4, 4))
to_blocked = is_op("layout_transform")(wildcard()).has_attr({"src_layout": "NCHW", "dst_layout": "NCHW8c"})


def test_match_layout_transform_attrs():
    assert to_blocked.match(relay.layout_transform(x, "NCHW", "NCHW8c"))


def test_no_match_layout_transform_attrs():
    assert not to_blocked.match(relay.layout_transform(x, "NCHW", "NCHW16c"))
    assert not to_blocked.match(relay.layout_transform(x, "NCHW", "NHWC"))


def test_match_layout_transform_kind():
    injective = wildcard().has_attr({"TOpPattern": K_INJECTIVE})(wildcard())
    assert injective.match(relay.layout_transform(x, "NCHW", "NHWC"))
    assert not wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard()).match(
        relay.layout_transform(x, "NCHW", "NHWC"))


def _conv_region(path_op: str) -> ir.Expr:
    """conv2d -> layout_transform -> (path op) -> layout_transform back, added to the conv's other use."""
    conv = relay.nn.conv2d(x, relay.var("w", shape=(16, 16, 1, 1)))
    blocked = relay.layout_transform(conv, "NCHW", "NCHW8c")
    inner = relay.nn.relu(blocked) if path_op == "relu" else relay.sum(blocked, axis=4, keepdims=True)
    back = relay.layout_transform(inner if path_op == "relu" else relay.broadcast_to(inner, (1, 2, 4, 4, 8)),
                                  "NCHW8c", "NCHW")
    return back + relay.nn.relu(conv)


def test_match_dominator_through_layout_transforms():
    path = wildcard().has_attr({"TOpPattern": K_INJECTIVE})(wildcard()) | wildcard().has_attr(
        {"TOpPattern": K_ELEMWISE})(wildcard())
    pattern = dominates(is_op("nn.conv2d")(wildcard(), wildcard()), path, is_op("add")(wildcard(), wildcard()))
    assert pattern.match(_conv_region("relu"))


def test_no_match_dominator_through_a_reduction():
    path = wildcard().has_attr({"TOpPattern": K_INJECTIVE})(wildcard()) | wildcard().has_attr(
        {"TOpPattern": K_ELEMWISE})(wildcard())
    pattern = dominates(is_op("nn.conv2d")(wildcard(), wildcard()), path, is_op("add")(wildcard(), wildcard()))
    assert not pattern.match(_conv_region("sum"))


class CancelPairs(DFPatternCallback):
    """layout_transform(layout_transform(x, A, B), B, A) -> x."""

    def __init__(self):
        super().__init__(require_type=True)
        self.inner = is_op("layout_transform")(wildcard())
        self.pattern = is_op("layout_transform")(self.inner)

    def callback(self, pre, post, node_map):
        inner = node_map[self.inner][0]
        if (inner.attrs.src_layout, inner.attrs.dst_layout) == (post.attrs.dst_layout, post.attrs.src_layout):
            return inner.args[0]
        return post


def test_rewrite_cancels_layout_transform_pairs():
    blocked = relay.layout_transform(relay.nn.relu(x), "NCHW", "NCHW8c")
    assert rewrite(CancelPairs(), relay.layout_transform(blocked, "NCHW8c", "NCHW")).op.name == "nn.relu"


def test_rewrite_keeps_other_layout_transform_pairs():
    blocked = relay.layout_transform(relay.nn.relu(x), "NCHW", "NCHW8c")
    kept = rewrite(CancelPairs(), relay.layout_transform(blocked, "NCHW8c", "NHWC"))
    assert kept.op.name == "layout_transform" and kept.args[0].attrs.dst_layout == "NCHW8c"


def test_ematching_agrees_with_the_direct_matcher():
    weight = relay.const(np.ones((16, 2, 1, 1, 8, 8), "float32"))
    blocked = relay.layout_transform(x, "NCHW", "NCHW8c")
    conv = relay.nn.contrib_conv2d_NCHWc(blocked, weight, data_layout="NCHW8c", kernel_layout="OIHW8i8o",
                                         out_layout="NCHW8c")
    body = relay.Tuple([relay.layout_transform(conv, "NCHW8c", "NCHW"), relay.layout_transform(x, "NCHW", "NCHW16c")])
    ir.infer_type(body)
    low = lower(ir.IRModule.from_expr(body))
    handle: dict[int, int] = {}
    for node in post_order(body):
        handle[id(node)] = add_expr(low.egraph, node, {id(c): handle[id(c)] for c in children(node)})
    low.egraph.refresh()
    patterns = [to_blocked, is_op("layout_transform")(wildcard()).has_attr({"dst_layout": "NCHW"}),
                is_op("nn.contrib_conv2d_NCHWc")(to_blocked, is_constant()).has_attr({"kernel_layout": "OIHW8i8o"}),
                is_op("nn.contrib_conv2d_NCHWc")(to_blocked, is_constant()).has_attr({"kernel_layout": "OIHW16i16o"})]
    for pattern in patterns:
        expected = sorted({low.egraph.canonical(handle[id(n)]) for n in find_matches(pattern, body)})
        assert ematches(pattern, low.egraph) == expected, repr(pattern)
    assert ematches(patterns[0], low.egraph) and not ematches(patterns[3], low.egraph)


def test_ematching_agrees_on_dominators_through_layout_transforms():
    path = wildcard().has_attr({"TOpPattern": K_INJECTIVE})(wildcard()) | wildcard().has_attr(
        {"TOpPattern": K_ELEMWISE})(wildcard())
    pattern = dominates(is_op("nn.conv2d")(wildcard(), wildcard()), path, is_op("add")(wildcard(), wildcard()))
    for region, found in (("relu", True), ("sum", False)):
        body = ir.infer_type(_conv_region(region))
        low = lower(ir.IRModule.from_expr(body))
        handle: dict[int, int] = {}
        for node in post_order(body):
            handle[id(node)] = add_expr(low.egraph, node, {id(c): handle[id(c)] for c in children(node)})
        low.egraph.refresh()
        expected = sorted({low.egraph.canonical(handle[id(n)]) for n in find_matches(pattern, body)})
        assert ematches(pattern, low.egraph) == expected and bool(expected) == found, region
