"""Reference kernels of "layout_transform" and the blocked convolutions, against loops and plain convolutions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ir.op.registry import get_op, normalize_attrs
from ir import relay
from strategies.kernels.reference import run_reference

RNG = np.random.default_rng(3)


def run(op_name: str, *inputs: np.ndarray, **attrs) -> np.ndarray:
    args = [relay.var(f"in{i}", shape=x.shape, dtype=x.dtype.name) for i, x in enumerate(inputs)]
    return run_reference(op_name, normalize_attrs(get_op(op_name), args, attrs), inputs)


def _blocked_loop(x: np.ndarray, block: int) -> np.ndarray:
    """NCHW -> NCHW{block}c, element by element: out[n, c // B, h, w, c % B] = x[n, c, h, w]."""
    n, c, h, w = x.shape
    out = np.empty((n, c // block, h, w, block), x.dtype)
    for i, j, k, m in itertools.product(range(n), range(c), range(h), range(w)):
        out[i, j // block, k, m, j % block] = x[i, j, k, m]
    return out


def _weight_loop(w: np.ndarray, block_i: int, block_o: int) -> np.ndarray:
    """OIHW -> OIHW{bi}i{bo}o: out[o // bo, i // bi, kh, kw, i % bi, o % bo] = w[o, i, kh, kw]."""
    o, i, kh, kw = w.shape
    out = np.empty((o // block_o, i // block_i, kh, kw, block_i, block_o), w.dtype)
    for a, b, c, d in itertools.product(range(o), range(i), range(kh), range(kw)):
        out[a // block_o, b // block_i, c, d, b % block_i, a % block_o] = w[a, b, c, d]
    return out


@pytest.mark.parametrize("block", [1, 4, 8])
def test_layout_transform_against_loops(block):
    x = RNG.standard_normal((2, 8, 3, 5)).astype("float32")
    blocked = run("layout_transform", x, src_layout="NCHW", dst_layout=f"NCHW{block}c")
    np.testing.assert_array_equal(blocked, _blocked_loop(x, block))
    np.testing.assert_array_equal(run("layout_transform", blocked, src_layout=f"NCHW{block}c", dst_layout="NCHW"), x)
    nhwc = run("layout_transform", blocked, src_layout=f"NCHW{block}c", dst_layout="NHWC")
    np.testing.assert_array_equal(nhwc, x.transpose(0, 2, 3, 1))


def test_layout_transform_of_weights_and_between_blocks():
    w = RNG.standard_normal((8, 4, 3, 2)).astype("float32")
    blocked = run("layout_transform", w, src_layout="OIHW", dst_layout="OIHW2i4o")
    np.testing.assert_array_equal(blocked, _weight_loop(w, 2, 4))
    x = RNG.standard_normal((1, 8, 2, 2)).astype("float32")
    reblocked = run("layout_transform", _blocked_loop(x, 4), src_layout="NCHW4c", dst_layout="NCHW2c")
    np.testing.assert_array_equal(reblocked, _blocked_loop(x, 2))


def _conv_loop(x: np.ndarray, w: np.ndarray, b: np.ndarray, pad: int, stride: int, groups: int) -> np.ndarray:
    """A grouped NCHW convolution as the sum it defines, in float64."""
    x = np.pad(x.astype("float64"), [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    o, ipg, kh, kw = w.shape
    n, _, hh, ww = x.shape
    oh, ow = (hh - kh) // stride + 1, (ww - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for oc, y, z in itertools.product(range(o), range(oh), range(ow)):
        g = oc // (o // groups)
        window = x[:, g * ipg:(g + 1) * ipg, y * stride:y * stride + kh, z * stride:z * stride + kw]
        out[:, oc, y, z] = (window * w[oc]).sum(axis=(1, 2, 3)) + b[oc]
    return out


@pytest.mark.parametrize("form", ["blocked", "first-layer", "depthwise"])
def test_blocked_convolutions_against_loops(form):
    block = 4
    channels, groups = {"blocked": (8, 1), "first-layer": (3, 1), "depthwise": (8, 8)}[form]
    x = RNG.standard_normal((1, channels, 7, 6)).astype("float32")
    w = RNG.standard_normal((8, channels // groups, 3, 3)).astype("float32")
    b, s = RNG.standard_normal(8).astype("float32"), RNG.standard_normal((1, 8, 4, 3)).astype("float32")
    data_layout = "NCHW" if form == "first-layer" else f"NCHW{block}c"
    kernel_layout = {"blocked": "OIHW4i4o", "first-layer": "OIHW4o", "depthwise": "OIHW1i4o"}[form]
    data = x if form == "first-layer" else _blocked_loop(x, block)
    weight = run("layout_transform", w, src_layout="OIHW", dst_layout=kernel_layout)
    attrs = dict(padding=1, strides=2, groups=groups, data_layout=data_layout, kernel_layout=kernel_layout,
                 out_layout="NCHW4c")
    want = _conv_loop(x, w, b, 1, 2, groups)
    plain = run("nn.contrib_conv2d_NCHWc", data, weight, **attrs)
    np.testing.assert_allclose(plain, _blocked_loop((want - b[None, :, None, None]).astype("float32"), block),
                               rtol=1e-5, atol=1e-5)
    fused = run("nn.contrib_conv2d_NCHWc_bias_act", data, weight, b, activation="relu", **attrs)
    np.testing.assert_allclose(fused, _blocked_loop(np.maximum(want, 0).astype("float32"), block), rtol=1e-5, atol=1e-5)
    summed = run("nn.contrib_conv2d_NCHWc_bias_sum_act", data, weight, b, _blocked_loop(s, block),
                 activation="relu", **attrs)
    np.testing.assert_allclose(summed, _blocked_loop(np.maximum(want + s, 0).astype("float32"), block),
                               rtol=1e-5, atol=1e-5)


def test_blocked_convolution_gives_the_plain_convolutions_bits():
    x = RNG.standard_normal((1, 8, 5, 5)).astype("float32")
    w = RNG.standard_normal((8, 8, 3, 3)).astype("float32")
    plain = run("nn.conv2d", x, w, padding=1)
    blocked = run("nn.contrib_conv2d_NCHWc", _blocked_loop(x, 4), _weight_loop(w, 4, 4), padding=1,
                  data_layout="NCHW4c", kernel_layout="OIHW4i4o", out_layout="NCHW")
    np.testing.assert_array_equal(blocked, plain)


@pytest.mark.parametrize("form", ["blocked", "first-layer", "depthwise"])
@pytest.mark.parametrize("activation", ["relu", "clip", "hard_sigmoid", "hard_swish"])
def test_the_cpu_executor_runs_blocked_convolutions_like_the_reference(form, activation):
    """The cpu target's blocked convolutions (the cpu kernels on the NCHW / OIHW views), weights constant or not."""
    import ir
    import strategies
    block = 4
    channels, groups = {"blocked": (8, 1), "first-layer": (3, 1), "depthwise": (8, 8)}[form]
    kernel_layout = {"blocked": "OIHW4i4o", "first-layer": "OIHW4o", "depthwise": "OIHW1i4o"}[form]
    data_layout = "NCHW" if form == "first-layer" else "NCHW4c"
    x = relay.var("x", shape=(2, channels, 7, 6) if form == "first-layer" else (2, channels // block, 7, 6, block))
    weight = run("layout_transform", RNG.standard_normal((8, channels // groups, 3, 3)).astype("float32"),
                 src_layout="OIHW", dst_layout=kernel_layout)
    w = relay.var("w", shape=weight.shape)
    s = relay.var("s", shape=(2, 2, 4, 3, block))
    attrs = dict(padding=1, strides=2, groups=groups, data_layout=data_layout, kernel_layout=kernel_layout,
                 out_layout="NCHW4c", activation=activation, alpha=0.25, beta=0.375, a_min=-0.5, a_max=0.5)
    bias = relay.const(RNG.standard_normal(8).astype("float32"))
    body = relay.Tuple([relay.nn.contrib_conv2d_NCHWc_bias_act(x, w, bias, **attrs),
                        relay.nn.contrib_conv2d_NCHWc_bias_sum_act(x, w, bias, s, **attrs),
                        relay.nn.contrib_conv2d_NCHWc(x, w, padding=1, strides=2, groups=groups,
                                                      data_layout=data_layout, kernel_layout=kernel_layout)])
    mod = ir.infer_type(ir.IRModule.from_expr(relay.Function([x, w, s], body)))
    inputs = {v.name_hint: RNG.standard_normal(v.checked_type.concrete_shape).astype("float32") for v in (x, s)}
    want = strategies.evaluate(mod, {**inputs, "w": weight})
    for params in ({}, {"w": weight}):  # the weight as an input, and as a constant laid out once
        exe = strategies.build(mod, "cpu", params)
        got = exe.run({**inputs, **({} if params else {"w": weight})})
        for g, r in zip(got, want):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5 * np.abs(r).max())
