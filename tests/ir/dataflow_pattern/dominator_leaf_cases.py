"""Dominator diamonds whose paths meet variables and constants, typed, with whether the root matches.

Shared by the direct matcher's, the explainer's and the e-graph's tests, which must all agree.
"""

from __future__ import annotations

import numpy as np

from ir import relay
from ir.dataflow_pattern import K_BROADCAST, K_ELEMWISE, DFPattern, dominates, is_op, wildcard
from ir.expr import Expr

unary = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())
binary = wildcard().has_attr({"TOpPattern": K_BROADCAST})(wildcard(), wildcard())
conv = is_op("nn.conv2d")(wildcard(), wildcard())
add = is_op("add")(wildcard(), wildcard())
diamond = dominates(conv, unary, add)
weighted_diamond = dominates(conv, unary | binary | add, add)  # paths through bias_add, multiply, add
relu_from_anything = dominates(wildcard(), is_op("nn.relu")(wildcard()), add)


def leaf_cases() -> list[tuple[str, DFPattern, Expr, list[Expr]]]:
    """(name, pattern, program, the program's nodes that match: its root or none, but for shared-bias)."""
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    bias = relay.var("bias", shape=(4,))
    y = relay.var("y", shape=(1, 4, 6, 6))
    one = relay.const(1.0)
    two = relay.const(np.full((1, 4, 1, 1), 2.0, "float32"))
    c = relay.nn.conv2d(x, w)
    other = relay.nn.conv2d(relay.var("x2", shape=(1, 3, 8, 8)), w)
    leaky = relay.nn.leaky_relu(c, alpha=0.1)
    v = relay.var("v", shape=(3,))
    shared = relay.nn.bias_add(relay.nn.relu(c), bias) + leaky
    cases = [
        ("plus-constant", weighted_diamond, (relay.nn.relu(c) + one) + leaky, True),
        ("relu-of-a-variable", diamond, relay.nn.relu(y) + leaky, False),
        ("bias-add-variable", weighted_diamond, relay.nn.bias_add(relay.nn.relu(c), bias) + leaky, True),
        ("bias-add-from-another-conv", weighted_diamond, relay.nn.bias_add(relay.nn.relu(other), bias) + leaky,
         False),
        ("multiply-constant", weighted_diamond, relay.multiply(relay.nn.relu(c), two) + leaky, True),
        ("multiply-from-another-conv", weighted_diamond, relay.multiply(relay.nn.relu(other), two) + leaky, False),
        ("path-node-of-leaves-only", weighted_diamond, relay.multiply(y, two) + leaky, False),
        ("child-of-leaves-only", dominates(conv, wildcard(), add), y + two, False),
        ("variable-parent", relu_from_anything, v + relay.nn.relu(v), True),
        ("variable-skipped-after-parent", relu_from_anything, relay.nn.relu(v) + v, True),
    ]
    out = [(name, pattern, program, [program] if matches else []) for name, pattern, program, matches in cases]
    # the bias is also used outside the region: it is a leaf, not part of the region, so that is fine
    out.append(("shared-bias", weighted_diamond, relay.Tuple([shared, relay.nn.bias_add(other, bias)]), [shared]))
    return out
