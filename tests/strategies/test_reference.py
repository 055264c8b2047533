"""Every reference kernel against an independent formula (Python math, loops) on small random inputs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import ir
from ir import relay
from strategies.errors import KernelError
from strategies.kernels.reference import ops_with_reference, run_reference

from .naive import conv2d_nchw, lrn_loop, pool2d_nchw, reduce_loop

RNG = np.random.default_rng(0)


def rand(*shape, dtype="float32", low=-2.0, high=2.0):
    return RNG.uniform(low, high, size=shape).astype(dtype)


def attrs_of(op_name: str, n_inputs: int, **attrs) -> ir.Attrs:
    """The canonical attributes a call would get (defaults filled, values normalized)."""
    dummies = [relay.var(f"a{i}", shape=(1,)) for i in range(n_inputs)]
    if ir.get_op(op_name).tuple_input:
        dummies = [relay.Tuple(dummies)]
    return ir.get_op(op_name)(*dummies, **attrs).attrs


def run(op_name: str, *inputs, **attrs):
    n = 1 if ir.get_op(op_name).tuple_input else len(inputs)
    return run_reference(op_name, attrs_of(op_name, n, **attrs), list(inputs))


def elementwise(fn):
    return lambda *arrays: np.vectorize(fn, otypes=[np.float64])(*arrays)


# -- element-wise: op, math formula per element, input domain ----------------------------------
UNARY = [
    ("negative", lambda v: -v, None), ("abs", abs, None), ("copy", lambda v: v, None),
    ("sign", lambda v: (v > 0) - (v < 0), None), ("nn.relu", lambda v: max(v, 0.0), None),
    ("sigmoid", lambda v: 1 / (1 + math.exp(-v)), None), ("tanh", math.tanh, None), ("erf", math.erf, None),
    ("exp", math.exp, None), ("log", math.log, (0.1, 3.0)), ("sqrt", math.sqrt, (0.1, 3.0)),
    ("rsqrt", lambda v: 1 / math.sqrt(v), (0.1, 3.0)), ("floor", math.floor, None), ("ceil", math.ceil, None),
    ("round", round, None),  # Python's round is half to even too
    ("sin", math.sin, (-10.0, 10.0)), ("cos", math.cos, (-10.0, 10.0)),
]


@pytest.mark.parametrize("name, formula, domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, formula, domain):
    low, high = domain or (-2.0, 2.0)
    x = rand(3, 4, low=low, high=high)
    if name == "round":
        x[0, :2] = [0.5, 2.5]  # ties
    out = run(name, x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, elementwise(formula)(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, attrs, formula", [
    ("nn.leaky_relu", {"alpha": 0.2}, lambda v: v if v > 0 else 0.2 * v),
    ("nn.gelu", {}, lambda v: v * 0.5 * (1 + math.erf(v / math.sqrt(2)))),
    ("nn.gelu", {"approximate": "tanh"},
     lambda v: 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))),
    ("clip", {"a_min": -0.5, "a_max": 1.0}, lambda v: min(max(v, -0.5), 1.0)),
])
def test_unary_with_attrs(name, attrs, formula):
    x = rand(2, 5)
    out = run(name, x, **attrs)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, elementwise(formula)(x), rtol=1e-5, atol=1e-6)


def test_cast_and_logical_not():
    x = rand(4) * 3
    np.testing.assert_array_equal(run("cast", x, dtype="int32"), [int(v) for v in x])
    b = np.array([True, False])
    np.testing.assert_array_equal(run("logical_not", b), [False, True])


BINARY = [
    ("add", lambda a, b: a + b), ("subtract", lambda a, b: a - b), ("multiply", lambda a, b: a * b),
    ("divide", lambda a, b: a / b), ("power", lambda a, b: abs(a) ** b), ("maximum", max), ("minimum", min),
    ("floor_divide", lambda a, b: math.floor(a / b)), ("mod", math.fmod),
]


@pytest.mark.parametrize("name, formula", BINARY, ids=[b[0] for b in BINARY])
def test_binary_broadcasts(name, formula):
    a, b = rand(3, 1, 4), rand(2, 1, low=0.5, high=2.0)
    if name == "power":
        a = np.abs(a)
    out = run(name, a, b)
    assert out.shape == (3, 2, 4) and out.dtype == np.float32
    np.testing.assert_allclose(out, elementwise(formula)(a, b), rtol=1e-5, atol=1e-6)


def test_integer_division_truncates_and_mod_follows_the_dividend():
    a, b = np.array([7, -7, 7, -7], "int32"), np.array([2, 2, -2, -2], "int32")
    np.testing.assert_array_equal(run("divide", a, b), [3, -3, -3, 3])
    np.testing.assert_array_equal(run("mod", a, b), [1, -1, 1, -1])
    np.testing.assert_array_equal(run("floor_divide", a, b), [3, -4, -4, 3])


@pytest.mark.parametrize("name, formula", [
    ("less", lambda a, b: a < b), ("greater", lambda a, b: a > b), ("less_equal", lambda a, b: a <= b),
    ("greater_equal", lambda a, b: a >= b), ("equal", lambda a, b: a == b), ("not_equal", lambda a, b: a != b),
])
def test_comparisons(name, formula):
    a, b = np.array([[1, 2, 3]], "float32"), np.array([[2], [2]], "float32")
    out = run(name, a, b)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, [[formula(x, y) for x in a[0]] for y in b[:, 0]])


def test_logical_and_or_where():
    p, q = np.array([True, True, False, False]), np.array([True, False, True, False])
    np.testing.assert_array_equal(run("logical_and", p, q), [True, False, False, False])
    np.testing.assert_array_equal(run("logical_or", p, q), [True, True, True, False])
    x, y = rand(4), rand(4)
    np.testing.assert_array_equal(run("where", p, x, y), [x[i] if p[i] else y[i] for i in range(4)])


# -- reductions ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "argmax", "argmin"])
@pytest.mark.parametrize("axis, keepdims, exclude, axes", [
    (None, False, False, (0, 1, 2)), ((1,), False, False, (1,)), ((-1, 0), True, False, (0, 2)),
    ((1,), True, True, (0, 2)), ((), False, False, ()),
])
def test_reductions(name, axis, keepdims, exclude, axes):
    x = rand(2, 3, 4, low=0.5, high=1.5)
    out = run(name, x, axis=axis, keepdims=keepdims, exclude=exclude)
    assert out.dtype == (np.int32 if name.startswith("arg") else np.float32)
    np.testing.assert_allclose(out, reduce_loop(x, axes, name, keepdims), rtol=1e-5)


# -- layout and indexing ------------------------------------------------------------------------
def test_reshape_codes():
    x = rand(2, 3, 4)
    assert run("reshape", x, newshape=(0, -1)).shape == (2, 12)
    assert run("reshape", x, newshape=(-1, 4, 1)).shape == (6, 4, 1)
    np.testing.assert_array_equal(run("reshape", x, newshape=(4, 0, 2)).ravel(), x.ravel())


def test_transpose_concatenate_split_squeeze_expand():
    x = rand(2, 3, 4)
    out = run("transpose", x, axes=(2, 0, 1))
    assert all(out[k, i, j] == x[i, j, k] for i in range(2) for j in range(3) for k in range(4))
    assert run("transpose", x).shape == (4, 3, 2)
    y = rand(2, 1, 4)
    cat = run("concatenate", (x, y), axis=1)
    np.testing.assert_array_equal(cat[:, :3], x)
    np.testing.assert_array_equal(cat[:, 3:], y)
    parts = run("split", x, indices_or_sections=(1, 3), axis=2)
    assert [p.shape[2] for p in parts] == [1, 2, 1]
    np.testing.assert_array_equal(parts[1], x[:, :, 1:3])
    assert [p.shape[0] for p in run("split", rand(6, 2), indices_or_sections=3)] == [2, 2, 2]
    assert run("squeeze", y).shape == (2, 4)
    assert run("squeeze", rand(1, 2, 1), axis=(2,)).shape == (1, 2)
    assert run("expand_dims", x, axis=-1, num_newaxis=2).shape == (2, 3, 4, 1, 1)
    assert run("expand_dims", x, axis=1).shape == (2, 1, 3, 4)


@pytest.mark.parametrize("attrs, picks", [
    ({"begin": (1,), "end": (3,)}, lambda x: [[x[i, j] for j in range(5)] for i in (1, 2)]),
    ({"begin": (0, 4), "end": (4, 0), "strides": (2, -2)}, lambda x: [[x[i, j] for j in (4, 2)] for i in (0, 2)]),
    ({"begin": (-2,), "end": (2,), "axes": (1,), "slice_mode": "size"},
     lambda x: [[x[i, j] for j in (3, 4)] for i in range(4)]),
    ({"begin": (1,), "end": (-1,), "axes": (1,), "slice_mode": "size"},
     lambda x: [[x[i, j] for j in range(1, 5)] for i in range(4)]),
    ({"begin": (0,), "end": (2 ** 31 - 1,), "strides": (3,)}, lambda x: [list(x[0]), list(x[3])]),
])
def test_strided_slice(attrs, picks):
    x = rand(4, 5)
    np.testing.assert_array_equal(run("strided_slice", x, **attrs), picks(x))


@pytest.mark.parametrize("mode, indices, expected_rows", [
    ("clip", [0, 5, -1], [0, 2, 0]), ("wrap", [0, 5, -1], [0, 2, 2]), ("fast", [0, 2, -1], [0, 2, 2]),
])
def test_take_modes(mode, indices, expected_rows):
    x = rand(3, 2)
    out = run("take", x, np.array(indices, "int64"), axis=0, mode=mode)
    np.testing.assert_array_equal(out, [x[r] for r in expected_rows])
    flat = run("take", x, np.array([[5, 0]], "int32"), mode=mode if mode != "fast" else "clip")
    np.testing.assert_array_equal(flat, [[x.ravel()[5], x.ravel()[0]]])


def test_take_fast_mode_rejects_out_of_range():
    with pytest.raises(KernelError, match="out of range"):
        run("take", rand(3), np.array([3], "int32"), axis=0, mode="fast")


def test_broadcast_to_and_batch_flatten_and_pad():
    x = rand(3, 1)
    out = run("broadcast_to", x, shape=(2, 3, 4))
    assert all(out[a, b, c] == x[b, 0] for a in range(2) for b in range(3) for c in range(4))
    assert run("nn.batch_flatten", rand(2, 3, 4)).shape == (2, 12)
    y = rand(2, 3)
    padded = run("nn.pad", y, pad_width=((1, 0), (0, 2)), pad_value=7.0)
    assert padded.shape == (3, 5) and padded[0, 0] == 7 and padded[1, 4] == 7
    np.testing.assert_array_equal(padded[1:, :3], y)
    np.testing.assert_array_equal(run("nn.pad", y, pad_width=((0, 0), (1, 1)), pad_mode="edge")[:, 0], y[:, 0])
    np.testing.assert_array_equal(run("nn.pad", y, pad_width=((0, 0), (1, 1)), pad_mode="reflect")[:, 0], y[:, 1])


# -- neural-network ops -------------------------------------------------------------------------
CONV_CASES = [
    dict(strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1),
    dict(strides=(2, 1), padding=(1, 0, 2, 1), dilation=(1, 1), groups=1),
    dict(strides=(1, 2), padding=(1, 1, 1, 1), dilation=(2, 1), groups=2),
    dict(strides=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=4),  # depthwise
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv2d(case, layout):
    x, w = rand(2, 4, 6, 7), rand(4, 4 // case["groups"], 3, 2)
    expected = conv2d_nchw(x, w, **case)
    data = x if layout == "NCHW" else x.transpose(0, 2, 3, 1)
    weight = w if layout == "NCHW" else w.transpose(2, 3, 1, 0)
    out = run("nn.conv2d", data, weight, data_layout=layout, kernel_layout="OIHW" if layout == "NCHW" else "HWIO",
              **case)
    out = out if layout == "NCHW" else out.transpose(0, 3, 1, 2)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("activation, act", [
    ("none", lambda v: v), ("relu", lambda v: np.maximum(v, 0)), ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
    ("tanh", np.tanh), ("leaky_relu", lambda v: np.where(v > 0, v, 0.3 * v)),
])
def test_conv2d_bias_act(activation, act):
    x, w, b = rand(1, 2, 5, 5), rand(3, 2, 3, 3), rand(3)
    expected = act(conv2d_nchw(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1) + b.reshape(1, 3, 1, 1))
    out = run("nn.conv2d_bias_act", x, w, b, padding=1, activation=activation, alpha=0.3)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_dense_matmul_batch_matmul():
    # sums of 5 float32 products, against a loop that adds them in another order: an absolute term for
    # the rounding of a sum that cancels to near 0
    close = dict(rtol=1e-5, atol=1e-6)
    x, w, b = rand(2, 3, 5), rand(4, 5), rand(4)
    loop = np.array([[[sum(x[i, j, k] * w[u, k] for k in range(5)) for u in range(4)] for j in range(3)]
                     for i in range(2)])
    np.testing.assert_allclose(run("nn.dense", x, w), loop, **close)
    np.testing.assert_allclose(run("nn.dense_bias_act", x, w, b, activation="relu"), np.maximum(loop + b, 0), **close)
    a, c = rand(2, 3, 5), rand(2, 4, 5)
    bmm = [[[sum(a[n, i, k] * c[n, j, k] for k in range(5)) for j in range(4)] for i in range(3)] for n in range(2)]
    np.testing.assert_allclose(run("nn.batch_matmul", a, c), bmm, **close)  # transpose_b by default
    np.testing.assert_allclose(run("nn.batch_matmul", a, c.transpose(0, 2, 1), transpose_b=False), bmm, **close)
    np.testing.assert_allclose(run("nn.matmul", a.transpose(0, 2, 1), c[0], transpose_a=True, transpose_b=True),
                               bmm[:1] + [[[sum(a[1, i, k] * c[0, j, k] for k in range(5)) for j in range(4)]
                                            for i in range(3)]], **close)
    np.testing.assert_allclose(run("nn.fused_matmul", a, c, transpose_b=True, alpha=0.5), np.array(bmm) * 0.5,
                               **close)


def test_bias_add_axis():
    x, b = rand(2, 3, 4), rand(3)
    out = run("nn.bias_add", x, b)
    assert all(out[i, j, k] == x[i, j, k] + b[j] for i in range(2) for j in range(3) for k in range(4))
    np.testing.assert_allclose(run("nn.bias_add", x, rand(4), axis=-1).shape, (2, 3, 4))


@pytest.mark.parametrize("center, scale", [(True, True), (False, True), (True, False)])
def test_batch_norm(center, scale):
    x, gamma, beta, mean, var = rand(2, 3, 4), rand(3), rand(3), rand(3), rand(3, low=0.5, high=2)
    out, m, v = run("nn.batch_norm", x, gamma, beta, mean, var, epsilon=1e-3, center=center, scale=scale)
    for c in range(3):
        normalized = (x[:, c] - mean[c]) / math.sqrt(var[c] + 1e-3)
        expected = normalized * (gamma[c] if scale else 1) + (beta[c] if center else 0)
        np.testing.assert_allclose(out[:, c], expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(m, mean)
    np.testing.assert_array_equal(v, var)


def _layer_norm_rows(x, gamma, beta, eps):
    rows = x.reshape(-1, x.shape[-1]).astype(np.float64)
    out = [(r - r.mean()) / math.sqrt(((r - r.mean()) ** 2).mean() + eps) * gamma + beta for r in rows]
    return np.array(out).reshape(x.shape)


def test_layer_norm_and_skip_layer_norm():
    x, skip, gamma, beta = rand(2, 3, 6), rand(2, 3, 6), rand(6), rand(6)
    np.testing.assert_allclose(run("nn.layer_norm", x, gamma, beta), _layer_norm_rows(x, gamma, beta, 1e-5),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(run("nn.skip_layer_norm", x, skip, gamma, beta, epsilon=1e-3),
                               _layer_norm_rows(x + skip, gamma, beta, 1e-3), rtol=1e-4, atol=1e-5)
    moved = run("nn.layer_norm", x.transpose(0, 2, 1), gamma, beta, axis=1)
    np.testing.assert_allclose(moved.transpose(0, 2, 1), _layer_norm_rows(x, gamma, beta, 1e-5), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(axis):
    x = rand(3, 4) * 10
    e = np.exp(np.moveaxis(x.astype(np.float64), axis, -1))
    expected = np.moveaxis(e / e.sum(-1, keepdims=True), -1, axis)
    np.testing.assert_allclose(run("nn.softmax", x, axis=axis), expected, rtol=1e-5)
    np.testing.assert_allclose(run("nn.log_softmax", x, axis=axis), np.log(expected), rtol=1e-4, atol=1e-5)


POOL_CASES = [
    dict(pool_size=(2, 2), strides=(2, 2), padding=(0, 0, 0, 0), dilation=(1, 1), ceil_mode=False),
    dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1), dilation=(1, 1), ceil_mode=False),
    dict(pool_size=(3, 2), strides=(2, 2), padding=(0, 1, 1, 0), dilation=(1, 1), ceil_mode=True),
    dict(pool_size=(2, 2), strides=(1, 2), padding=(1, 0, 0, 0), dilation=(2, 1), ceil_mode=True),
]


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("name, include_pad", [("nn.max_pool2d", False), ("nn.avg_pool2d", False),
                                               ("nn.avg_pool2d", True)])
def test_pool2d(case, name, include_pad):
    x = rand(1, 2, 7, 6)
    kind = "max" if name == "nn.max_pool2d" else "avg"
    extra = {"count_include_pad": include_pad} if kind == "avg" else {}
    out = run(name, x, **case, **extra)
    expected = pool2d_nchw(x, kind, case["pool_size"], case["strides"], case["padding"], case["dilation"],
                           case["ceil_mode"], include_pad)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    nhwc = run(name, x.transpose(0, 2, 3, 1), layout="NHWC", **case, **extra)
    np.testing.assert_allclose(nhwc.transpose(0, 3, 1, 2), expected, rtol=1e-5, atol=1e-6)


def test_global_pools():
    x = rand(2, 3, 4, 5)
    np.testing.assert_allclose(run("nn.global_avg_pool2d", x)[:, :, 0, 0], x.mean(axis=(2, 3)), rtol=1e-5)
    np.testing.assert_allclose(run("nn.global_max_pool2d", x.transpose(0, 2, 3, 1), layout="NHWC")[:, 0, 0, :],
                               x.max(axis=(2, 3)))


@pytest.mark.parametrize("size", [3, 4])
def test_lrn(size):
    x = rand(1, 5, 2, 2)
    out = run("nn.lrn", x, size=size, alpha=0.5, beta=0.75, bias=1.5)
    np.testing.assert_allclose(out, lrn_loop(x, size, 1, 1.5, 0.5, 0.75), rtol=1e-5)


def test_bias_gelu():
    x, b = rand(2, 4), rand(4)
    gelu = elementwise(lambda v: v * 0.5 * (1 + math.erf(v / math.sqrt(2))))
    np.testing.assert_allclose(run("nn.bias_gelu", x, b), gelu(x + b), rtol=1e-5, atol=1e-6)


def test_feed_forward():
    x, w1, b1, w2, b2 = rand(2, 3, 4), rand(6, 4), rand(6), rand(5, 6), rand(5)
    gelu = elementwise(lambda v: v * 0.5 * (1 + math.erf(v / math.sqrt(2))))
    hidden = gelu(np.einsum("nsk,hk->nsh", x, w1) + b1)
    np.testing.assert_allclose(run("nn.feed_forward", x, w1, b1, w2, b2), np.einsum("nsh,oh->nso", hidden, w2) + b2,
                               rtol=1e-5, atol=1e-5)


def _sigmoid(v: float) -> float:
    """The logistic function without overflow: exp of a non-positive argument only."""
    return 1 / (1 + math.exp(-v)) if v >= 0 else math.exp(v) / (1 + math.exp(v))


#: zeros of both signs, infinities, NaN, the kinks of the hard activations, tiny and huge magnitudes
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.0, -3.0, 2.5, -2.5, 2.9999999, 1e-300, -1e-300,
                  1e300, -1e300, 1e6, -1e6, -40.0, 0.7])


def _f32(v: float) -> float:
    """A float attribute's value: attributes hold float32 values, as ONNX's do."""
    return float(np.float32(v))


@pytest.mark.parametrize("name, attrs, formula", [
    ("nn.hard_sigmoid", {}, lambda v: min(max(_f32(0.2) * v + 0.5, 0.0), 1.0)),
    ("nn.hard_sigmoid", {"alpha": 0.3, "beta": 0.25}, lambda v: min(max(_f32(0.3) * v + 0.25, 0.0), 1.0)),
    ("nn.hard_swish", {}, lambda v: v * min(max(v / 6 + 0.5, 0.0), 1.0)),
    ("nn.silu", {}, lambda v: v * _sigmoid(v)),
    ("nn.quick_gelu", {}, lambda v: v * _sigmoid(_f32(1.702) * v)),
    ("nn.quick_gelu", {"alpha": 1.0}, lambda v: v * _sigmoid(v)),
], ids=["hard_sigmoid", "hard_sigmoid-attrs", "hard_swish", "silu", "quick_gelu", "quick_gelu-alpha1"])
def test_activations_on_edge_values(name, attrs, formula):
    """float64 against the scalar formula, the sign of zeros and NaN at -inf (0 * -inf) included;
    float32 keeps its dtype and agrees with the float64 result."""
    x = np.concatenate([EDGES, rand(20, dtype="float64", low=-8.0, high=8.0)])
    out = run(name, x, **attrs)
    expected = np.array([formula(float(v)) for v in x])
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=0)
    zeros = expected == 0
    np.testing.assert_array_equal(np.signbit(out[zeros]), np.signbit(expected[zeros]))
    with np.errstate(over="ignore"):
        x32 = x.astype("float32")  # 1e300 becomes inf
    single = run(name, x32, **attrs)
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, [formula(float(v)) for v in x32], rtol=1e-5, atol=1e-7)


def _rms_norm_loop(x: np.ndarray, gamma: np.ndarray, axis: int, epsilon: float) -> np.ndarray:
    out = np.empty_like(x)
    moved, target = np.moveaxis(x, axis, -1), np.moveaxis(out, axis, -1)
    for index in np.ndindex(moved.shape[:-1]):
        row = [float(v) for v in moved[index]]
        rms = math.sqrt(sum(v * v for v in row) / len(row) + epsilon)  # Python floats: v * v may be inf
        target[index] = [v / rms * float(g) for v, g in zip(row, gamma)]
    return out


@pytest.mark.parametrize("shape, axis", [((2, 3, 5), -1), ((2, 3, 5), 1), ((4,), 0)])
@pytest.mark.parametrize("scale", [1.0, 1e150, 1e160])  # the squares of the last overflow: x / inf is 0
def test_rms_norm_against_loops(shape, axis, scale):
    x = rand(*shape, dtype="float64", low=-3.0, high=3.0) * scale
    x.reshape(-1)[0] = 0.0
    gamma = rand(shape[axis], dtype="float64")
    out = run("nn.rms_norm", x, gamma, axis=axis, epsilon=1e-3)
    np.testing.assert_allclose(out, _rms_norm_loop(x, gamma, axis, _f32(1e-3)), rtol=1e-12, atol=0)
    if scale == 1.0:
        single = run("nn.rms_norm", x.astype("float32"), gamma.astype("float32"), axis=axis, epsilon=1e-3)
        assert single.dtype == np.float32
        np.testing.assert_allclose(single, out, rtol=1e-5, atol=1e-6)


def test_every_op_has_a_reference_kernel_and_a_test_here():
    assert ops_with_reference() == ir.list_ops()
    source = "".join(p.read_text() for p in Path(__file__).parent.glob("test_reference*.py"))
    untested = [name for name in ir.list_ops() if f'"{name}"' not in source]
    assert not untested, f"ops without a reference test: {untested}"


def test_float32_stays_float32_and_shape_errors_name_the_op():
    out = run("nn.gelu", rand(3), approximate="tanh")
    assert out.dtype == np.float32
    with pytest.raises(KernelError, match="nn.dense"):
        run("nn.dense", rand(2, 3), rand(4, 5))
