"""Every implementation of every op, with every configuration, against the reference kernels.

Fixed examples cover every op and every conditional implementation; hypothesis draws random
shapes and attributes for the ops with competing kernels. torch kernels run on CPU tensors when
torch is installed (the tests pass without it).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ir
from ir import relay
from strategies import build, evaluate
from strategies.devices import to_host, to_torch, torch_available
from strategies.errors import NoImplementationError
from strategies.kernels.reference import run_reference
from strategies.kernels.torch_ops import applies, run_torch_kernel
from strategies.select import candidate_implementations, config_space
from strategies.workload import Workload

from .examples import EXAMPLES, Example

HOST_TARGETS = ("cpu", "ort")
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_matches(out, expected, what: str) -> None:
    if isinstance(expected, tuple):
        assert isinstance(out, tuple) and len(out) == len(expected), what
        for o, e in zip(out, expected):
            assert_matches(o, e, what)
        return
    out = to_host(out)
    assert out.shape == expected.shape and out.dtype == expected.dtype, \
        f"{what}: got {out.shape} {out.dtype}, expected {expected.shape} {expected.dtype}"
    if expected.dtype.kind == "f":
        finite = np.abs(expected[np.isfinite(expected)])
        scale = max(1.0, float(finite.max()) if finite.size else 1.0)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4 * scale, err_msg=what)
    else:
        np.testing.assert_array_equal(out, expected, err_msg=what)


def check_implementations(example: Example, targets=HOST_TARGETS) -> set[str]:
    """Run every candidate implementation with every configuration; return the names run."""
    call = example.call()
    workload = Workload.of_call(call)
    expected = run_reference(example.op, call.attrs, list(example.inputs))
    ran = set()
    for target in targets:
        try:
            _, candidates, _ = candidate_implementations(workload, target)
        except NoImplementationError:
            continue
        for impl in candidates:
            if impl.device == "torch" and not torch_available():
                continue
            inputs = [to_torch(v, "cpu") for v in example.inputs] if impl.device == "torch" else list(example.inputs)
            for config in config_space(impl, workload, target).configs():
                with np.errstate(all="ignore"):
                    out = impl.compute(call.attrs, inputs, call.checked_type, config)
                assert_matches(out, expected, f"{impl.name} {config} on {example}")
                ran.add(impl.name)
    assert ran, f"no implementation ran for {example}"
    return ran


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_every_implementation_matches_the_reference(example):
    check_implementations(example)


def test_examples_cover_every_op_and_every_conditional_implementation():
    assert {e.op for e in EXAMPLES} == set(ir.list_ops())
    offered = set()
    for example in EXAMPLES:
        workload = Workload.of_call(example.call())
        for target in HOST_TARGETS:
            try:
                offered.update(i.name for i in candidate_implementations(workload, target)[1] if i.device == "host")
            except NoImplementationError:
                pass
    for prefix in ("conv2d", "conv2d_bias_act"):
        assert {f"{prefix}_{a}.cpu" for a in ("im2col", "direct", "winograd", "gemm_1x1")} <= offered
    assert {"conv1d_direct.cpu", "conv3d_direct.cpu", "max_pool1d_taps.cpu", "avg_pool3d_taps.cpu",
            "conv2d_transpose_gemm.cpu", "conv3d_transpose_scatter.cpu"} <= offered
    assert {"dense_gemm.cpu", "dense_blocked.cpu", "dense_einsum.cpu", "dense_bias_act_blocked.cpu"} <= offered
    assert {"batch_matmul_gemm.cpu", "batch_matmul_stacked.cpu", "matmul_stacked.cpu", "matmul_einsum.cpu"} <= offered
    assert {"fused_matmul_stacked.cpu", "bias_gelu.ort", "skip_layer_norm_one_pass.ort"} <= offered
    assert {"max_pool2d_taps.cpu", "avg_pool2d_windows.cpu", "softmax_inplace.cpu", "layer_norm_one_pass.cpu",
            "batch_norm_affine.cpu"} <= offered


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_torch_kernels_match_the_reference(example):
    pytest.importorskip("torch")
    call = example.call()
    if not applies(example.op, call.attrs):
        pytest.skip(f"no torch kernel covers {example}")
    expected = run_reference(example.op, call.attrs, list(example.inputs))
    inputs = [to_torch(v, "cpu") for v in example.inputs]
    assert_matches(run_torch_kernel(example.op, call.attrs, inputs, call.checked_type), expected, str(example))


# -- random shapes ------------------------------------------------------------------------------
def _values(draw, *shape) -> np.ndarray:
    """Normal float32 values from a drawn seed (hypothesis shrinks the seed, not the array)."""
    return np.random.default_rng(draw(st.integers(0, 2 ** 16))).standard_normal(shape).astype("float32")


@st.composite
def conv_examples(draw) -> Example:
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    groups = draw(st.sampled_from([1, 1, 2, "depthwise"]))
    channels = draw(st.sampled_from([2, 4, 16]))
    groups = channels if groups == "depthwise" else groups
    out_channels = groups * draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, 2)) for _ in range(4))
    h = draw(st.integers(dilation[0] * (kh - 1) + 1, 9))
    w = draw(st.integers(dilation[1] * (kw - 1) + 1, 9))
    n = draw(st.integers(1, 2))
    data = _values(draw, n, channels, h, w)
    weight = _values(draw, out_channels, channels // groups, kh, kw)
    attrs = dict(strides=strides, padding=padding, dilation=dilation, groups=groups)
    if layout == "NHWC":
        data, weight = data.transpose(0, 2, 3, 1).copy(), weight.transpose(2, 3, 1, 0).copy()
        attrs.update(data_layout="NHWC", kernel_layout="HWIO")
    if draw(st.booleans()):
        activation = draw(st.sampled_from(["none", "relu", "sigmoid", "tanh", "leaky_relu"]))
        return Example("nn.conv2d_bias_act", (data, weight, _values(draw, out_channels)),
                       {**attrs, "activation": activation, "alpha": 0.1})
    return Example("nn.conv2d", (data, weight), attrs)


@SETTINGS
@given(conv_examples())
def test_conv2d_implementations_on_random_shapes(example):
    check_implementations(example)


@st.composite
def gemm_examples(draw) -> Example:
    kind = draw(st.sampled_from(["nn.dense", "nn.dense_bias_act", "nn.batch_matmul", "nn.matmul", "nn.fused_matmul"]))
    k = draw(st.integers(1, 12))
    if kind.startswith("nn.dense"):
        rows = draw(st.sampled_from([1, 5, 64, 260]))
        lead = (rows,) if draw(st.booleans()) else (2, rows // 2 or 1)
        units = draw(st.integers(1, 10))
        inputs = (_values(draw, *lead, k), _values(draw, units, k))
        if kind == "nn.dense":
            return Example(kind, inputs, {})
        return Example(kind, (*inputs, _values(draw, units)),
                       {"activation": draw(st.sampled_from(["none", "relu", "leaky_relu"]))})
    batch, m, n = draw(st.integers(1, 12)), draw(st.integers(1, 40)), draw(st.integers(1, 8))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    a = _values(draw, batch, *((k, m) if ta else (m, k)))
    b = _values(draw, batch if kind == "nn.batch_matmul" or draw(st.booleans()) else 1, *((n, k) if tb else (k, n)))
    attrs = {"transpose_a": ta, "transpose_b": tb}
    if kind == "nn.fused_matmul":
        attrs["alpha"] = 0.25
    return Example(kind, (a, b), attrs)


@SETTINGS
@given(gemm_examples())
def test_gemm_implementations_on_random_shapes(example):
    check_implementations(example)


@st.composite
def pool_examples(draw) -> Example:
    kind = draw(st.sampled_from(["nn.max_pool2d", "nn.avg_pool2d"]))
    size = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = tuple(draw(st.integers(0, 1)) for _ in range(4))
    h = draw(st.integers(dilation[0] * (size[0] - 1) + 1, 8))
    w = draw(st.integers(dilation[1] * (size[1] - 1) + 1, 8))
    attrs = dict(pool_size=size, strides=strides, dilation=dilation, padding=padding, ceil_mode=draw(st.booleans()))
    if kind == "nn.avg_pool2d":
        attrs["count_include_pad"] = draw(st.booleans())
    return Example(kind, (_values(draw, 2, 3, h, w),), attrs)


@SETTINGS
@given(pool_examples())
def test_pool_implementations_on_random_shapes(example):
    check_implementations(example)


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 9), st.sampled_from([-1, 0, 1]), st.floats(-50.0, 50.0))
def test_softmax_and_layer_norm_on_random_shapes(rows, cols, axis, offset):
    x = np.random.default_rng(rows * 10 + cols).standard_normal((rows, cols, 3)).astype("float32") + np.float32(offset)
    check_implementations(Example("nn.softmax", (x,), {"axis": axis}))
    size = x.shape[axis]
    gamma, beta = np.ones(size, "float32"), np.zeros(size, "float32")
    check_implementations(Example("nn.layer_norm", (x, gamma, beta), {"axis": axis}))


@SETTINGS
@given(st.lists(st.sampled_from([1, 7, 255, 256, 300]), min_size=1, max_size=4),
       st.sampled_from(["nn.dense", "nn.dense_bias_act"]))
def test_symbolic_rows_dispatch_to_the_specialization_that_holds(row_counts, op):
    """Built once over a symbolic row count; each run's shape decides the `rows >= 256` condition."""
    n = ir.SizeVar("n")
    rng = np.random.default_rng(len(row_counts))
    weights = [relay.const(rng.standard_normal((4, 8)).astype("float32"))]
    if op == "nn.dense_bias_act":
        weights.append(relay.const(rng.standard_normal(4).astype("float32")))
    program = ir.get_op(op)(relay.var("x", shape=(n, 8)), *weights)
    exe = build(program, "cpu")
    for rows in row_counts:
        x = rng.standard_normal((rows, 8)).astype("float32")
        assert_matches(exe.run(x=x), evaluate(program, {"x": x}), f"{op} with {rows} rows")
        selection = next(s for s in exe.selections if s.workload.in_types[0].shape[0] == rows)
        assert (f"{op[3:]}_blocked.cpu" in selection.candidates) == (rows >= 256)
