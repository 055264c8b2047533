"""The patterns and rewrite callbacks that `bench_patterns` measures.

Match patterns follow the examples of the Relay pattern-matching guide
(`shared/seeds/pattern-matching-in-relay.txt`), plus the GELU and attention blocks that BERT is
made of. Weights are matched with `wildcard()`: the zoo passes them as parameters, not constants.
The callbacks fuse what the patterns find into the fused ops of `ir.op.fused`; each one leaves a
match alone (returns `post`) when its layouts or constants are not the ones the fused op computes.
"""

from __future__ import annotations

import numpy as np

from ir import relay
from ir.dataflow_pattern import (
    K_ELEMWISE, DFPattern, DFPatternCallback, dominates, is_constant, is_op, is_tuple_get_item, wildcard,
)
from ir.expr import Call, Constant, Expr

__all__ = [
    "FuseConvBias", "FoldConvBatchNorm", "FuseDenseBias", "FuseBiasGelu", "FUSED_OPS", "GELU_CONSTANTS", "PARTITIONED",
    "match_patterns", "partition_patterns", "rewrite_callbacks",
]

#: the ops the callbacks produce
FUSED_OPS = ("nn.conv2d_bias_act", "nn.dense_bias_act", "nn.bias_gelu")

#: the GELU constants of `ir.models.layers.gelu`: 0.5 * x * (1 + erf(x * 2 ** -0.5))
GELU_CONSTANTS = (0.5, 1.0, 2.0 ** -0.5)


def _matched_op(expr: Expr) -> str:
    return expr.op.name if isinstance(expr, Call) else ""


def _is_last_axis(axis: int, typed: Expr) -> bool:
    return axis in (-1, len(typed.checked_type.shape) - 1)


class FuseConvBias(DFPatternCallback):
    """`conv2d -> bias_add (-> relu)` becomes `nn.conv2d_bias_act` when the bias runs over channels."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = is_op("nn.conv2d")(wildcard(), wildcard())
        self.bias = wildcard()
        self.biased = is_op("nn.bias_add")(self.conv, self.bias)
        self.pattern = self.biased.optional(is_op("nn.relu"))

    def callback(self, pre: Expr, post: Expr, node_map: dict[DFPattern, list[Expr]]) -> Expr:
        conv = node_map[self.conv][0]
        if node_map[self.biased][0].attrs.axis % 4 != conv.attrs.data_layout.index("C"):
            return post
        activation = "relu" if _matched_op(pre) == "nn.relu" else "none"
        return relay.nn.conv2d_bias_act(*conv.args, node_map[self.bias][0], **conv.attrs, activation=activation)


class FoldConvBatchNorm(DFPatternCallback):
    """`conv2d -> batch_norm -> [0] (-> relu)` becomes one `nn.conv2d_bias_act` (NCHW/OIHW only).

    The scale `gamma / sqrt(var + eps)` multiplies the weight's output channels and the shift
    `beta - mean * scale` becomes the bias, both as graph expressions over the parameters.
    `normalized` (without the relu) and `activated` (with it) are the guide's patterns.
    """

    def __init__(self) -> None:
        super().__init__(require_type=True)
        self.data, self.weight = wildcard(), wildcard()
        self.gamma, self.beta, self.mean, self.var = wildcard(), wildcard(), wildcard(), wildcard()
        self.conv = is_op("nn.conv2d")(self.data, self.weight)
        self.batch_norm = is_op("nn.batch_norm")(self.conv, self.gamma, self.beta, self.mean, self.var)
        self.normalized = is_tuple_get_item(self.batch_norm, 0)
        self.activated = is_op("nn.relu")(self.normalized)
        self.pattern = self.normalized | self.activated

    def callback(self, pre: Expr, post: Expr, node_map: dict[DFPattern, list[Expr]]) -> Expr:
        conv, norm = node_map[self.conv][0], node_map[self.batch_norm][0]
        if (conv.attrs.data_layout, conv.attrs.kernel_layout, norm.attrs.axis) != ("NCHW", "OIHW", 1):
            return post
        gamma, beta, mean, var = (node_map[p][0] for p in (self.gamma, self.beta, self.mean, self.var))
        scale = relay.rsqrt(var + relay.const(norm.attrs.epsilon, pre.checked_type.dtype))
        if norm.attrs.scale:
            scale = scale * gamma
        shift = beta - mean * scale if norm.attrs.center else relay.negative(mean * scale)
        weight = node_map[self.weight][0] * relay.reshape(scale, newshape=[-1, 1, 1, 1])
        activation = "relu" if _matched_op(pre) == "nn.relu" else "none"
        return relay.nn.conv2d_bias_act(node_map[self.data][0], weight, shift, **conv.attrs, activation=activation)


class FuseDenseBias(DFPatternCallback):
    """`dense -> bias_add` over the last axis becomes `nn.dense_bias_act`."""

    def __init__(self) -> None:
        super().__init__(require_type=True)
        self.dense = is_op("nn.dense")(wildcard(), wildcard())
        self.bias = wildcard()
        self.pattern = is_op("nn.bias_add")(self.dense, self.bias)

    def callback(self, pre: Expr, post: Expr, node_map: dict[DFPattern, list[Expr]]) -> Expr:
        if not _is_last_axis(post.attrs.axis, pre):
            return post
        dense = node_map[self.dense][0]
        return relay.nn.dense_bias_act(*dense.args, node_map[self.bias][0], **dense.attrs)


class FuseBiasGelu(DFPatternCallback):
    """BERT's erf GELU of a last-axis `bias_add`, `0.5 * x * (1 + erf(x / sqrt(2)))`, becomes `nn.bias_gelu`."""

    def __init__(self) -> None:
        super().__init__(require_type=True)
        self.data, self.bias = wildcard(), wildcard()
        self.biased = is_op("nn.bias_add")(self.data, self.bias)
        self.constants = (is_constant(), is_constant(), is_constant())
        half, one, inv_sqrt2 = self.constants
        self.pattern = half * self.biased * (one + is_op("erf")(self.biased * inv_sqrt2))

    def callback(self, pre: Expr, post: Expr, node_map: dict[DFPattern, list[Expr]]) -> Expr:
        biased = node_map[self.biased][0]
        values = [node_map[p][0] for p in self.constants]
        if not _is_last_axis(biased.attrs.axis, pre) or not all(
                isinstance(c, Constant) and c.data.size == 1 and np.isclose(float(c.data.item()), v)
                for c, v in zip(values, GELU_CONSTANTS, strict=True)):
            return post
        return relay.nn.bias_gelu(node_map[self.data][0], node_map[self.bias][0])


def match_patterns() -> dict[str, DFPattern]:
    """The guide's fusion patterns plus BERT's attention and GELU blocks, by name (fresh objects)."""
    is_elemwise = wildcard().has_attr({"TOpPattern": K_ELEMWISE})
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    gamma, x, mean, var, eps, beta = (wildcard() for _ in range(6))
    scores = is_op("nn.batch_matmul")(wildcard(), wildcard()) / is_constant()
    return {
        "conv2d_bias_relu": FuseConvBias().pattern,
        "conv2d_bn_relu": FoldConvBatchNorm().activated,
        "diamond": is_op("add")(is_op("nn.relu")(conv), is_op("nn.leaky_relu")(conv)),
        "dominator_diamond": dominates(conv, is_elemwise(wildcard()), is_op("add")(wildcard(), wildcard())),
        "dense_bias": FuseDenseBias().pattern,
        "batch_norm_arith": gamma * (x - mean) / is_op("sqrt")(var + eps) + beta,
        "add_or_mul_const": (wildcard() + is_constant()) | (wildcard() * is_constant()),
        "relu_elemwise_attr": is_op("nn.relu").has_attr({"TOpPattern": K_ELEMWISE})(wildcard()),
        "attention": is_op("nn.batch_matmul")(is_op("nn.softmax")(scores), wildcard()),
        "bias_gelu": FuseBiasGelu().pattern,
    }


#: the fusion patterns `bench_patterns` partitions each model with (names of `match_patterns`)
PARTITIONED = ("conv2d_bn_relu", "dense_bias", "attention")


def partition_patterns() -> dict[str, DFPattern]:
    """The `PARTITIONED` subset of `match_patterns`."""
    patterns = match_patterns()
    return {name: patterns[name] for name in PARTITIONED}


def rewrite_callbacks() -> dict[str, list[DFPatternCallback]]:
    """Callback lists to time with `rewrite`, by name; `all` applies every callback in one rewrite."""
    single = {"fuse_conv_bias": FuseConvBias(), "fold_conv_bn": FoldConvBatchNorm(),
              "fuse_bias_gelu": FuseBiasGelu(), "fuse_dense_bias": FuseDenseBias()}
    return {**{name: [cb] for name, cb in single.items()}, "all": list(single.values())}
