"""The guide's fusion patterns, shared by the scale and determinism tests."""

from __future__ import annotations

from ir.dataflow_pattern import K_ELEMWISE, DFPattern, dominates, is_op, is_tuple_get_item, wildcard


def fusion_patterns() -> dict[str, DFPattern]:
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    bn = is_op("nn.batch_norm")(conv, wildcard(), wildcard(), wildcard(), wildcard())
    elemwise = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())
    return {
        "conv_bias_relu": is_op("nn.bias_add")(conv, wildcard()).optional(lambda p: is_op("nn.relu")(p)),
        "conv_bn_relu": is_op("nn.relu")(is_tuple_get_item(bn, 0)),
        "dense_bias": is_op("nn.bias_add")(is_op("nn.dense")(wildcard(), wildcard()), wildcard()),
        "residual_relu": is_op("nn.relu")(is_op("add")(wildcard(), wildcard())),
        "conv_diamond": dominates(conv, elemwise | is_tuple_get_item(wildcard()) | bn,
                                  is_op("add")(wildcard(), wildcard())),
        "relu_shape": is_op("nn.relu")(wildcard()).has_dtype("float32"),
    }
