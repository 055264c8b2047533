"""The Relay dataflow pattern language: match, rewrite and partition expression graphs.

    from ir import relay
    from ir.dataflow_pattern import *

    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    fused = is_op("nn.relu")(conv.optional(lambda p: is_op("nn.bias_add")(p, wildcard())))
    x, w = relay.var("x", shape=(1, 3, 8, 8)), relay.var("w", shape=(4, 3, 3, 3))
    graph = relay.nn.relu(relay.nn.conv2d(x, w))
    assert fused.match(graph)
    print(fused.partition(graph, {"Composite": "conv_relu"}))

Semantics follow TVM's Relay implementation (`shared/seeds/pattern-matching-in-relay.txt`); the
corners are documented where they live: each pattern kind, once, in `semantics` (its `KINDS` table,
read by the matcher, the explainer and the e-matching compiler), grouping of matches in `grouping`,
`partition` and `rewrite` in their modules; why a pattern did not match in `explain`. This
direct matcher is the reference the e-graph path must agree with.

A pattern may refer to itself through `wildcard().redirect_to(...)` (a chain of any length);
such recursive patterns work with `match`, `rewrite` and `partition`, and the e-graph path
refuses them (`eqsat.rules.dfpattern`).
"""

from __future__ import annotations

from .builders import (
    dominates,
    has_attr,
    has_dtype,
    has_shape,
    has_type,
    is_constant,
    is_expr,
    is_if,
    is_let,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)
from .errors import InvalidPatternError, PatternError, RewriteDivergenceError, RewriteError
from .explain import CAUSES, MatchExplanation, Miss, explain_match
from .kinds import (
    K_BROADCAST,
    K_COMM_REDUCE,
    K_ELEMWISE,
    K_INJECTIVE,
    K_OPAQUE,
    K_OUT_ELEMWISE_FUSABLE,
    K_TUPLE,
)
from .match import DFPatternMatcher, find_matches, match
from .nodes import (
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    IfPattern,
    LetPattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
    is_recursive,
)
from .partition import partition
from .rewrite import GROWTH_SLACK_NODES, MAX_GROWTH, MAX_REWRITE_PASSES, DFPatternCallback, rewrite
from .semantics import KINDS, TypeCheck

__all__ = [
    # pattern kinds
    "DFPattern", "ExprPattern", "VarPattern", "ConstantPattern", "WildcardPattern", "CallPattern",
    "FunctionPattern", "TuplePattern", "TupleGetItemPattern", "IfPattern", "LetPattern", "AltPattern",
    "TypePattern", "DataTypePattern", "ShapePattern", "AttrPattern", "DominatorPattern",
    # builders
    "is_var", "is_constant", "is_expr", "is_op", "is_tuple", "is_tuple_get_item", "is_if", "is_let",
    "wildcard", "has_type", "has_dtype", "has_shape", "has_attr", "dominates",
    # use
    "match", "find_matches", "DFPatternMatcher", "partition", "rewrite", "DFPatternCallback",
    "explain_match", "MatchExplanation", "Miss", "CAUSES", "is_recursive",
    "MAX_REWRITE_PASSES", "MAX_GROWTH", "GROWTH_SLACK_NODES",
    # the per-kind table of the pattern walk (adding a kind: one entry)
    "KINDS", "TypeCheck",
    # fusion kinds for has_attr({"TOpPattern": ...})
    "K_ELEMWISE", "K_BROADCAST", "K_INJECTIVE", "K_COMM_REDUCE", "K_OUT_ELEMWISE_FUSABLE", "K_TUPLE",
    "K_OPAQUE",
    # errors
    "PatternError", "InvalidPatternError", "RewriteError", "RewriteDivergenceError",
]
