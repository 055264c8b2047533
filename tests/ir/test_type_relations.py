"""Every op's type relation: the output type on good inputs, a named error on bad ones."""

from __future__ import annotations

import pytest

import ir
from ir import relay
from ir.errors import TypeInferenceError


def v(shape, dtype="float32", name="x"):
    return relay.var(name, shape=shape, dtype=dtype)


def infer(expr):
    return ir.infer_type(expr).checked_type


F = (2, 3)
IMG = (1, 4, 8, 8)
# op name -> (builder returning an expression, expected type as a string)
GOOD = {
    **{name: (lambda n=name: relay.op.get(n)(v(F)), "Tensor[(2, 3), float32]")
       for name in ("negative", "abs", "copy", "sign", "nn.relu", "sigmoid", "tanh", "erf", "exp", "log",
                    "sqrt", "rsqrt", "floor", "ceil", "round", "sin", "cos")},
    **{name: (lambda n=name: relay.op.get(n)(v((2, 1)), v((1, 3), name="y")), "Tensor[(2, 3), float32]")
       for name in ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "floor_divide", "mod")},
    **{name: (lambda n=name: relay.op.get(n)(v(F), v((3,), name="y")), "Tensor[(2, 3), bool]")
       for name in ("less", "greater", "less_equal", "greater_equal", "equal", "not_equal")},
    "logical_not": (lambda: relay.logical_not(v(F, "bool")), "Tensor[(2, 3), bool]"),
    "logical_and": (lambda: relay.logical_and(v(F, "bool"), v(F, "bool", "y")), "Tensor[(2, 3), bool]"),
    "logical_or": (lambda: relay.logical_or(v(F, "bool"), v(F, "bool", "y")), "Tensor[(2, 3), bool]"),
    "where": (lambda: relay.where(v((2, 1), "bool"), v(F, name="a"), v((3,), name="b")), "Tensor[(2, 3), float32]"),
    "nn.leaky_relu": (lambda: relay.nn.leaky_relu(v(F), 0.1), "Tensor[(2, 3), float32]"),
    "nn.gelu": (lambda: relay.nn.gelu(v(F)), "Tensor[(2, 3), float32]"),
    "nn.hard_sigmoid": (lambda: relay.nn.hard_sigmoid(v(F, "float16"), alpha=0.1), "Tensor[(2, 3), float16]"),
    "nn.hard_swish": (lambda: relay.nn.hard_swish(v(F)), "Tensor[(2, 3), float32]"),
    "nn.silu": (lambda: relay.nn.silu(v(F, "float64")), "Tensor[(2, 3), float64]"),
    "nn.quick_gelu": (lambda: relay.nn.quick_gelu(v(F)), "Tensor[(2, 3), float32]"),
    "nn.rms_norm": (lambda: relay.nn.rms_norm(v(IMG), v((4,), name="g"), axis=1), "Tensor[(1, 4, 8, 8), float32]"),
    "clip": (lambda: relay.clip(v(F), 0.0, 6.0), "Tensor[(2, 3), float32]"),
    "cast": (lambda: relay.cast(v(F), "int64"), "Tensor[(2, 3), int64]"),
    "nn.conv2d": (lambda: relay.nn.conv2d(v(IMG), v((6, 2, 3, 3), name="w"), strides=2, padding=1, groups=2),
                  "Tensor[(1, 6, 4, 4), float32]"),
    "nn.dense": (lambda: relay.nn.dense(v((5, 7)), v((3, 7), name="w")), "Tensor[(5, 3), float32]"),
    "nn.matmul": (lambda: relay.nn.matmul(v((4, 1, 5, 7)), v((3, 7, 2), name="w")), "Tensor[(4, 3, 5, 2), float32]"),
    "nn.batch_matmul": (lambda: relay.nn.batch_matmul(v((2, 5, 7)), v((2, 3, 7), name="w")),
                        "Tensor[(2, 5, 3), float32]"),
    "nn.bias_add": (lambda: relay.nn.bias_add(v(IMG), v((4,), name="b")), "Tensor[(1, 4, 8, 8), float32]"),
    "nn.batch_norm": (lambda: relay.nn.batch_norm(v(IMG), *(v((4,), name=n) for n in "gbmv")),
                      "(Tensor[(1, 4, 8, 8), float32], Tensor[(4,), float32], Tensor[(4,), float32])"),
    "nn.layer_norm": (lambda: relay.nn.layer_norm(v(F), v((3,), name="g"), v((3,), name="b")),
                      "Tensor[(2, 3), float32]"),
    "nn.softmax": (lambda: relay.nn.softmax(v(F), axis=0), "Tensor[(2, 3), float32]"),
    "nn.log_softmax": (lambda: relay.nn.log_softmax(v(F)), "Tensor[(2, 3), float32]"),
    "nn.max_pool2d": (lambda: relay.nn.max_pool2d(v((1, 4, 7, 7)), 3, 2, ceil_mode=True),
                      "Tensor[(1, 4, 3, 3), float32]"),
    "nn.avg_pool2d": (lambda: relay.nn.avg_pool2d(v(IMG), (2, 2), (2, 2), padding=(1, 1)),
                      "Tensor[(1, 4, 5, 5), float32]"),
    "nn.global_avg_pool2d": (lambda: relay.nn.global_avg_pool2d(v(IMG)), "Tensor[(1, 4, 1, 1), float32]"),
    "nn.global_max_pool2d": (lambda: relay.nn.global_max_pool2d(v((1, 8, 8, 4)), layout="NHWC"),
                             "Tensor[(1, 1, 1, 4), float32]"),
    "nn.batch_flatten": (lambda: relay.nn.batch_flatten(v(IMG)), "Tensor[(1, 256), float32]"),
    "nn.pad": (lambda: relay.nn.pad(v(F), ((1, 0), (2, 2))), "Tensor[(3, 7), float32]"),
    "nn.lrn": (lambda: relay.nn.lrn(v(IMG), size=3), "Tensor[(1, 4, 8, 8), float32]"),
    "reshape": (lambda: relay.reshape(v(IMG), (0, -1, 4)), "Tensor[(1, 64, 4), float32]"),
    "transpose": (lambda: relay.transpose(v(IMG), (0, 2, 3, 1)), "Tensor[(1, 8, 8, 4), float32]"),
    "concatenate": (lambda: relay.concatenate([v(F), v((2, 5), name="y")], axis=1), "Tensor[(2, 8), float32]"),
    "split": (lambda: relay.split(v((6, 3)), (1, 4)),
              "(Tensor[(1, 3), float32], Tensor[(3, 3), float32], Tensor[(2, 3), float32])"),
    "squeeze": (lambda: relay.squeeze(v((1, 3, 1))), "Tensor[(3,), float32]"),
    "expand_dims": (lambda: relay.expand_dims(v(F), 1, 2), "Tensor[(2, 1, 1, 3), float32]"),
    "strided_slice": (lambda: relay.strided_slice(v((10, 6)), (1, -1), (8, 0), (3, -2)),
                      "Tensor[(3, 3), float32]"),
    "take": (lambda: relay.take(v((100, 16)), v((2, 5), "int32", "ids"), axis=0), "Tensor[(2, 5, 16), float32]"),
    "broadcast_to": (lambda: relay.broadcast_to(v((3,)), (2, 3)), "Tensor[(2, 3), float32]"),
    **{name: (lambda n=name: relay.op.get(n)(v(IMG), axis=(2, 3), keepdims=True), "Tensor[(1, 4, 1, 1), float32]")
       for name in ("sum", "mean", "max", "min", "prod")},
    "argmax": (lambda: relay.argmax(v(F), axis=1), "Tensor[(2,), int32]"),
    "argmin": (lambda: relay.argmin(v(F), axis=0, exclude=True), "Tensor[(2,), int32]"),
    **{name: (lambda n=name: relay.op.get(n)(v(F, "float16")), "Tensor[(2, 3), float16]")
       for name in ("nn.elu", "nn.selu", "nn.celu")},
    "nn.shrink": (lambda: relay.nn.shrink(v(F, "int8")), "Tensor[(2, 3), int8]"),
    "nn.prelu": (lambda: relay.nn.prelu(v(IMG), v((4,), name="a")), "Tensor[(1, 4, 8, 8), float32]"),
    "nn.instance_norm": (lambda: relay.nn.instance_norm(v(IMG), v((8,), name="g"), v((8,), name="b"), axis=-1),
                         "Tensor[(1, 4, 8, 8), float32]"),
    "floor_mod": (lambda: relay.floor_mod(v((2, 1), "int64"), v((3,), "int64", "y")), "Tensor[(2, 3), int64]"),
    "gather": (lambda: relay.gather(v((4, 5)), v((2, 5), "int64", "i"), axis=-2), "Tensor[(2, 5), float32]"),
    "gather_nd": (lambda: relay.gather_nd(v((2, 5, 6, 7)), v((2, 2, 3), "int64", "i"), batch_dims=1),
                  "Tensor[(2, 3, 7), float32]"),
    "scatter_nd": (lambda: relay.scatter_nd(v((4, 5, 6)), v((2, 3), "int64", "i"), v((3, 6), name="u")),
                   "Tensor[(4, 5, 6), float32]"),
    "one_hot": (lambda: relay.one_hot(v(F, "int32", "i"), relay.const(1, "int8"), relay.const(0, "int8"), 4, 1,
                                      "int8"), "Tensor[(2, 4, 3), int8]"),
    "cumsum": (lambda: relay.cumsum(v(F, "int32")), "Tensor[(6,), int32]"),
    "reverse": (lambda: relay.reverse(v(F), axis=-1), "Tensor[(2, 3), float32]"),
    "topk": (lambda: relay.topk(v(IMG), 3, axis=1, dtype="int64"),
             "(Tensor[(1, 3, 8, 8), float32], Tensor[(1, 3, 8, 8), int64])"),
    "tile": (lambda: relay.tile(v(F), (2, 1, 2)), "Tensor[(2, 2, 6), float32]"),
    "trilu": (lambda: relay.trilu(v(F), 1, False), "Tensor[(2, 3), float32]"),
    "arange": (lambda: relay.arange(*(v((), "int64", n) for n in "abc"), dtype="int64"), "Tensor[(?,), int64]"),
    "shape_of": (lambda: relay.shape_of(v(IMG), dtype="int32"), "Tensor[(4,), int32]"),
    "argwhere": (lambda: relay.argwhere(v(IMG)), "Tensor[(?, 4), int64]"),
    "dyn.reshape": (lambda: relay.dyn.reshape(v(IMG), v((3,), "int64", "s")), "Tensor[(?, ?, ?), float32]"),
    "dyn.expand": (lambda: relay.dyn.expand(v((3, 1)), v((3,), "int64", "s")), "Tensor[(?, 3, ?), float32]"),
    "dyn.strided_slice": (lambda: relay.dyn.strided_slice(v(IMG), *(v((2,), "int64", n) for n in "bes"),
                                                          axes=[1, -1]), "Tensor[(1, ?, 8, ?), float32]"),
    "nn.conv2d_bias_act": (lambda: relay.nn.conv2d_bias_act(v(IMG), v((6, 4, 1, 1), name="w"), v((6,), name="b"),
                                                            activation="relu"), "Tensor[(1, 6, 8, 8), float32]"),
    "nn.dense_bias_act": (lambda: relay.nn.dense_bias_act(v((5, 7)), v((3, 7), name="w"), v((3,), name="b")),
                          "Tensor[(5, 3), float32]"),
    "nn.fused_matmul": (lambda: relay.nn.fused_matmul(v((5, 7)), v((3, 7), name="w"), transpose_b=True, alpha=0.5),
                        "Tensor[(5, 3), float32]"),
    "nn.bias_gelu": (lambda: relay.nn.bias_gelu(v(F), v((3,), name="b")), "Tensor[(2, 3), float32]"),
    "nn.feed_forward": (lambda: relay.nn.feed_forward(v((2, 5, 7)), v((4, 7), name="w1"), v((4,), name="b1"),
                                                      v((3, 4), name="w2"), v((3,), name="b2")),
                        "Tensor[(2, 5, 3), float32]"),
    "nn.skip_layer_norm": (lambda: relay.nn.skip_layer_norm(v(F), v(F, name="s"), v((3,), name="g"),
                                                            v((3,), name="b")), "Tensor[(2, 3), float32]"),
    **{name: (lambda name=name: getattr(relay, name)(v((2, 3))), "Tensor[(2, 3), bool]")
       for name in ("isnan", "isinf", "isfinite")},
    "nn.rotary_embedding": (lambda: relay.nn.rotary_embedding(v((2, 3, 5, 8)), v((1, 5, 2), name="c"),
                                                              v((1, 5, 2), name="s")), "Tensor[(2, 3, 5, 8), float32]"),
    "nn.attention": (lambda: relay.nn.attention(v((2, 3, 5, 4)), v((2, 3, 6, 4), name="k"), v((2, 3, 6, 2), name="w")),
                     "Tensor[(2, 3, 5, 2), float32]"),
    "nn.masked_attention": (lambda: relay.nn.masked_attention(v((2, 3, 5, 4)), v((2, 3, 6, 4), name="k"),
                                                              v((2, 3, 6, 2), name="w"), v((5, 6), name="m")),
                            "Tensor[(2, 3, 5, 2), float32]"),
    "nn.cached_attention": (lambda: relay.nn.cached_attention(v((2, 4, 3, 4)), v((2, 2, 3, 4), name="k"),
                                                              v((2, 2, 3, 2), name="w"), v((2, 2, 5, 4), name="pk"),
                                                              v((2, 2, 5, 2), name="pw"), v((3, 8), name="m")),
                            "(Tensor[(2, 4, 3, 2), float32], Tensor[(2, 2, 8, 4), float32], "
                            "Tensor[(2, 2, 8, 2), float32])"),
    "nn.conv1d": (lambda: relay.nn.conv1d(v((1, 4, 9)), v((6, 2, 3), name="w"), strides=2, padding=1, groups=2),
                  "Tensor[(1, 6, 5), float32]"),
    "nn.conv3d": (lambda: relay.nn.conv3d(v((1, 5, 6, 7, 4)), v((2, 3, 3, 4, 2), name="w"), padding=(1, 0, 1),
                                          data_layout="NDHWC", kernel_layout="DHWIO"), "Tensor[(1, 6, 4, 7, 2), float32]"),
    "nn.conv1d_transpose": (lambda: relay.nn.conv1d_transpose(v((1, 4, 5)), v((4, 3, 3), name="w"), strides=2,
                                                              padding=1, output_padding=1), "Tensor[(1, 3, 10), float32]"),
    "nn.conv2d_transpose": (lambda: relay.nn.conv2d_transpose(v((1, 4, 5, 5)), v((4, 1, 3, 3), name="w"), strides=2,
                                                              padding=1, groups=2), "Tensor[(1, 2, 9, 9), float32]"),
    "nn.conv3d_transpose": (lambda: relay.nn.conv3d_transpose(v((1, 2, 3, 3, 3)), v((2, 4, 2, 2, 2), name="w"),
                                                              dilation=2), "Tensor[(1, 4, 5, 5, 5), float32]"),
    "nn.max_pool1d": (lambda: relay.nn.max_pool1d(v((1, 2, 9)), 3, 2, ceil_mode=True), "Tensor[(1, 2, 4), float32]"),
    "nn.avg_pool1d": (lambda: relay.nn.avg_pool1d(v((1, 2, 9)), 2, 2, padding=1), "Tensor[(1, 2, 5), float32]"),
    "nn.max_pool3d": (lambda: relay.nn.max_pool3d(v((1, 2, 5, 4, 6)), 2, 2, ceil_mode=True),
                      "Tensor[(1, 2, 3, 2, 3), float32]"),
    "nn.avg_pool3d": (lambda: relay.nn.avg_pool3d(v((1, 2, 5, 4, 6)), (3, 1, 2), padding=(1, 0, 0)),
                      "Tensor[(1, 2, 5, 4, 5), float32]"),
    "image.resize1d": (lambda: relay.image.resize1d(v((1, 2, 5)), (9,)), "Tensor[(1, 2, 9), float32]"),
    "image.resize2d": (lambda: relay.image.resize2d(v((1, 4, 5, 2)), (3, 7), layout="NHWC", method="nearest_neighbor"),
                       "Tensor[(1, 3, 7, 2), float32]"),
    "image.resize3d": (lambda: relay.image.resize3d(v((1, 2, 3, 4, 5), "float16"), (6, 2, 1)),
                       "Tensor[(1, 2, 6, 2, 1), float16]"),
    "layout_transform": (lambda: relay.layout_transform(v((1, 8, 3, 5)), "NCHW", "NCHW4c"),
                         "Tensor[(1, 2, 3, 5, 4), float32]"),
    "nn.contrib_conv2d_NCHWc": (lambda: relay.nn.contrib_conv2d_NCHWc(
        v((1, 2, 6, 6, 4)), v((3, 2, 3, 3, 4, 4), name="w"), strides=2, data_layout="NCHW4c",
        kernel_layout="OIHW4i4o", out_layout="NCHW4c"), "Tensor[(1, 3, 2, 2, 4), float32]"),
    "nn.contrib_conv2d_NCHWc_bias_act": (lambda: relay.nn.contrib_conv2d_NCHWc_bias_act(
        v((1, 3, 6, 6)), v((2, 3, 3, 3, 4), name="w"), v((8,), name="b"), padding=1, data_layout="NCHW",
        kernel_layout="OIHW4o", out_layout="NCHW4c"), "Tensor[(1, 2, 6, 6, 4), float32]"),
    "nn.contrib_conv2d_NCHWc_bias_sum_act": (lambda: relay.nn.contrib_conv2d_NCHWc_bias_sum_act(
        v((1, 2, 6, 6, 4)), v((2, 1, 3, 3, 1, 4), name="w"), v((8,), name="b"), v((1, 8, 6, 6), name="s"),
        padding=1, groups=8, data_layout="NCHW4c", kernel_layout="OIHW1i4o", out_layout="NCHW"),
        "Tensor[(1, 8, 6, 6), float32]"),
}

# op name -> builder of an ill-typed call, and a fragment the error must contain
BAD = {
    "layout_transform": (lambda: relay.layout_transform(v((1, 6, 3, 5)), "NCHW", "NCHW4c"), "blocks of 4"),
    "layout_transform-axes": (lambda: relay.layout_transform(v((1, 8, 3, 5)), "NCHW", "NCDW"), "same axes"),
    "nn.contrib_conv2d_NCHWc": (lambda: relay.nn.contrib_conv2d_NCHWc(
        v((1, 2, 6, 6, 4)), v((3, 1, 3, 3, 4, 4), name="w"), data_layout="NCHW4c", kernel_layout="OIHW4i4o",
        out_layout="NCHW4c"), "8 channels"),
    "nn.contrib_conv2d_NCHWc_bias_sum_act": (lambda: relay.nn.contrib_conv2d_NCHWc_bias_sum_act(
        v((1, 2, 6, 6, 4)), v((2, 2, 1, 1, 4, 4), name="w"), v((8,), name="b"), v((1, 2, 6, 6, 8), name="s"),
        data_layout="NCHW4c", kernel_layout="OIHW4i4o", out_layout="NCHW4c"), "sum input"),
    "add": (lambda: relay.add(v((2, 3)), v((4, 3), name="y")), "dimension 0 is 2 vs 4"),
    "add-dtype": (lambda: relay.add(v(F), v(F, "int32", "y")), "one dtype"),
    "nn.conv2d": (lambda: relay.nn.conv2d(v(IMG), v((6, 3, 3, 3), name="w")), "4 channels"),
    "nn.conv2d-kernel": (lambda: relay.nn.conv2d(v((1, 4, 2, 2)), v((6, 4, 3, 3), name="w")), "larger than"),
    "nn.dense": (lambda: relay.nn.dense(v((5, 7)), v((3, 6), name="w")), "last dimension 7"),
    "nn.feed_forward": (lambda: relay.nn.feed_forward(v((5, 7)), v((4, 7), name="w1"), v((4,), name="b1"),
                                                      v((3, 5), name="w2"), v((3,), name="b2")), "last dimension 4"),
    "nn.batch_matmul": (lambda: relay.nn.batch_matmul(v((2, 5, 7)), v((2, 3, 6), name="w")), "7 vs 6"),
    "nn.bias_add": (lambda: relay.nn.bias_add(v(IMG), v((5,), name="b")), "length"),
    "nn.batch_norm": (lambda: relay.nn.batch_norm(v(IMG), *(v((3,), name=n) for n in "gbmv")), "gamma"),
    "reshape": (lambda: relay.reshape(v(F), (4, 2)), "cannot reshape"),
    "transpose": (lambda: relay.transpose(v(F), (0, 0)), "permutation"),
    "concatenate": (lambda: relay.concatenate([v(F), v((3, 3), name="y")], axis=1), "dimension 0 differs"),
    "split": (lambda: relay.split(v((5, 3)), 2), "equal sections"),
    "squeeze": (lambda: relay.squeeze(v(F), axis=[0]), "cannot squeeze"),
    "take": (lambda: relay.take(v(F), v((2,), "float32", "i")), "indices"),
    "where": (lambda: relay.where(v(F), v(F, name="a"), v(F, name="b")), "bool"),
    "nn.softmax": (lambda: relay.nn.softmax(v(F), axis=2), "out of range"),
    "nn.silu": (lambda: relay.nn.silu(v(F, "int32")), "floating-point"),
    "nn.rms_norm": (lambda: relay.nn.rms_norm(v(F), v((2,), name="g")), "gamma"),
    "nn.rms_norm-dtype": (lambda: relay.nn.rms_norm(v(F, "int32"), v((3,), "int32", "g")), "floating-point"),
    "nn.max_pool2d": (lambda: relay.nn.max_pool2d(v(F)), "4-D"),
    "nn.conv3d": (lambda: relay.nn.conv3d(v((1, 3, 4, 4, 4)), v((2, 4, 1, 1, 1), name="w")), "3 channels"),
    "image.resize2d": (lambda: relay.image.resize2d(v((1, 2, 4, 4), "int32"), (3, 3)), "floating-point"),
    "nn.conv2d_transpose": (lambda: relay.nn.conv2d_transpose(v((1, 3, 4, 4)), v((4, 2, 3, 3), name="w")),
                            "expects 4"),
    "sum": (lambda: relay.sum(v(F), axis=(0, 0)), "repeat"),
    "nn.matmul": (lambda: relay.nn.matmul(v((2, 5, 7)), v((3, 7, 2), name="w")), "broadcast"),
}


def test_every_registered_op_has_a_type_relation_case():
    assert sorted(set(ir.list_ops()) - set(GOOD)) == []


@pytest.mark.parametrize("name", sorted(GOOD))
def test_type_relation(name):
    build, expected = GOOD[name]
    assert str(infer(build())) == expected


@pytest.mark.parametrize("name", sorted(BAD))
def test_ill_typed_call_names_op_and_shapes(name):
    build, fragment = BAD[name]
    with pytest.raises(TypeInferenceError) as err:
        infer(build())
    message = str(err.value)
    assert message.startswith(name.split("-")[0] + ":"), message
    assert fragment in message
    assert "Tensor[" in message  # the input shapes are shown


def test_symbolic_dimensions_flow_through():
    n = ir.SizeVar("n")
    x = relay.var("x", ir.TensorType((n, 3, 8, 8)))
    y = relay.nn.conv2d(x, v((4, 3, 3, 3), name="w"), padding=1)
    z = relay.nn.batch_flatten(relay.nn.relu(y))
    assert str(infer(z)) == "Tensor[(n, 256), float32]"
    dyn = relay.var("d", ir.TensorType((ir.Any, 3)))
    assert str(infer(relay.add(dyn, v((4, 3), name="y")))) == "Tensor[(4, 3), float32]"
    assert str(infer(relay.nn.conv2d(relay.var("i", ir.TensorType((1, 3, ir.Any, 8))), v((4, 3, 3, 3), name="w"))))\
        == "Tensor[(1, 4, ?, 6), float32]"


def test_nhwc_convolution():
    y = relay.nn.conv2d(v((1, 8, 8, 3)), v((3, 3, 3, 16), name="w"), padding=1, data_layout="NHWC",
                        kernel_layout="HWIO")
    assert str(infer(y)) == "Tensor[(1, 8, 8, 16), float32]"


def test_tuple_get_item_and_functions():
    x = v(F)
    t = relay.Tuple([x, relay.nn.relu(x)])
    assert str(infer(t[1])) == "Tensor[(2, 3), float32]"
    with pytest.raises(TypeInferenceError, match="out of range"):
        infer(relay.TupleGetItem(t, 2))
    f = relay.Function([x], relay.sigmoid(x))
    y = v(F, name="y")
    assert str(infer(f(y))) == "Tensor[(2, 3), float32]"
    with pytest.raises(TypeInferenceError, match="expected Tensor"):
        infer(f(v((3, 3), name="z")))


def test_if_and_let():
    x, y = v(F), v(F, name="y")
    cond = relay.var("c", shape=(), dtype="bool")
    assert str(infer(relay.If(cond, x, relay.nn.relu(y)))) == "Tensor[(2, 3), float32]"
    with pytest.raises(TypeInferenceError, match="bool"):
        infer(relay.If(x, x, y))
    lv = relay.var("t")
    assert str(infer(relay.Let(lv, relay.add(x, y), relay.multiply(lv, lv)))) == "Tensor[(2, 3), float32]"


def test_untyped_variable_is_a_clear_error():
    with pytest.raises(TypeInferenceError, match="variable %x has no type"):
        infer(relay.nn.relu(relay.var("x")))
