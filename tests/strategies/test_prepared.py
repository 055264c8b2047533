"""Prepared kernels: constant-only work done once, donated buffers, and the float32 erf."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

import ir
from ir import relay
from strategies import ConfigSpace, OpStrategy, register_strategy, tune
from strategies.kernels.conv2d import ALGORITHMS, conv2d_compute
from strategies.kernels.dense import dense_compute
from strategies.kernels.elementwise import elementwise_compute, erf_float32, ops_with_in_place_form
from strategies.kernels.norm import batch_norm_compute, layer_norm_compute, softmax_compute
from strategies.kernels.prepared import NO_DONATION, PreparedCompute, donated_buffer
from strategies.kernels.reference import run_reference

RNG = np.random.default_rng(11)


def normal(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def typed_call(op: str, inputs, **attrs) -> ir.Call:
    call = ir.get_op(op)(*(relay.var(f"in{i}", shape=v.shape, dtype=v.dtype.name) for i, v in enumerate(inputs)),
                         **attrs)
    ir.infer_type(call)
    return call


def prepared(compute: PreparedCompute, call: ir.Call, inputs, constant_positions=()):
    constants = [np.asarray(v) if i in constant_positions else None for i, v in enumerate(inputs)]
    return compute.prepare(call.attrs, constants, call.checked_type, {})


# -- donated buffers ----------------------------------------------------------------------------
def test_donated_buffer_needs_shape_dtype_writability_and_an_allowed_position():
    a, b = normal(2, 3), normal(2, 3)
    frozen = normal(2, 3)
    frozen.setflags(write=False)
    f32 = np.dtype("float32")
    assert donated_buffer([a, b], (1,), (2, 3), f32) is b
    assert donated_buffer([a, b], (0, 1), (2, 3), f32, among=(1,)) is b
    assert donated_buffer([a, b], NO_DONATION, (2, 3), f32) is None
    assert donated_buffer([a, b], (0,), (3, 2), f32) is None
    assert donated_buffer([a, b], (0,), (2, 3), np.dtype("float64")) is None
    assert donated_buffer([frozen], (0,), (2, 3), f32) is None
    assert donated_buffer([a], (0,), None, f32) is None


@pytest.mark.parametrize("op", ops_with_in_place_form())
def test_in_place_forms_match_the_reference_and_write_into_the_donation(op):
    arity = ir.get_op(op).num_inputs
    attrs = {"a_min": -0.5, "a_max": 0.5} if op == "clip" else {"alpha": 0.1} if op == "nn.leaky_relu" else {}
    inputs = [np.abs(normal(3, 4)) + 0.5 for _ in range(arity)]
    if op == "nn.bias_add":
        inputs[1] = normal(4)
        attrs = {"axis": -1}
    call = typed_call(op, inputs, **attrs)
    expected = run_reference(op, call.attrs, inputs)
    kernel = prepared(elementwise_compute(op), call, inputs)
    np.testing.assert_array_equal(kernel([x.copy() for x in inputs], NO_DONATION), expected)
    donated = [x.copy() for x in inputs]
    out = kernel(donated, (0,))
    np.testing.assert_array_equal(out, expected)
    assert (out is donated[0]) == (expected.dtype.kind == "f")  # comparisons give bools: never in place


def test_in_place_forms_leave_integer_outputs_to_the_reference():
    a, b = np.array([7, -7], "int32"), np.array([2, 2], "int32")
    call = typed_call("divide", [a, b])
    out = prepared(elementwise_compute("divide"), call, [a, b])([a, b], (0,))
    np.testing.assert_array_equal(out, [3, -3])  # truncating integer division, not written into `a`
    np.testing.assert_array_equal(a, [7, -7])


# -- constant-only work at build time -----------------------------------------------------------
@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv2d_with_a_packed_constant_weight_matches_the_unpacked_path(algorithm, layout):
    data, weight, bias = normal(2, 16, 6, 7), normal(8, 16, 3, 3), normal(8)
    attrs = dict(padding=(1, 0, 1, 2), activation="relu")
    if algorithm == "gemm_1x1":
        weight, attrs["padding"] = normal(8, 16, 1, 1), (0, 0, 0, 0)
    if layout == "NHWC":
        data, weight = data.transpose(0, 2, 3, 1).copy(), weight.transpose(2, 3, 1, 0).copy()
        attrs.update(data_layout="NHWC", kernel_layout="HWIO")
    inputs = [data, weight, bias]
    call = typed_call("nn.conv2d_bias_act", inputs, **attrs)
    expected = run_reference("nn.conv2d_bias_act", call.attrs, inputs)
    compute = conv2d_compute(algorithm, fused=True)
    packed = prepared(compute, call, inputs, constant_positions=(1, 2))
    np.testing.assert_allclose(packed(inputs, NO_DONATION), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(compute(call.attrs, inputs, call.checked_type, {}), expected, rtol=1e-4, atol=1e-4)
    # the packed weight is what runs: a different weight at run time changes nothing
    np.testing.assert_allclose(packed([data, np.zeros_like(weight), bias], NO_DONATION), expected,
                               rtol=1e-4, atol=1e-4)


def test_dense_with_a_constant_weight_reads_its_transposed_copy():
    data, weight, bias = normal(5, 12), normal(6, 12), normal(6)
    call = typed_call("nn.dense_bias_act", [data, weight, bias], activation="relu")
    expected = run_reference("nn.dense_bias_act", call.attrs, [data, weight, bias])
    for algorithm in ("gemm", "blocked", "einsum"):
        kernel = prepared(dense_compute(algorithm, fused=True), call, [data, weight, bias], constant_positions=(1,))
        np.testing.assert_allclose(kernel([data, weight * 0, bias], NO_DONATION), expected, rtol=1e-5, atol=1e-5)


def test_batch_norm_folds_constant_statistics_once_and_can_work_in_place():
    x = normal(2, 4, 3, 3)
    gamma, beta, mean, var = normal(4), normal(4), normal(4), np.abs(normal(4)) + 0.5
    inputs = [x, gamma, beta, mean, var]
    call = typed_call("nn.batch_norm", inputs, epsilon=1e-3)
    expected = run_reference("nn.batch_norm", call.attrs, inputs)
    kernel = prepared(batch_norm_compute(), call, inputs, constant_positions=(1, 2, 3, 4))
    donated = [x.copy(), gamma * 0, beta * 0, mean, var]  # the folded statistics are what run
    out = kernel(donated, (0,))
    assert out[0] is donated[0] and out[1] is mean and out[2] is var
    np.testing.assert_allclose(out[0], expected[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("skip", [False, True])
def test_layer_norm_two_pass_is_the_reference_in_one_buffer(skip):
    x, residual, gamma, beta = normal(3, 8), normal(3, 8), normal(8), normal(8)
    op, inputs = ("nn.skip_layer_norm", [x, residual, gamma, beta]) if skip else ("nn.layer_norm", [x, gamma, beta])
    call = typed_call(op, inputs)
    expected = run_reference(op, call.attrs, inputs)
    kernel = prepared(layer_norm_compute(skip), call, inputs)
    donated = [v.copy() for v in inputs]
    out = kernel(donated, (len(inputs) - 1, 0))  # a donated gamma or beta is never the output buffer
    assert out is donated[0]
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(donated[-1], inputs[-1])


def test_softmax_in_a_donated_buffer():
    x = normal(4, 6) * 10
    call = typed_call("nn.softmax", [x], axis=-1)
    donated = [x.copy()]
    out = prepared(softmax_compute(), call, [x])(donated, (0,))
    assert out is donated[0]
    np.testing.assert_allclose(out, run_reference("nn.softmax", call.attrs, [x]), rtol=1e-6, atol=1e-7)


# -- erf in float32 -----------------------------------------------------------------------------
def test_erf_float32_is_within_1e6_of_scipy_everywhere():
    grid = np.linspace(-12, 12, 2_400_001, dtype=np.float32)
    tiny = np.float32(10.0) ** -np.arange(1, 38, dtype=np.float32)
    x = np.concatenate([grid, tiny, -tiny, [np.float32(3e38), np.float32(-3e38)]])
    error = np.abs(erf_float32(x).astype(np.float64) - special.erf(x.astype(np.float64)))
    assert error.max() < 1e-6, f"largest error {error.max():.2e} at x = {x[error.argmax()]}"


def test_erf_float32_special_values_and_output_buffers():
    special_values = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
    out = erf_float32(special_values)
    np.testing.assert_array_equal(out[:4], [0, 0, 1, -1])
    assert np.signbit(out[1]) and np.isnan(out[4]) and out.dtype == np.float32
    x = normal(70_000)  # more than one block
    expected = erf_float32(x)
    in_place = x.copy()
    assert erf_float32(in_place, in_place) is in_place
    np.testing.assert_array_equal(in_place, expected)
    wide = np.zeros((2, 70_000), np.float32)
    assert erf_float32(x[:35_000], wide[0, ::2]) is not None  # a strided output gets the values
    np.testing.assert_array_equal(wide[0, ::2], expected[:35_000])
    assert not wide[0, 1::2].any() and not wide[1].any()


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5000), st.floats(-8, 8), st.floats(0.01, 4))
def test_erf_float32_on_random_arrays(size, loc, scale):
    x = np.random.default_rng(size).normal(loc, scale, size).astype(np.float32)
    assert np.max(np.abs(erf_float32(x) - special.erf(x.astype(np.float64)))) < 1e-6


# -- tuning times what the executor runs --------------------------------------------------------
@pytest.fixture
def dense_counting_preparations():
    """`nn.dense` on cpu with one prepared implementation that records what each preparation saw."""
    op = ir.get_op("nn.dense")
    saved = op.get_attr("FTVMStrategy")
    seen = []

    def prepare(attrs, constants, out_type, config):
        seen.append([c is not None for c in constants])
        return lambda inputs, donated: inputs[0] @ inputs[1].T

    def strategy(attrs, in_types, out_type, target):
        s = OpStrategy()
        s.add_implementation(PreparedCompute(prepare), lambda *a: ConfigSpace(), "dense_counted")
        return s

    register_strategy("nn.dense", strategy, override=True)
    yield seen
    op.set_attr("FTVMStrategy", saved)


def test_tuning_prepares_the_program_constants_once_per_measurement(dense_counting_preparations, tmp_path):
    program = relay.nn.dense(relay.var("x", shape=(4, 8)), relay.const(normal(3, 8)))
    tune(program, "cpu", log=tmp_path / "log.jsonl", trials=1, repeat=5)
    assert dense_counting_preparations == [[False, True]]  # the weight known, once, outside the timed runs
