"""`build` / `Executable`: outputs, profiles, selection logs, fallbacks, symbolic dispatch, bad input."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import ir
from ir import relay
from strategies import Target, apply_history_best, build, evaluate
from strategies.devices import torch_available
from strategies.errors import InputError, NoImplementationError, TargetError
from strategies.records import TuningRecord
from strategies.workload import Workload

from .model_inputs import random_inputs, relative_error

RNG = np.random.default_rng(3)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def small_cnn():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w1, w2 = relay.var("w1", shape=(8, 3, 3, 3)), relay.var("w2", shape=(8, 8, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, padding=1))
    y = relay.nn.relu(relay.nn.conv2d(y, w2, padding=1))
    z = relay.nn.relu(relay.nn.conv2d(y, w2, padding=1))  # the same workload again
    out = relay.nn.softmax(relay.nn.batch_flatten(relay.nn.max_pool2d(z, pool_size=2, strides=2)))
    params = {"w1": rand(8, 3, 3, 3), "w2": rand(8, 8, 3, 3)}
    return ir.IRModule.from_expr(out), params


def test_build_runs_like_the_interpreter_and_profiles_per_op():
    mod, params = small_cnn()
    x = rand(1, 3, 8, 8)
    exe = build(mod, "cpu", params)
    np.testing.assert_allclose(exe.run(x=x), evaluate(mod, {"x": x}, params), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exe.run({"x": x}), exe.run(x=x))
    profile = exe.profile(x=x, repeat=2)
    assert [row.op for row in profile.rows].count("nn.conv2d") == 3
    assert set(profile.by_op()) == {"nn.conv2d", "nn.relu", "nn.max_pool2d", "nn.batch_flatten", "nn.softmax"}
    assert abs(sum(profile.by_op().values()) - profile.kernels_us) < 1e-6
    assert profile.latency_us > 0 and "nn.conv2d" in str(profile)
    assert all(row.reason == "plevel" for row in profile.rows)


def test_each_workload_is_logged_once(caplog):
    mod, params = small_cnn()
    with caplog.at_level(logging.INFO, logger="strategies"):
        exe = build(mod, "cpu", params)
        exe.run(x=rand(1, 3, 8, 8))
        exe.run(x=rand(1, 3, 8, 8))
    lines = [r.getMessage() for r in caplog.records if r.name == "strategies"]
    conv_lines = [line for line in lines if "nn.conv2d(" in line]
    assert len(conv_lines) == 2, lines  # two distinct conv workloads, three calls
    assert all("->" in line and "plevel" in line for line in conv_lines)
    assert len(exe.selections) == len(lines)


def test_custom_target_falls_back_to_generic_with_one_warning(caplog):
    mod, params = small_cnn()
    mine = Target("mytarget", keys=("mytarget",))
    with caplog.at_level(logging.INFO, logger="strategies"):
        exe = build(mod, mine, params)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "mytarget" in warnings[0] and "nn.conv2d" in warnings[0]
    assert {s.reason for s in exe.selections} == {"fallback"}
    x = rand(1, 3, 8, 8)
    np.testing.assert_allclose(exe.run(x=x), evaluate(mod, {"x": x}, params), rtol=1e-5, atol=1e-6)


def test_an_op_without_any_implementation_names_op_and_target():
    x, b = relay.var("x", shape=(2, 8)), relay.const(np.ones(8, "float32"))
    program = relay.nn.bias_gelu(x, b)
    with pytest.raises(NoImplementationError, match="nn.bias_gelu has no implementation for target cpu"):
        build(program, "cpu")
    out = build(program, "ort").run(x=np.zeros((2, 8), "float32"))
    np.testing.assert_allclose(out, evaluate(program, {"x": np.zeros((2, 8), "float32")}))


@pytest.mark.parametrize("batch", [3, ir.SizeVar("b")])
def test_reference_fallback_runs_what_the_target_lacks_with_its_reference_kernel(batch):
    x, b = relay.var("x", shape=(batch, 8)), relay.const(np.linspace(-1, 1, 8, dtype="float32"))
    w = relay.const(np.eye(8, dtype="float32"))
    program = relay.nn.dense(relay.nn.bias_gelu(x, b), w)
    exe = build(program, "cpu", reference_fallback=True)
    value = rand(3, 8)
    np.testing.assert_allclose(exe.run(x=value), evaluate(program, {"x": value}), rtol=1e-6, atol=1e-7)
    reasons = {s.workload.op: s.reason for s in exe.selections}
    assert reasons["nn.bias_gelu"] == "reference" and reasons["nn.dense"] != "reference"
    assert "reference kernel" in next(s for s in exe.selections if s.reason == "reference").describe(exe.target)


def test_cuda_without_a_gpu_is_a_clear_error():
    if torch_available():
        import torch
        if torch.cuda.is_available():
            pytest.skip("a GPU is present")
    with pytest.raises(TargetError, match="target cuda"):
        build(relay.nn.relu(relay.var("x", shape=(2,))), "cuda")


@pytest.mark.parametrize("inputs, message", [
    ({"x": np.zeros((1, 3, 8, 7), "float32")}, r"input 'x': expected Tensor\[\(1, 3, 8, 8\), float32\], got .*8, 7"),
    ({"x": np.zeros((1, 3, 8, 8), "int32")}, r"input 'x': expected .*float32\], got .*int32"),
    ({}, r"missing input.*'x'"),
    ({"x": np.zeros((1, 3, 8, 8), "float32"), "y": 1}, r"unexpected input.*'y'"),
])
def test_bad_run_inputs_are_clear_errors(inputs, message):
    mod, params = small_cnn()
    exe = build(mod, "cpu", params)
    with pytest.raises(InputError, match=message):
        exe.run(**inputs)


def test_unknown_param_name_is_an_input_error():
    mod, params = small_cnn()
    with pytest.raises(InputError, match="no parameter named"):
        build(mod, "cpu", {**params, "bogus": np.zeros(1)})


def test_constant_subgraphs_are_folded_away():
    x = relay.var("x", shape=(2, 4))
    weight = relay.transpose(relay.const(rand(4, 3)))  # constant-only: folded when building
    exe = build(relay.nn.dense(x, weight), "cpu")
    assert [row.op for row in exe.profile(x=rand(2, 4), repeat=1).rows] == ["nn.dense"]


def test_tuple_outputs_let_and_if_run_through_build():
    x = relay.var("x", shape=(4,))
    v = relay.var("v")
    flag = relay.var("flag", shape=(), dtype="bool")
    program = relay.Tuple([relay.Let(v, relay.exp(x), v * v), relay.If(flag, relay.negative(x), x)])
    exe = build(program, "cpu")
    first, second = exe.run(x=np.zeros(4, "float32"), flag=np.array(True))
    np.testing.assert_allclose(first, np.ones(4))
    np.testing.assert_allclose(second, np.zeros(4))


def test_symbolic_shapes_dispatch_per_actual_shape():
    b = ir.SizeVar("b")
    a, c = relay.var("a", shape=(b, 8, 5)), relay.var("c", shape=(b, 6, 5))
    program = relay.nn.batch_matmul(a, c)
    exe = build(program, "cpu")
    assert exe.selections == []  # nothing is decided before the shapes are known
    for batch, expected in ((16, "batch_matmul_stacked.cpu"), (2, "batch_matmul_gemm.cpu"), (16, None)):
        av, cv = rand(batch, 8, 5), rand(batch, 6, 5)
        np.testing.assert_allclose(exe.run(a=av, c=cv), evaluate(program, {"a": av, "c": cv}), rtol=1e-5, atol=1e-6)
        if expected:
            assert exe.selections[-1].implementation.name == expected
    assert len(exe.selections) == 2  # one per distinct shape, memoized


def test_symbolic_dispatch_consults_the_tuning_history():
    n = ir.SizeVar("n")
    x, w = relay.var("x", shape=(n, 8)), relay.const(rand(4, 8))
    program = relay.nn.dense(x, w)
    big = relay.nn.dense(relay.var("x", shape=(300, 8)), w)
    ir.infer_type(big)
    record = TuningRecord("cpu", Workload.of_call(big).key, "nn.dense", "dense_blocked.cpu", {"tile_rows": 64}, (1.0,))
    with apply_history_best([record]):
        exe = build(program, "cpu")
    exe.run(x=rand(300, 8))
    exe.run(x=rand(3, 8))
    chosen = {s.workload.in_types[0].shape[0]: (s.implementation.name, s.reason) for s in exe.selections}
    assert chosen == {300: ("dense_blocked.cpu", "tuned"), 3: ("dense_gemm.cpu", "plevel")}


def test_symbolic_shape_mismatch_at_run_is_an_input_error():
    n = ir.SizeVar("n")
    program = relay.add(relay.var("a", shape=(n,)), relay.var("b", shape=(n,)))
    exe = build(program, "cpu")
    with pytest.raises(InputError, match="dimension n is 3, but input 'a' gave it 2"):
        exe.run(a=np.zeros(2, "float32"), b=np.zeros(3, "float32"))


@pytest.mark.parametrize("name", ["resnet50", "bert"])
def test_cuda_strategies_run_through_torch_on_the_host(name):
    """The cuda strategies (torch kernels) on a target that keeps cuda's keys but runs on the CPU."""
    pytest.importorskip("torch")
    mod, params = ir.models.get(name, small=True)
    cuda_like = Target("cuda_on_host", keys=("cuda", "gpu"), device="cpu")
    exe = build(mod, cuda_like, params)
    assert {s.implementation.device for s in exe.selections} == {"torch"}
    inputs = random_inputs(mod["main"], set(params))
    assert relative_error(exe.run(inputs), evaluate(mod, inputs, params)) <= 1e-4
