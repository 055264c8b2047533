"""One small IR program per registered op (several for ops with modes), with a numpy reference for many.

Each case names its inputs (shape, dtype, value kind), builds the program from `relay` variables of
those names, and may give `ref(**inputs)`, the expected output(s) computed with numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.special import erf

from ir import relay
from tests.ir.frontend import numpy_refs as R
from tests.strategies import naive_windows as W
from tests.strategies.naive_resize import resize_loop

F32 = "float32"


@dataclass(frozen=True)
class Case:
    id: str
    inputs: dict[str, tuple]   # name -> (shape, dtype, kind); kind: normal, positive, int, bool
    build: Callable
    ref: Callable | None = None
    tags: tuple[str, ...] = field(default=())


def fx(*shape, kind="normal"):
    return (shape, F32, kind)


def ix(*shape, dtype="int32"):
    return (shape, dtype, "int")


def bx(*shape):
    return (shape, "bool", "bool")


XY = {"x": fx(2, 3, 4), "y": fx(3, 1)}
CASES: list[Case] = []

# -- element-wise -----------------------------------------------------------------------------------
for name, fn in [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("maximum", np.maximum),
                 ("minimum", np.minimum)]:
    CASES.append(Case(name, XY, getattr(relay, name), fn))
CASES += [
    Case("divide", {"x": fx(2, 3, 4), "y": fx(3, 1, kind="positive")}, relay.divide, np.divide),
    Case("power", {"x": fx(2, 3, kind="positive"), "y": fx(2, 3)}, relay.power, np.power),
    Case("mod", {"x": fx(2, 3, 4), "y": fx(4, kind="positive")}, relay.mod, np.fmod),
    Case("floor_divide", {"x": fx(2, 3, 4), "y": fx(4, kind="positive")}, relay.floor_divide, np.floor_divide),
    Case("floor_divide-int", {"x": ix(2, 5), "y": ix(5)}, relay.floor_divide, np.floor_divide),
    Case("mod-int", {"x": ix(2, 5), "y": ix(5)}, relay.mod, np.fmod),
]
for name, fn in [("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less), ("greater", np.greater),
                 ("less_equal", np.less_equal), ("greater_equal", np.greater_equal)]:
    CASES.append(Case(name, {"x": ix(3, 4), "y": ix(4)}, getattr(relay, name), fn))
CASES += [
    Case("logical_and", {"x": bx(3, 4), "y": bx(4)}, relay.logical_and, np.logical_and),
    Case("logical_or", {"x": bx(3, 4), "y": bx(4)}, relay.logical_or, np.logical_or),
    Case("logical_not", {"x": bx(3, 4)}, relay.logical_not, np.logical_not),
    Case("where", {"c": bx(2, 3), "x": fx(2, 3), "y": fx(3)}, relay.where, np.where),
]
for name, fn, kind in [("abs", np.abs, "normal"), ("negative", np.negative, "normal"), ("copy", np.copy, "normal"),
                       ("sign", np.sign, "normal"), ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), "normal"),
                       ("tanh", np.tanh, "normal"), ("erf", erf, "normal"), ("exp", np.exp, "normal"),
                       ("log", np.log, "positive"), ("sqrt", np.sqrt, "positive"),
                       ("rsqrt", lambda x: 1 / np.sqrt(x), "positive"), ("floor", np.floor, "normal"),
                       ("ceil", np.ceil, "normal"), ("round", np.round, "normal"), ("sin", np.sin, "normal"),
                       ("cos", np.cos, "normal")]:
    CASES.append(Case(name, {"x": fx(2, 3, 4, kind=kind)}, getattr(relay, name), fn))
CASES += [
    Case("nn.relu", {"x": fx(2, 3)}, relay.nn.relu, lambda x: np.maximum(x, 0)),
    Case("nn.leaky_relu", {"x": fx(2, 3)}, lambda x: relay.nn.leaky_relu(x, alpha=0.2),
         lambda x: np.where(x < 0, 0.2 * x, x)),
    Case("nn.gelu", {"x": fx(2, 3)}, relay.nn.gelu, R.gelu),
    Case("nn.gelu-tanh", {"x": fx(2, 3)}, lambda x: relay.nn.gelu(x, approximate="tanh"),
         lambda x: R.gelu(x, "tanh")),
    Case("nn.hard_sigmoid", {"x": fx(2, 3, 4)}, lambda x: relay.nn.hard_sigmoid(x * relay.const(3.0), 0.3, 0.4),
         lambda x: np.clip(0.9 * x + 0.4, 0, 1)),
    Case("nn.hard_swish", {"x": fx(2, 3, 4)}, lambda x: relay.nn.hard_swish(x * relay.const(3.0)),
         lambda x: 3 * x * np.clip(x / 2 + 0.5, 0, 1)),
    Case("nn.silu", {"x": fx(2, 3)}, relay.nn.silu, lambda x: x / (1 + np.exp(-x))),
    Case("nn.quick_gelu", {"x": fx(2, 3)}, relay.nn.quick_gelu, lambda x: x / (1 + np.exp(-1.702 * x))),
    Case("clip", {"x": fx(2, 3, 4)}, lambda x: relay.clip(x, a_min=-0.5, a_max=0.7), lambda x: np.clip(x, -0.5, 0.7)),
    Case("clip-int", {"x": ix(2, 5, dtype="int64")}, lambda x: relay.clip(x, a_min=-2, a_max=3),
         lambda x: np.clip(x, -2, 3)),
    Case("cast", {"x": fx(2, 3)}, lambda x: relay.cast(x * relay.const(7.0), "int32"),
         lambda x: (x * np.float32(7)).astype("int32")),
]

# -- layout and indexing ------------------------------------------------------------------------------
CASES += [
    Case("reshape", {"x": fx(2, 3, 4)}, lambda x: relay.reshape(x, newshape=[0, -1]), lambda x: x.reshape(2, 12)),
    Case("transpose", {"x": fx(2, 3, 4)}, lambda x: relay.transpose(x, axes=[1, 0, 2]),
         lambda x: x.transpose(1, 0, 2)),
    Case("transpose-reverse", {"x": fx(2, 3, 4)}, relay.transpose, np.transpose),
    Case("concatenate", {"x": fx(2, 3), "y": fx(2, 5)}, lambda x, y: relay.concatenate([x, y], axis=1),
         lambda x, y: np.concatenate([x, y], axis=1)),
    Case("split-sections", {"x": fx(2, 6, 3)}, lambda x: relay.split(x, 3, axis=1).astuple(),
         lambda x: tuple(np.split(x, 3, axis=1))),
    Case("split-indices", {"x": fx(2, 3, 7)}, lambda x: relay.split(x, [1, 3], axis=-1).astuple(),
         lambda x: tuple(np.split(x, [1, 3], axis=-1))),
    Case("squeeze", {"x": fx(2, 1, 3, 1)}, lambda x: relay.squeeze(x, axis=[1]), lambda x: x.squeeze(1)),
    Case("squeeze-all", {"x": fx(2, 1, 3, 1)}, relay.squeeze, np.squeeze),
    Case("squeeze-no-axes", {"x": fx(2, 1, 3)}, lambda x: relay.squeeze(x, axis=[]), lambda x: x),
    Case("expand_dims", {"x": fx(2, 3)}, lambda x: relay.expand_dims(x, axis=-1, num_newaxis=2),
         lambda x: x[:, :, None, None]),
    Case("strided_slice", {"x": fx(4, 5, 6)}, lambda x: relay.strided_slice(x, [0, 1], [3, 5], [1, 2]),
         lambda x: x[0:3, 1:5:2]),
    Case("strided_slice-negative", {"x": fx(4, 5, 6)},
         lambda x: relay.strided_slice(x, begin=[-1, 4], end=[-100, 0], strides=[-1, -2], axes=[2, 1]),
         lambda x: x[:, 4:0:-2, -1:-100:-1]),
    Case("strided_slice-size", {"x": fx(4, 5, 6)},
         lambda x: relay.strided_slice(x, begin=[1, 2], end=[2, -1], slice_mode="size"), lambda x: x[1:3, 2:]),
    Case("take-clip", {"x": fx(3, 4)},
         lambda x: relay.take(x, relay.const(np.array([0, 5, -1, 2], "int64")), axis=1),
         lambda x: np.take(x, [0, 5, -1, 2], axis=1, mode="clip")),
    Case("take-wrap", {"x": fx(5, 4), "i": ix(2, 3, dtype="int64")}, lambda x, i: relay.take(x, i, axis=0, mode="wrap"),
         lambda x, i: np.take(x, i, axis=0, mode="wrap")),
    Case("take-flat", {"x": fx(3, 4)}, lambda x: relay.take(x, relay.const(np.array([[1, 11]], "int32")), mode="fast"),
         lambda x: np.take(x, [[1, 11]])),
    Case("broadcast_to", {"x": fx(3, 1)}, lambda x: relay.broadcast_to(x, [2, 3, 4]),
         lambda x: np.broadcast_to(x, (2, 3, 4))),
    Case("nn.batch_flatten", {"x": fx(2, 3, 4)}, relay.nn.batch_flatten, lambda x: x.reshape(2, -1)),
    Case("nn.pad", {"x": fx(1, 2, 3, 4)}, lambda x: relay.nn.pad(x, [[0, 0], [1, 0], [2, 1], [0, 3]], 1.5),
         lambda x: np.pad(x, [[0, 0], [1, 0], [2, 1], [0, 3]], constant_values=1.5)),
    Case("nn.pad-edge", {"x": fx(2, 3, 4)}, lambda x: relay.nn.pad(x, [[0, 0], [1, 2], [2, 1]], pad_mode="edge"),
         lambda x: np.pad(x, [[0, 0], [1, 2], [2, 1]], mode="edge")),
    Case("nn.pad-reflect", {"x": fx(2, 3, 4)},
         lambda x: relay.nn.pad(x, [[0, 0], [1, 2], [2, 1]], pad_mode="reflect"),
         lambda x: np.pad(x, [[0, 0], [1, 2], [2, 1]], mode="reflect")),
]

# -- reductions -------------------------------------------------------------------------------------
CASES += [
    Case("sum", {"x": fx(2, 3, 4)}, lambda x: relay.sum(x, axis=[1], keepdims=True),
         lambda x: x.sum(axis=1, keepdims=True)),
    Case("mean", {"x": fx(2, 3, 4)}, relay.mean, lambda x: np.mean(x, dtype="float32")),
    Case("max", {"x": fx(2, 3, 4)}, lambda x: relay.max(x, axis=[0, 2]), lambda x: x.max(axis=(0, 2))),
    Case("min-exclude", {"x": fx(2, 3, 4)}, lambda x: relay.min(x, axis=[1], exclude=True),
         lambda x: x.min(axis=(0, 2))),
    Case("prod", {"x": fx(2, 3, 4)}, lambda x: relay.prod(x, axis=[-1]), lambda x: x.prod(axis=-1)),
    Case("sum-no-axes", {"x": fx(2, 3)}, lambda x: relay.sum(x, axis=[]), lambda x: x),
    Case("argmax", {"x": fx(2, 3, 4)}, lambda x: relay.argmax(x, axis=[1]),
         lambda x: np.argmax(x, axis=1).astype("int32")),
    Case("argmin", {"x": fx(2, 3, 4)}, relay.argmin, lambda x: np.argmin(x).astype("int32")),
    Case("argmax-axes", {"x": fx(2, 3, 4, 5)}, lambda x: relay.argmax(x, axis=[1, 3], keepdims=True),
         lambda x: R.arg_reduce(x, np.argmax, [1, 3], keepdims=True)),
]

# -- neural-network ops ---------------------------------------------------------------------------------
CONV = {"x": fx(1, 4, 9, 9), "w": fx(6, 2, 3, 3)}
CONV_ATTRS = dict(strides=(2, 1), padding=(1, 0, 2, 1), dilation=(1, 2), groups=2)
CASES += [
    Case("nn.conv2d", CONV, lambda x, w: relay.nn.conv2d(x, w, **CONV_ATTRS),
         lambda x, w: R.conv2d(x, w, **CONV_ATTRS)),
    Case("nn.conv2d-nhwc", {"x": fx(1, 7, 7, 3), "w": fx(3, 3, 3, 5)},
         lambda x, w: relay.nn.conv2d(x, w, padding=1, data_layout="NHWC", kernel_layout="HWIO"),
         lambda x, w: R.conv2d(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), padding=(1,) * 4)
         .transpose(0, 2, 3, 1)),
    Case("nn.conv2d_bias_act", {**CONV, "b": fx(6)},
         lambda x, w, b: relay.nn.conv2d_bias_act(x, w, b, activation="relu", **CONV_ATTRS),
         lambda x, w, b: np.maximum(R.conv2d(x, w, **CONV_ATTRS) + b[:, None, None], 0)),
    Case("nn.dense", {"x": fx(3, 5), "w": fx(4, 5)}, relay.nn.dense, lambda x, w: x @ w.T),
    Case("nn.dense-3d", {"x": fx(2, 3, 5), "w": fx(4, 5)}, relay.nn.dense, lambda x, w: x @ w.T),
    Case("nn.dense_bias_act", {"x": fx(2, 3, 5), "w": fx(4, 5), "b": fx(4)},
         lambda x, w, b: relay.nn.dense_bias_act(x, w, b, activation="leaky_relu", alpha=0.1),
         lambda x, w, b: np.where(x @ w.T + b < 0, 0.1, 1.0) * (x @ w.T + b)),
    Case("nn.dense_bias_act-2d", {"x": fx(3, 5), "w": fx(4, 5), "b": fx(4)},
         lambda x, w, b: relay.nn.dense_bias_act(x, w, b, activation="tanh"), lambda x, w, b: np.tanh(x @ w.T + b)),
    Case("nn.matmul", {"a": fx(2, 3, 4), "b": fx(4, 5)}, relay.nn.matmul, np.matmul),
    Case("nn.matmul-transposed", {"a": fx(4, 3), "b": fx(2, 5, 4)},
         lambda a, b: relay.nn.matmul(a, b, transpose_a=True, transpose_b=True),
         lambda a, b: np.matmul(a.T, b.transpose(0, 2, 1))),
    Case("nn.batch_matmul", {"a": fx(2, 3, 4), "b": fx(2, 5, 4)}, relay.nn.batch_matmul,
         lambda a, b: a @ b.transpose(0, 2, 1)),
    Case("nn.fused_matmul", {"a": fx(2, 3, 4), "b": fx(5, 4)},
         lambda a, b: relay.nn.fused_matmul(a, b, transpose_b=True, alpha=0.5), lambda a, b: 0.5 * (a @ b.T)),
    Case("nn.bias_add", {"x": fx(2, 3, 4, 5), "b": fx(3)}, relay.nn.bias_add, lambda x, b: x + b[:, None, None]),
    Case("nn.bias_add-last", {"x": fx(2, 3, 4), "b": fx(4)}, lambda x, b: relay.nn.bias_add(x, b, axis=-1), np.add),
    Case("nn.bias_gelu", {"x": fx(2, 3, 4), "b": fx(4)}, relay.nn.bias_gelu, lambda x, b: R.gelu(x + b)),
    Case("nn.feed_forward", {"x": fx(2, 3, 4), "w1": fx(6, 4), "b1": fx(6), "w2": fx(5, 6), "b2": fx(5)},
         relay.nn.feed_forward, lambda x, w1, b1, w2, b2: R.gelu(x @ w1.T + b1) @ w2.T + b2),
    Case("nn.batch_norm", {"x": fx(2, 3, 4, 4), "g": fx(3), "b": fx(3), "m": fx(3), "v": fx(3, kind="positive")},
         lambda x, g, b, m, v: relay.nn.batch_norm(x, g, b, m, v, epsilon=1e-3).astuple(),
         lambda x, g, b, m, v: R.batch_norm(x, g, b, m, v, epsilon=1e-3)),
    Case("nn.batch_norm-last-axis", {"x": fx(2, 4, 3), "g": fx(3), "b": fx(3), "m": fx(3), "v": fx(3, kind="positive")},
         lambda x, g, b, m, v: relay.nn.batch_norm(x, g, b, m, v, axis=-1, center=False)[0],
         lambda x, g, b, m, v: R.batch_norm(x, g, b, m, v, axis=2, center=False)[0]),
    Case("nn.layer_norm", {"x": fx(2, 3, 8), "g": fx(8), "b": fx(8)}, relay.nn.layer_norm, R.layer_norm),
    Case("nn.layer_norm-middle-axis", {"x": fx(2, 3, 8), "g": fx(3), "b": fx(3)},
         lambda x, g, b: relay.nn.layer_norm(x, g, b, axis=1), lambda x, g, b: R.layer_norm(x, g, b, axis=1)),
    Case("nn.rms_norm", {"x": fx(2, 3, 8), "g": fx(8)}, relay.nn.rms_norm,
         lambda x, g: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * g),
    Case("nn.rms_norm-middle-axis", {"x": fx(2, 3, 8), "g": fx(3)}, lambda x, g: relay.nn.rms_norm(x, g, axis=1),
         lambda x, g: x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-5) * g[:, None]),
    Case("nn.skip_layer_norm", {"x": fx(2, 3, 8), "s": fx(2, 3, 8), "g": fx(8), "b": fx(8)},
         relay.nn.skip_layer_norm, lambda x, s, g, b: R.layer_norm(x + s, g, b)),
    *(Case(name, {"x": fx(2, 3)}, getattr(relay, name), getattr(np, name)) for name in ("isnan", "isinf", "isfinite")),
    Case("nn.attention", {"q": fx(2, 3, 5, 4), "k": fx(2, 3, 6, 4), "v": fx(2, 3, 6, 2)},
         lambda q, k, v: relay.nn.attention(q, k, v, scale=0.5),
         lambda q, k, v: R.softmax(q @ k.swapaxes(-1, -2) * np.float32(0.5), -1) @ v),
    Case("nn.masked_attention", {"q": fx(2, 3, 5, 4), "k": fx(2, 3, 6, 4), "v": fx(2, 3, 6, 2), "m": fx(2, 1, 1, 6)},
         relay.nn.masked_attention, lambda q, k, v, m: R.softmax(q @ k.swapaxes(-1, -2) + m, -1) @ v),
    Case("nn.cached_attention", {"q": fx(2, 4, 3, 4), "k": fx(2, 2, 3, 4), "v": fx(2, 2, 3, 2), "pk": fx(2, 2, 5, 4),
                                 "pv": fx(2, 2, 5, 2), "m": fx(2, 1, 3, 8)},
         lambda *args: relay.nn.cached_attention(*args, scale=0.5)),
    Case("nn.rotary_embedding", {"x": fx(2, 3, 5, 8), "c": fx(1, 5, 2), "s": fx(1, 5, 2)}, relay.nn.rotary_embedding,
         lambda x, c, s: np.concatenate([x[..., :4] * np.concatenate([c, c], -1)[:, None] + np.concatenate(
             [-x[..., 2:4], x[..., :2]], -1) * np.concatenate([s, s], -1)[:, None], x[..., 4:]], -1)),
    Case("nn.softmax", {"x": fx(2, 3, 4)}, lambda x: relay.nn.softmax(x, axis=1), lambda x: R.softmax(x, 1)),
    Case("nn.log_softmax", {"x": fx(2, 3, 4)}, relay.nn.log_softmax, lambda x: R.log_softmax(x, -1)),
    Case("nn.max_pool2d", {"x": fx(1, 2, 8, 8)},
         lambda x: relay.nn.max_pool2d(x, pool_size=3, strides=2, padding=1, ceil_mode=True),
         lambda x: R.pool2d(x, "max", (3, 3), (2, 2), (1, 1, 1, 1), ceil_mode=True)),
    Case("nn.max_pool2d-nhwc", {"x": fx(1, 7, 7, 2)},
         lambda x: relay.nn.max_pool2d(x, pool_size=2, strides=2, layout="NHWC"),
         lambda x: R.pool2d(x.transpose(0, 3, 1, 2), "max", (2, 2), (2, 2)).transpose(0, 2, 3, 1)),
    Case("nn.avg_pool2d", {"x": fx(1, 2, 7, 7)},
         lambda x: relay.nn.avg_pool2d(x, pool_size=3, strides=2, padding=(1, 0, 1, 1)),
         lambda x: R.pool2d(x, "avg", (3, 3), (2, 2), (1, 0, 1, 1))),
    Case("nn.avg_pool2d-include-pad", {"x": fx(1, 2, 7, 7)},
         lambda x: relay.nn.avg_pool2d(x, pool_size=3, strides=2, padding=1, count_include_pad=True),
         lambda x: R.pool2d(x, "avg", (3, 3), (2, 2), (1, 1, 1, 1), count_include_pad=True)),
    Case("nn.max_pool1d", {"x": fx(1, 2, 9)},
         lambda x: relay.nn.max_pool1d(x, pool_size=3, strides=2, padding=1, ceil_mode=True),
         lambda x: W.pool_loop(x, "max", (3,), (2,), (1, 1), (1,), True)),
    Case("nn.avg_pool1d", {"x": fx(2, 3, 8)},
         lambda x: relay.nn.avg_pool1d(x, pool_size=3, strides=2, padding=(1, 2), count_include_pad=True),
         lambda x: W.pool_loop(x, "avg", (3,), (2,), (1, 2), (1,), False, True)),
    Case("nn.max_pool3d-ndhwc", {"x": fx(1, 5, 4, 6, 2)},
         lambda x: relay.nn.max_pool3d(x, pool_size=2, strides=2, dilation=(1, 2, 1), layout="NDHWC"),
         lambda x: W.pool_loop(x.transpose(0, 4, 1, 2, 3), "max", (2,) * 3, (2,) * 3, (0,) * 6, (1, 2, 1),
                               False).transpose(0, 2, 3, 4, 1)),
    Case("nn.avg_pool3d", {"x": fx(1, 2, 4, 5, 4)},
         lambda x: relay.nn.avg_pool3d(x, pool_size=(2, 3, 2), padding=(1, 0, 1), ceil_mode=True, strides=2),
         lambda x: W.pool_loop(x, "avg", (2, 3, 2), (2,) * 3, (1, 0, 1) * 2, (1,) * 3, True)),
    Case("nn.conv1d", {"x": fx(2, 4, 9), "w": fx(6, 2, 3)},
         lambda x, w: relay.nn.conv1d(x, w, strides=2, padding=(1, 2), groups=2),
         lambda x, w: W.conv_loop(x, w, (2,), (1, 2), (1,), 2)),
    Case("nn.conv1d-nwc", {"x": fx(1, 8, 3), "w": fx(2, 3, 4)},
         lambda x, w: relay.nn.conv1d(x, w, dilation=2, data_layout="NWC", kernel_layout="WIO"),
         lambda x, w: W.conv_loop(x.transpose(0, 2, 1), w.transpose(2, 1, 0), (1,), (0, 0), (2,), 1
                                  ).transpose(0, 2, 1)),
    Case("nn.conv3d", {"x": fx(1, 2, 4, 5, 4), "w": fx(3, 2, 2, 3, 2)},
         lambda x, w: relay.nn.conv3d(x, w, padding=1, strides=(1, 2, 1)),
         lambda x, w: W.conv_loop(x, w, (1, 2, 1), (1,) * 6, (1,) * 3, 1)),
    Case("nn.conv1d_transpose", {"x": fx(1, 4, 5), "w": fx(4, 3, 3)},
         lambda x, w: relay.nn.conv1d_transpose(x, w, strides=2, padding=1, output_padding=1),
         lambda x, w: W.conv_transpose_loop(x, w, (2,), (1, 1), (1,), 1, (1,))),
    Case("nn.conv2d_transpose", {"x": fx(1, 4, 4, 5), "w": fx(4, 1, 3, 2)},
         lambda x, w: relay.nn.conv2d_transpose(x, w, strides=(2, 1), padding=(1, 0, 0, 1), dilation=(1, 2),
                                                output_padding=(1, 0), groups=2),
         lambda x, w: W.conv_transpose_loop(x, w, (2, 1), (1, 0, 0, 1), (1, 2), 2, (1, 0))),
    Case("nn.conv3d_transpose", {"x": fx(1, 2, 3, 2, 3), "w": fx(2, 2, 2, 2, 2)},
         lambda x, w: relay.nn.conv3d_transpose(x, w, strides=2, padding=(1, 0, 0)),
         lambda x, w: W.conv_transpose_loop(x, w, (2,) * 3, (1, 0, 0) * 2, (1,) * 3, 1, (0,) * 3)),
    Case("image.resize1d", {"x": fx(1, 2, 7)},
         lambda x: relay.image.resize1d(x, size=(10,), method="nearest_neighbor", rounding_method="round_prefer_ceil"),
         lambda x: resize_loop(x, (10,), "nearest_neighbor", "half_pixel", "round_prefer_ceil")),
    Case("image.resize2d", {"x": fx(1, 2, 4, 5)},
         lambda x: relay.image.resize2d(x, size=(2, 8), scales=(0.625, 1.75)),
         lambda x: resize_loop(x, (2, 8), "linear", "half_pixel", scales=[0.625, 1.75])),
    Case("image.resize2d-nhwc", {"x": fx(1, 4, 5, 3)},
         lambda x: relay.image.resize2d(x, size=(7, 3), layout="NHWC", method="nearest_neighbor",
                                        coordinate_transformation_mode="asymmetric", rounding_method="floor"),
         lambda x: resize_loop(x.transpose(0, 3, 1, 2), (7, 3), "nearest_neighbor", "asymmetric", "floor"
                               ).transpose(0, 2, 3, 1)),
    Case("image.resize2d-crop", {"x": fx(1, 2, 4, 5)},
         lambda x: relay.image.resize2d(x, size=(3, 4), roi=(0.25, -0.125, 1.0, 1.25), extrapolation_value=-2.0,
                                        coordinate_transformation_mode="tf_crop_and_resize"),
         lambda x: resize_loop(x, (3, 4), "linear", "tf_crop_and_resize", roi=[0.25, -0.125, 1.0, 1.25],
                               extrapolation=-2.0)),
    Case("image.resize2d-cubic", {"x": fx(1, 2, 4, 5)},
         lambda x: relay.image.resize2d(x, size=(7, 3), method="cubic", cubic_alpha=-0.75, cubic_exclude=1),
         lambda x: resize_loop(x, (7, 3), "cubic", "half_pixel", exclude=True)),
    Case("image.resize3d", {"x": fx(1, 2, 3, 4, 3)},
         lambda x: relay.image.resize3d(x, size=(5, 2, 4), coordinate_transformation_mode="align_corners"),
         lambda x: resize_loop(x, (5, 2, 4), "linear", "align_corners")),
    Case("nn.global_avg_pool2d", {"x": fx(2, 3, 4, 5)}, relay.nn.global_avg_pool2d,
         lambda x: x.mean(axis=(2, 3), keepdims=True)),
    Case("nn.global_max_pool2d", {"x": fx(2, 3, 4, 5)}, relay.nn.global_max_pool2d,
         lambda x: x.max(axis=(2, 3), keepdims=True)),
    Case("nn.lrn", {"x": fx(1, 6, 3, 3)}, lambda x: relay.nn.lrn(x, size=3, alpha=0.1, beta=0.75, bias=1.0),
         lambda x: R.lrn(x, 3, bias=1.0, alpha=0.1)),
    Case("nn.lrn-last-axis", {"x": fx(1, 3, 3, 6)}, lambda x: relay.nn.lrn(x, size=5, axis=3, alpha=0.1),
         lambda x: R.lrn(x, 5, axis=3, alpha=0.1)),
]

# -- ONNX conformance ops: activations, indexing, scans (the interpreter's reference kernels are the check) ----
_SCATTER_AT = np.array([[0, 2, 2], [1, 0, 0]], "int64")  # the index tuple first, [M=2, Y=3]; (2, 0) twice
CASES += [
    *(Case(f"{name}{suffix}", {"x": (shape, dtype, "normal")}, getattr(relay.nn, name.split(".")[1]))
      for name in ("nn.elu", "nn.selu", "nn.celu")
      for suffix, shape, dtype in (("", (2, 3, 4), "float32"), ("-float64", (2, 5), "float64"))),
    Case("nn.celu-alpha", {"x": fx(2, 5)}, lambda x: relay.nn.celu(x * relay.const(3.0), alpha=2.0)),
    Case("nn.shrink", {"x": fx(2, 3, 4)}, lambda x: relay.nn.shrink(x, lambd=0.4, bias=0.1)),
    Case("nn.shrink-int", {"x": ix(3, 4)}, lambda x: relay.nn.shrink(x, lambd=2.0, bias=1.0)),
    Case("nn.prelu", {"x": fx(2, 3, 2, 2), "a": fx(3)}, relay.nn.prelu),
    Case("nn.prelu-last-axis", {"x": fx(2, 3, 4), "a": fx(4)}, lambda x, a: relay.nn.prelu(x, a, axis=-1)),
    Case("nn.instance_norm", {"x": fx(2, 3, 4, 5), "g": fx(3), "b": fx(3)}, relay.nn.instance_norm),
    Case("nn.instance_norm-channels-last", {"x": fx(2, 4, 5, 3), "g": fx(3), "b": fx(3)},
         lambda x, g, b: relay.nn.instance_norm(x, g, b, axis=-1, epsilon=1e-3, center=False)),
    Case("nn.instance_norm-float64", {"x": ((2, 3, 4), "float64", "normal"), "g": ((3,), "float64", "normal"),
                                      "b": ((3,), "float64", "normal")}, relay.nn.instance_norm),
    Case("nn.prelu-constant-slope", {"x": fx(2, 3, 4)},
         lambda x: relay.nn.prelu(x, relay.const(np.array([0.1, -0.5, 2.0], "float32")))),
    Case("floor_mod", {"x": fx(2, 3, 4), "y": fx(4)}, relay.floor_mod, np.mod),
    Case("floor_mod-int", {"x": ix(2, 5, dtype="int64"), "y": ix(5, dtype="int64")}, relay.floor_mod, np.mod),
    Case("gather", {"x": fx(4, 5), "i": ((3, 5), "int64", "index")}, relay.gather),
    Case("gather-axis1-int32", {"x": fx(3, 4), "i": ((2, 6), "int32", "index")}, lambda x, i: relay.gather(x, i, 1)),
    Case("gather_nd", {"x": fx(3, 4, 2)},
         lambda x: relay.gather_nd(x, relay.const(np.array([[0, 2, -1], [3, 0, 1]], "int64"))),
         lambda x: x[[0, 2, 2], [3, 0, 1]]),
    Case("gather_nd-batch", {"x": fx(2, 4, 3)},
         lambda x: relay.gather_nd(x, relay.const(np.array([[[1], [3]], [[2], [0]]], "int32")), batch_dims=1),
         lambda x: np.array([[x[0, 1, 2]], [x[1, 3, 0]]])),
    Case("scatter_nd", {"x": fx(3, 4, 2), "u": fx(3, 2)},
         lambda x, u: relay.scatter_nd(x, relay.const(np.array([[0, 1, 2], [3, 0, 1]], "int64")), u)),
    Case("scatter_nd-add", {"x": fx(3, 4, 2), "u": fx(3, 2)},
         lambda x, u: relay.scatter_nd(x, relay.const(_SCATTER_AT), u, mode="add")),
    Case("one_hot", {"i": ((2, 3), "int64", "index")},
         lambda i: relay.one_hot(i, relay.const(5.0), relay.const(-1.0), depth=4)),
    Case("one_hot-axis0-int32", {"i": ((3,), "int32", "index")},
         lambda i: relay.one_hot(i, relay.const(np.int64(1)), relay.const(np.int64(0)), 3, 0, "int64")),
    Case("one_hot-float64-middle-axis", {"i": ((2, 3), "int64", "index")},
         lambda i: relay.one_hot(i, relay.const(2.0, "float64"), relay.const(0.5, "float64"), 3, 1, "float64")),
    Case("cumsum", {"x": fx(2, 3, 4)}, lambda x: relay.cumsum(x, axis=1, exclusive=True)),
    Case("cumsum-flat-int", {"x": ix(2, 3)}, relay.cumsum),
    Case("reverse", {"x": fx(2, 3, 4)}, lambda x: relay.reverse(x, axis=-2), lambda x: x[:, ::-1]),
    Case("topk", {"x": fx(2, 5, 3)}, lambda x: relay.topk(x, 3, axis=1).astuple()),
    Case("topk-ascending-ties", {"x": ix(3, 6, dtype="int64")},
         lambda x: relay.topk(x, 4, is_ascend=True, dtype="int64").astuple()),
    Case("topk-all-values", {"x": fx(4, 3)}, lambda x: relay.topk(x, 0, axis=0, ret_type="values")),
    Case("tile", {"x": fx(2, 3)}, lambda x: relay.tile(x, (2, 1, 3)), lambda x: np.tile(x, (2, 1, 3))),
    Case("tile-short-reps", {"x": ix(2, 1, 3)}, lambda x: relay.tile(x, (2,)), lambda x: np.tile(x, 2)),
    Case("trilu", {"x": fx(2, 4, 5)}, lambda x: relay.trilu(x, k=1), lambda x: np.triu(x, 1)),
    Case("trilu-lower", {"x": ix(5, 3)}, lambda x: relay.trilu(x, k=-1, upper=False), lambda x: np.tril(x, -1)),
    Case("arange", {"x": ix(3, dtype="int64")},  # summed, as its length is known only at run time
         lambda x: relay.sum(relay.arange(*(relay.const(np.int64(v)) for v in (2, 11, 3)), dtype="int64")) + x,
         lambda x: 2 + 5 + 8 + x),
    Case("shape_of", {"x": fx(2, 3, 4)}, lambda x: relay.shape_of(x), lambda x: np.array(x.shape)),
    Case("argwhere", {"x": fx(3, 4)},  # summed, as its count is known only at run time
         lambda x: relay.sum(relay.argwhere(relay.greater(x, relay.const(np.float32(0)))), axis=0),
         lambda x: np.argwhere(x > 0).sum(axis=0)),
    # the dyn.* results have run-time dimensions: adding zeros of the expected shape makes the type static
    Case("dyn.reshape", {"x": fx(2, 3, 4)},
         lambda x: relay.dyn.reshape(x, relay.const(np.array([0, -1]))) + relay.const(np.zeros((2, 12), "float32")),
         lambda x: x.reshape(2, 12)),
    Case("dyn.expand", {"x": fx(3, 1)},
         lambda x: relay.dyn.expand(x, relay.const(np.array([2, 1, 4]))) + relay.const(np.zeros((2, 3, 4), "float32")),
         lambda x: np.broadcast_to(x, (2, 3, 4))),
    Case("dyn.strided_slice", {"x": fx(4, 7)},
         lambda x: relay.dyn.strided_slice(x, *(relay.const(np.array(v)) for v in ([-1, 1], [-9, 100], [-1, 2])),
                                           axes=[0, 1]) + relay.const(np.zeros((4, 3), "float32")),
         lambda x: x[::-1, 1::2]),
    Case("layout_transform", {"x": fx(2, 8, 3, 5)}, lambda x: relay.layout_transform(x, "NCHW", "NCHW4c"),
         lambda x: x.reshape(2, 2, 4, 3, 5).transpose(0, 1, 3, 4, 2)),
    Case("layout_transform-blocked-to-nhwc", {"x": fx(1, 2, 3, 5, 4)},
         lambda x: relay.layout_transform(x, "NCHW4c", "NHWC"), lambda x: x.transpose(0, 2, 3, 1, 4).reshape(1, 3, 5, 8)),
    Case("nn.contrib_conv2d_NCHWc", {"x": fx(1, 2, 6, 6, 4), "w": fx(3, 2, 3, 3, 4, 4)},
         lambda x, w: relay.nn.contrib_conv2d_NCHWc(x, w, padding=1, strides=2, data_layout="NCHW4c",
                                                    kernel_layout="OIHW4i4o", out_layout="NCHW4c")),
    Case("nn.contrib_conv2d_NCHWc_bias_act", {"x": fx(1, 3, 6, 6), "w": fx(2, 3, 3, 3, 4), "b": fx(8)},
         lambda x, w, b: relay.nn.contrib_conv2d_NCHWc_bias_act(x, w, b, data_layout="NCHW", kernel_layout="OIHW4o",
                                                                out_layout="NCHW4c", activation="sigmoid")),
    Case("nn.contrib_conv2d_NCHWc_bias_sum_act", {"x": fx(1, 2, 5, 5, 4), "w": fx(2, 1, 3, 3, 1, 4), "b": fx(8),
                                                  "s": fx(1, 2, 5, 5, 4)},
         lambda x, w, b, s: relay.nn.contrib_conv2d_NCHWc_bias_sum_act(
             x, w, b, s, padding=1, groups=8, data_layout="NCHW4c", kernel_layout="OIHW1i4o", out_layout="NCHW4c",
             activation="relu")),
]
