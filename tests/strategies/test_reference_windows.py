"""N-d convolution, transposed convolution and pooling reference kernels against loop formulas."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay
from ir.errors import TypeInferenceError

from .naive_windows import conv_loop, conv_transpose_loop, pool_loop
from .test_reference import rand, run


CONV_CASES = [  # (op, data shape, weight shape, strides, padding, dilation, groups)
    ("nn.conv1d", (2, 4, 9), (6, 2, 3), (2,), (1, 2), (1,), 2),
    ("nn.conv1d", (1, 3, 8), (4, 3, 2), (1,), (0, 0), (3,), 1),
    ("nn.conv3d", (1, 2, 5, 4, 6), (4, 1, 2, 3, 2), (1, 2, 2), (1, 0, 1, 0, 1, 1), (1, 1, 2), 2),
    ("nn.conv3d", (1, 2, 4, 4, 4), (3, 2, 1, 1, 1), (2, 1, 1), (0,) * 6, (1, 1, 1), 1),
]


@pytest.mark.parametrize("name, data, weight, strides, padding, dilation, groups", CONV_CASES)
def test_conv_nd_against_loops(name, data, weight, strides, padding, dilation, groups):
    x, w = rand(*data, dtype="float64"), rand(*weight, dtype="float64")
    out = run(name, x, w, strides=strides, padding=padding, dilation=dilation, groups=groups)
    np.testing.assert_allclose(out, conv_loop(x, w, strides, padding, dilation, groups), rtol=1e-12, atol=1e-12)


def test_conv_channels_last_layouts_match_channels_first():
    x, w = rand(1, 3, 4, 5, 6), rand(2, 3, 2, 2, 3)
    expected = run("nn.conv3d", x, w, padding=1)
    out = run("nn.conv3d", x.transpose(0, 2, 3, 4, 1), w.transpose(2, 3, 4, 1, 0), padding=1,
              data_layout="NDHWC", kernel_layout="DHWIO")
    np.testing.assert_allclose(out.transpose(0, 4, 1, 2, 3), expected, rtol=1e-5, atol=1e-5)
    out1 = run("nn.conv1d", x[:, :, 0, 0].transpose(0, 2, 1), w[:, :, 0, 0].transpose(2, 1, 0),
               data_layout="NWC", kernel_layout="WIO")
    np.testing.assert_allclose(out1.transpose(0, 2, 1), run("nn.conv1d", x[:, :, 0, 0], w[:, :, 0, 0]), rtol=1e-6)


TRANSPOSE_CASES = [  # (op, data shape, weight shape, strides, padding, dilation, groups, output_padding)
    ("nn.conv1d_transpose", (1, 2, 5), (2, 3, 3), (2,), (1, 0), (1,), 1, (1,)),
    ("nn.conv1d_transpose", (2, 4, 3), (4, 1, 2), (3,), (0, 2), (2,), 2, (0,)),
    ("nn.conv2d_transpose", (1, 2, 3, 4), (2, 2, 3, 2), (2, 1), (1, 0, 0, 1), (1, 2), 1, (1, 1)),
    ("nn.conv3d_transpose", (1, 2, 3, 2, 3), (2, 1, 2, 2, 1), (1, 2, 2), (0, 1, 0, 0, 0, 1), (2, 1, 1), 2, (1, 0, 1)),
]


@pytest.mark.parametrize("name, data, weight, strides, padding, dilation, groups, output_padding", TRANSPOSE_CASES)
def test_conv_transpose_against_loops(name, data, weight, strides, padding, dilation, groups, output_padding):
    x, w = rand(*data, dtype="float64"), rand(*weight, dtype="float64")
    out = run(name, x, w, strides=strides, padding=padding, dilation=dilation, groups=groups,
              output_padding=output_padding)
    expected = conv_transpose_loop(x, w, strides, padding, dilation, groups, output_padding)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_conv_transpose_is_the_adjoint_of_conv():
    """<conv(x, w), y> = <x, conv_transpose(y, w)> for the same geometry (w read as [out, in] vs [in, out])."""
    x, w, = rand(1, 3, 7, 6, dtype="float64"), rand(4, 3, 3, 2, dtype="float64")
    geometry = dict(strides=(2, 1), padding=(1, 0, 1, 1), dilation=(1, 2))
    y = run("nn.conv2d", x, w, **geometry)
    z = rand(*y.shape, dtype="float64")
    back = run("nn.conv2d_transpose", z, w, **geometry, output_padding=(0, 0))
    assert back.shape == x.shape
    np.testing.assert_allclose((y * z).sum(), (x * back).sum(), rtol=1e-12)


POOL_CASES = [  # (rank, data shape, pool_size, strides, padding, dilation, ceil_mode)
    (1, (1, 2, 9), (3,), (2,), (1, 1), (1,), True),
    (1, (2, 1, 8), (2,), (3,), (0, 1), (2,), False),
    (3, (1, 2, 5, 6, 4), (2, 3, 2), (2, 2, 1), (1, 1, 0, 0, 1, 1), (1, 1, 2), True),
    (3, (1, 1, 4, 4, 5), (3, 2, 2), (1, 2, 2), (1, 0, 0, 1, 0, 1), (1, 1, 1), False),
]


POOL_OPS = {(1, "max"): "nn.max_pool1d", (1, "avg"): "nn.avg_pool1d", (3, "max"): "nn.max_pool3d",
            (3, "avg"): "nn.avg_pool3d"}


@pytest.mark.parametrize("rank, data, size, strides, padding, dilation, ceil_mode", POOL_CASES)
@pytest.mark.parametrize("kind, include_pad", [("max", False), ("avg", False), ("avg", True)])
def test_pool_nd_against_loops(rank, data, size, strides, padding, dilation, ceil_mode, kind, include_pad):
    x = rand(*data, dtype="float64")
    name = POOL_OPS[rank, kind]
    extra = {"count_include_pad": include_pad} if kind == "avg" else {}
    out = run(name, x, pool_size=size, strides=strides, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
              **extra)
    expected = pool_loop(x, kind, size, strides, padding, dilation, ceil_mode, include_pad)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def _infer(expr):
    return ir.infer_type(expr).checked_type


@pytest.mark.parametrize("build, message", [
    (lambda: relay.nn.conv1d(relay.var("x", shape=(1, 4, 8, 8)), relay.var("w", shape=(2, 4, 3))), "3-D data"),
    (lambda: relay.nn.conv3d(relay.var("x", shape=(1, 4, 5, 5, 5)), relay.var("w", shape=(2, 3, 1, 1, 1))),
     "channels"),
    (lambda: relay.nn.conv1d(relay.var("x", shape=(1, 4, 8)), relay.var("w", shape=(2, 4, 3)),
                             kernel_layout="OIHW"), "kernel layout 'OIHW'"),
    (lambda: relay.nn.conv2d_transpose(relay.var("x", shape=(1, 4, 5, 5)), relay.var("w", shape=(4, 2, 3, 3)),
                                       strides=2, output_padding=2), "output_padding"),
    (lambda: relay.nn.conv2d_transpose(relay.var("x", shape=(1, 4, 5, 5)), relay.var("w", shape=(4, 2, 3, 3)),
                                       kernel_layout="OIHW"), "kernel layout 'OIHW'"),
    (lambda: relay.nn.conv1d_transpose(relay.var("x", shape=(1, 4, 2)), relay.var("w", shape=(4, 2, 2)),
                                       padding=2), "leaves no output"),
    (lambda: relay.nn.conv1d_transpose(relay.var("x", shape=(1, 3, 2)), relay.var("w", shape=(3, 2, 2)),
                                       groups=2), "not divisible by groups"),
    (lambda: relay.nn.max_pool3d(relay.var("x", shape=(1, 2, 4, 4)), pool_size=2), "5-D data"),
    (lambda: relay.nn.avg_pool1d(relay.var("x", shape=(1, 2, 4)), pool_size=6), "larger than the padded input"),
    (lambda: relay.nn.max_pool1d(relay.var("x", shape=(1, 2, 4)), layout="NCHW"), "data layout 'NCHW'"),
])
def test_window_type_errors_name_the_problem(build, message):
    with pytest.raises(TypeInferenceError, match=message):
        _infer(build())


def test_symbolic_sizes_give_expressions():
    n = relay.SizeVar("n")
    x = relay.var("x", ir.TensorType((1, 2, n, 5)))
    out = _infer(relay.nn.conv2d_transpose(x, relay.var("w", shape=(2, 3, 3, 3)), strides=2, padding=1))
    assert str(out) == "Tensor[(1, 3, n*2 - 1, 9), float32]"
    assert str(_infer(relay.nn.avg_pool2d(x, pool_size=2, strides=2))) == "Tensor[(1, 2, (n - 2) // 2 + 1, 2), float32]"


def test_window_attribute_errors():
    with pytest.raises(ir.errors.AttrsError, match="expected 1, 3 or 6 values"):
        relay.nn.conv3d(relay.var("x", shape=(1, 1, 2, 2, 2)), relay.var("w", shape=(1, 1, 1, 1, 1)), padding=(1, 1))
    with pytest.raises(ir.errors.AttrsError, match="expected 1 or 1 values"):
        relay.nn.max_pool1d(relay.var("x", shape=(1, 1, 4)), pool_size=(2, 2))
