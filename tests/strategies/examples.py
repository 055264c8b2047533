"""One or more example calls of every op, chosen so that every conditional implementation applies somewhere."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import ir
from ir import relay

RNG = np.random.default_rng(7)


def normal(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def positive(*shape):
    return RNG.uniform(0.2, 2.0, size=shape).astype("float32")


@dataclass(frozen=True)
class Example:
    """A call of `op` on concrete inputs with attributes."""

    op: str
    inputs: tuple[Any, ...]
    attrs: dict

    def call(self) -> ir.Call:
        """The typed call on variables (a tuple input becomes a Tuple of variables)."""
        args = []
        for i, value in enumerate(self.inputs):
            if isinstance(value, tuple):
                args.append(relay.Tuple([relay.var(f"in{i}_{j}", shape=v.shape, dtype=v.dtype.name)
                                         for j, v in enumerate(value)]))
            else:
                args.append(relay.var(f"in{i}", shape=value.shape, dtype=value.dtype.name))
        call = ir.get_op(self.op)(*args, **self.attrs)
        ir.infer_type(call)
        return call

    def __str__(self) -> str:
        return f"{self.op}{tuple(getattr(v, 'shape', '') for v in self.inputs)}{self.attrs or ''}"


def ex(op: str, *inputs, **attrs) -> Example:
    return Example(op, inputs, attrs)


UNARY = ["negative", "abs", "copy", "sign", "nn.relu", "sigmoid", "tanh", "erf", "exp", "floor", "ceil", "round", "sin", "cos"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "floor_divide", "mod", "less", "greater",
          "less_equal", "greater_equal", "equal", "not_equal"]
REDUCE = ["sum", "mean", "max", "min", "prod", "argmax", "argmin"]

EXAMPLES: list[Example] = [
    *(ex(op, normal(2, 3, 4)) for op in UNARY),
    *(ex(op, positive(3, 4)) for op in ("log", "sqrt", "rsqrt")),
    ex("logical_not", normal(5) > 0),
    ex("nn.leaky_relu", normal(3, 4), alpha=0.1),
    ex("nn.gelu", normal(3, 4)), ex("nn.gelu", normal(3, 4), approximate="tanh"),
    ex("nn.hard_sigmoid", normal(3, 4) * 4),
    ex("nn.hard_sigmoid", normal(3, 4, dtype="float64") * 4, alpha=0.3, beta=0.4),
    ex("nn.hard_swish", normal(3, 4) * 4), ex("nn.silu", normal(3, 4) * 4),
    ex("nn.quick_gelu", normal(3, 4) * 4), ex("nn.quick_gelu", normal(3, 4, dtype="float64"), alpha=1.0),
    ex("nn.rms_norm", normal(2, 3, 8), positive(8)),
    ex("nn.rms_norm", normal(2, 3, 8), normal(3), axis=1, epsilon=1e-3),
    ex("clip", normal(3, 4), a_min=-0.5, a_max=0.5),
    ex("clip", RNG.integers(-5, 5, size=(6,)).astype("int32"), a_min=-2.0, a_max=3.0),
    ex("cast", normal(3, 4) * 4, dtype="int32"),
    *(ex(op, normal(2, 1, 4), positive(3, 1) + 0.5) for op in BINARY),
    ex("divide", np.array([7, -7, 7, -7], "int32"), np.array([2, 2, -2, -2], "int32")),
    ex("mod", np.array([7, -7, 7, -7], "int32"), np.array([2, 2, -2, -2], "int32")),
    ex("power", positive(3, 4), normal(3, 4)),
    ex("logical_and", normal(4) > 0, normal(4) > 0), ex("logical_or", normal(4) > 0, normal(4) > 0),
    ex("where", normal(3, 1) > 0, normal(3, 4), normal(1, 4)),
    *(ex(op, normal(2, 3, 4), axis=(1, 2), keepdims=True) for op in REDUCE),
    *(ex(op, normal(2, 3, 4), axis=(1,), exclude=True) for op in REDUCE),
    *(ex(op, normal(2, 3), axis=()) for op in ("sum", "max")),
    ex("reshape", normal(2, 3, 4), newshape=(0, -1)),
    ex("transpose", normal(2, 3, 4), axes=(1, 2, 0)), ex("transpose", normal(2, 3)),
    ex("concatenate", (normal(2, 3), normal(2, 1)), axis=1),
    ex("split", normal(6, 2), indices_or_sections=3), ex("split", normal(2, 7), indices_or_sections=(2, 5), axis=1),
    ex("squeeze", normal(1, 3, 1)), ex("squeeze", normal(1, 3, 1), axis=(0,)),
    ex("expand_dims", normal(2, 3), axis=1, num_newaxis=2),
    ex("strided_slice", normal(5, 6), begin=(4, 1), end=(0, 6), strides=(-2, 2)),
    ex("strided_slice", normal(5, 6), begin=(-3,), end=(2,), axes=(1,), slice_mode="size"),
    ex("take", normal(4, 3), np.array([[0, 3], [5, -1]], "int64"), axis=0),
    ex("take", normal(4, 3), np.array([1, 7, -2], "int32"), axis=1, mode="wrap"),
    ex("take", normal(4, 3), np.array([2, 11], "int32")),
    ex("broadcast_to", normal(3, 1), shape=(2, 3, 4)),
    # convolutions: im2col and direct everywhere, 1x1 as GEMM, Winograd (16+ channels), depthwise, NHWC
    ex("nn.conv2d", normal(2, 4, 7, 6), normal(6, 4, 3, 3), padding=(1, 0, 2, 1), strides=(2, 1)),
    ex("nn.conv2d", normal(1, 16, 6, 7), normal(8, 16, 3, 3), padding=1),
    ex("nn.conv2d", normal(2, 6, 5, 5), normal(4, 6, 1, 1), strides=2),
    ex("nn.conv2d", normal(1, 4, 6, 6), normal(4, 1, 3, 3), padding=1, groups=4),
    ex("nn.conv2d", normal(1, 4, 7, 7), normal(6, 2, 3, 2), padding=(1, 1), dilation=(2, 1), groups=2),
    ex("nn.conv2d", normal(1, 6, 6, 4), normal(3, 3, 4, 5), data_layout="NHWC", kernel_layout="HWIO", padding=1),
    ex("nn.conv2d_bias_act", normal(1, 16, 5, 6), normal(8, 16, 3, 3), normal(8), padding=1, activation="relu"),
    ex("nn.conv2d_bias_act", normal(2, 3, 6, 6), normal(4, 3, 1, 1), normal(4), activation="sigmoid"),
    ex("nn.conv2d_bias_act", normal(1, 4, 6, 6), normal(4, 1, 3, 3), normal(4), padding=1, groups=4,
       activation="leaky_relu", alpha=0.2),
    ex("nn.conv2d_bias_act", normal(1, 3, 5, 5), normal(4, 3, 3, 3), normal(4), strides=2, activation="tanh"),
    # GEMMs: blocked only for 256+ rows; stacked for 8+ matrices of at most 32 rows
    ex("nn.dense", normal(3, 16), normal(5, 16)),
    ex("nn.dense", normal(2, 150, 8), normal(4, 8)),
    ex("nn.dense_bias_act", normal(300, 12), normal(6, 12), normal(6), activation="relu"),
    ex("nn.dense_bias_act", normal(4, 12), normal(6, 12), normal(6), activation="tanh"),
    ex("nn.matmul", normal(2, 3, 5), normal(5, 4)),
    ex("nn.matmul", normal(9, 4, 6), normal(9, 5, 4), transpose_a=True, transpose_b=True),
    ex("nn.batch_matmul", normal(10, 6, 5), normal(10, 7, 5)),
    ex("nn.batch_matmul", normal(2, 40, 5), normal(2, 5, 3), transpose_b=False),
    ex("nn.fused_matmul", normal(9, 4, 5), normal(9, 5, 3), alpha=0.5),
    ex("nn.bias_add", normal(2, 3, 4), normal(3)), ex("nn.bias_add", normal(2, 3, 4), normal(4), axis=-1),
    ex("nn.batch_norm", normal(2, 3, 4, 4), normal(3), normal(3), normal(3), positive(3)),
    ex("nn.layer_norm", normal(2, 3, 8), normal(8), normal(8)),
    ex("nn.layer_norm", normal(2, 5, 3), normal(5), normal(5), axis=1, center=False),
    ex("nn.skip_layer_norm", normal(2, 3, 8), normal(2, 3, 8), normal(8), normal(8)),
    *(ex(name, np.array([0.0, np.nan, np.inf, -np.inf, 2.0], "float32")) for name in ("isnan", "isinf", "isfinite")),
    ex("nn.attention", normal(2, 3, 5, 4), normal(2, 3, 6, 4), normal(2, 3, 6, 2), scale=0.5),
    ex("nn.masked_attention", normal(2, 3, 5, 4), normal(2, 3, 6, 4), normal(2, 3, 6, 2), normal(2, 1, 1, 6)),
    ex("nn.masked_attention", normal(2, 3, 5, 4) * 4, normal(2, 3, 6, 4), normal(2, 3, 6, 2), normal(2, 1, 1, 6),
       softcap=2.0),
    ex("nn.cached_attention", normal(2, 4, 3, 4), normal(2, 2, 3, 4), normal(2, 2, 3, 2), normal(2, 2, 5, 4),
       normal(2, 2, 5, 2), normal(2, 1, 3, 8), scale=0.5),
    ex("nn.rotary_embedding", normal(2, 3, 5, 8), normal(1, 5, 4), normal(1, 5, 4)),
    ex("nn.softmax", normal(3, 5)), ex("nn.softmax", normal(3, 5, 2), axis=1),
    ex("nn.log_softmax", normal(3, 5)),
    ex("nn.max_pool2d", normal(1, 2, 7, 6), pool_size=3, strides=2, padding=1, ceil_mode=True),
    ex("nn.max_pool2d", normal(1, 7, 6, 2), pool_size=2, strides=1, dilation=2, layout="NHWC"),
    ex("nn.avg_pool2d", normal(1, 2, 7, 6), pool_size=3, strides=2, padding=(1, 0, 1, 1), ceil_mode=True,
       count_include_pad=True),
    ex("nn.avg_pool2d", normal(2, 3, 6, 6), pool_size=2, strides=2),
    ex("nn.max_pool1d", normal(1, 2, 9), pool_size=3, strides=2, padding=1, ceil_mode=True),
    ex("nn.avg_pool1d", normal(2, 3, 8), pool_size=2, strides=2, padding=1, count_include_pad=True),
    ex("nn.max_pool3d", normal(1, 5, 4, 6, 2), pool_size=2, strides=2, ceil_mode=True, layout="NDHWC"),
    ex("nn.avg_pool3d", normal(1, 2, 4, 5, 4), pool_size=(2, 3, 2), padding=(1, 0, 1)),
    ex("nn.conv1d", normal(2, 4, 9), normal(6, 2, 3), padding=(1, 2), strides=2, groups=2),
    ex("nn.conv3d", normal(1, 2, 4, 5, 4), normal(3, 2, 2, 3, 2), padding=1, dilation=(1, 1, 2)),
    ex("nn.conv1d", normal(1, 3, 7), normal(6, 1, 3), padding=1, groups=3),
    ex("nn.conv3d", normal(2, 3, 4, 3, 2), normal(2, 2, 1, 2, 4), strides=(1, 2, 1), padding=(0, 1, 0),
       data_layout="NDHWC", kernel_layout="DHWIO"),
    ex("nn.conv1d_transpose", normal(1, 4, 5), normal(4, 3, 3), strides=2, padding=1, output_padding=1),
    ex("nn.conv2d_transpose", normal(1, 4, 4, 5), normal(4, 1, 3, 2), strides=(2, 1), dilation=(1, 2), groups=2),
    ex("nn.conv3d_transpose", normal(1, 2, 3, 2, 3), normal(2, 2, 2, 2, 2), strides=2, padding=(1, 0, 0)),
    ex("nn.conv2d_transpose", normal(2, 3, 4, 3), normal(3, 2, 2, 3), strides=2, data_layout="NHWC",
       output_padding=(1, 0)),
    ex("image.resize1d", normal(1, 2, 5), size=(8,), method="nearest_neighbor"),
    ex("image.resize2d", normal(1, 2, 4, 5), size=(3, 7), scales=(0.8, 1.5),
       coordinate_transformation_mode="asymmetric"),
    ex("image.resize3d", normal(1, 3, 2, 4, 2), size=(3, 2, 2), layout="NDHWC",
       coordinate_transformation_mode="tf_crop_and_resize", roi=(0.0, 0.5, -0.5, 1.0, 1.0, 1.5)),
    ex("nn.global_avg_pool2d", normal(2, 3, 4, 5)), ex("nn.global_max_pool2d", normal(2, 4, 5, 3), layout="NHWC"),
    ex("nn.batch_flatten", normal(2, 3, 4)),
    ex("nn.pad", normal(2, 3), pad_width=((1, 0), (2, 1)), pad_value=1.5),
    ex("nn.pad", normal(2, 3), pad_width=((0, 0), (2, 1)), pad_mode="reflect"),
    ex("nn.lrn", normal(1, 6, 2, 2), size=3), ex("nn.lrn", normal(1, 2, 2, 6), size=4, axis=-1),
    ex("nn.bias_gelu", normal(2, 6), normal(6)),
    ex("nn.feed_forward", normal(3, 5), normal(8, 5), normal(8), normal(4, 8), normal(4)),
    # ONNX conformance ops
    ex("nn.elu", normal(3, 4) * 3, alpha=0.5), ex("nn.selu", normal(3, 4) * 3),
    ex("nn.celu", normal(3, 4, dtype="float64") * 3, alpha=2.0),
    ex("nn.shrink", normal(3, 4), lambd=0.3, bias=0.1),
    ex("nn.shrink", RNG.integers(-5, 5, size=(6,)).astype("int32"), lambd=1.0, bias=2.0),
    ex("nn.prelu", normal(2, 3, 4), normal(3)), ex("nn.prelu", normal(2, 3, 4), normal(4), axis=-1),
    ex("nn.instance_norm", normal(2, 3, 4, 4), normal(3), normal(3)),
    ex("nn.instance_norm", normal(2, 4, 3), normal(3), normal(3), axis=2, scale=False),
    ex("floor_mod", np.array([7, -7, 7, -7], "int32"), np.array([2, 2, -2, -2], "int32")),
    ex("argmax", np.array([[1, 3, 3], [2, 2, 0]], "int32"), axis=(1,), select_last_index=True),
    ex("gather", normal(4, 3), np.array([[0, 3, -1], [2, -4, 1]], "int64")),
    ex("gather_nd", normal(3, 4), np.array([[0, 2], [1, -1]], "int64")),
    ex("gather_nd", normal(2, 3, 4), np.array([[[2], [0]]], "int64"), batch_dims=1),
    ex("scatter_nd", normal(3, 4), np.array([[0, 2], [1, 3]], "int64"), normal(2), mode="add"),
    ex("one_hot", np.array([[0, 2], [-1, 5]], "int32"), np.array(1.0, "float32"), np.array(0.0, "float32"),
       depth=4, axis=1),
    ex("cumsum", normal(3, 4), axis=1, exclusive=True), ex("cumsum", np.arange(6, dtype="int64").reshape(2, 3)),
    ex("reverse", normal(3, 4), axis=0),
    ex("topk", normal(3, 5), k=2), ex("topk", normal(3, 5), k=0, axis=0, ret_type="indices", is_ascend=True),
    ex("tile", normal(2, 3), reps=(2, 1, 2)),
    ex("trilu", normal(2, 3, 4), k=-1, upper=False),
    ex("arange", np.array(1.0, "float32"), np.array(4.0, "float32"), np.array(0.5, "float32"), dtype="float32"),
    ex("shape_of", normal(2, 0, 3), dtype="int32"),
    ex("argwhere", np.array([[0, 1.5], [-2, 0], [0, 0]], "float32"), dtype="int32"),
    ex("dyn.reshape", normal(2, 3, 4), np.array([0, 2, -1], "int64")),
    ex("dyn.expand", normal(3, 1), np.array([2, 1, 4], "int32")),
    ex("dyn.strided_slice", normal(4, 7), np.array([-1, 1]), np.array([-9, 100]), np.array([-1, 2]), axes=(0, 1)),
    ex("layout_transform", normal(1, 8, 3, 5), src_layout="NCHW", dst_layout="NCHW4c"),
    ex("layout_transform", normal(1, 2, 3, 5, 4), src_layout="NCHW4c", dst_layout="NHWC"),
    ex("nn.contrib_conv2d_NCHWc", normal(1, 2, 6, 6, 4), normal(3, 2, 3, 3, 4, 4), padding=1,
       data_layout="NCHW4c", kernel_layout="OIHW4i4o", out_layout="NCHW4c"),
    ex("nn.contrib_conv2d_NCHWc_bias_act", normal(1, 3, 6, 6), normal(2, 3, 3, 3, 4), normal(8), strides=2,
       data_layout="NCHW", kernel_layout="OIHW4o", out_layout="NCHW4c", activation="relu"),
    ex("nn.contrib_conv2d_NCHWc_bias_sum_act", normal(1, 2, 5, 5, 4), normal(2, 1, 3, 3, 1, 4), normal(8),
       normal(1, 2, 5, 5, 4), padding=1, groups=8, data_layout="NCHW4c", kernel_layout="OIHW1i4o",
       out_layout="NCHW4c", activation="relu"),
]
