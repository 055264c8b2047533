"""Straight-line execution: slots, last uses and buffer donation never change a program's values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ir
from ir import relay
from strategies import ConfigSpace, OpStrategy, build, evaluate, register_strategy
from strategies.straight_line import is_straight_line

RNG = np.random.default_rng(5)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def donations(exe) -> int:
    """How many argument positions the plan lets kernels overwrite."""
    return sum(len(step.candidates) for step in exe._program.steps)


def test_in_place_chain_after_a_convolution_matches_and_keeps_inputs():
    x, w = rand(1, 4, 6, 6), rand(8, 4, 3, 3)
    gamma, beta, mean, var = rand(8), rand(8), rand(8), np.abs(rand(8)) + 0.5
    data = relay.var("x", shape=x.shape)
    bn = relay.nn.batch_norm(relay.nn.conv2d(data, relay.const(w), padding=1), relay.const(gamma), relay.const(beta),
                             relay.const(mean), relay.const(var))
    program = relay.add(relay.nn.relu(bn[0]), relay.const(1.0))
    exe = build(program, "cpu")
    assert donations(exe) == 3  # batch norm into the convolution, relu into batch norm, add into relu
    before = x.copy()
    first = exe.run(x=x)
    np.testing.assert_allclose(first, evaluate(program, {"x": x}), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(exe.run(x=x), first)  # constants are intact for the next run


def test_inputs_and_constants_are_never_overwritten():
    x = relay.var("x", shape=(3, 4))
    c = relay.const(rand(3, 4))
    program = relay.Tuple([relay.nn.relu(x), relay.negative(c), relay.exp(relay.negative(x))])
    exe = build(program, "cpu")
    value = rand(3, 4)
    before = value.copy()
    out = exe.run(x=value)
    np.testing.assert_array_equal(value, before)
    for got, want in zip(out, evaluate(program, {"x": before})):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(exe.run(x=value)[1], out[1])


def test_a_value_still_read_through_a_view_is_not_donated():
    x = relay.var("x", shape=(4, 6))
    a = relay.exp(x)
    view = relay.reshape(a, newshape=(6, 4))          # evaluated first: shares a's memory and outlives it
    b = relay.negative(a)                             # a's last use: a candidate, refused at run time
    program = relay.add(view, relay.reshape(b, newshape=(6, 4)))
    exe = build(program, "cpu")
    assert donations(exe) == 3  # a into the negative (refused when running), either add argument
    value = rand(4, 6)
    np.testing.assert_allclose(exe.run(x=value), evaluate(program, {"x": value}), rtol=1e-6)
    np.testing.assert_array_equal(exe.run(x=value), 0)


def test_tuple_fields_aliasing_constants_are_not_donated():
    x = relay.var("x", shape=(1, 3, 2, 2))
    mean, var = relay.const(-np.ones(3, "float32")), relay.const(np.ones(3, "float32"))
    bn = relay.nn.batch_norm(relay.exp(x), relay.const(np.ones(3, "float32")), relay.const(np.zeros(3, "float32")),
                             mean, var)
    program = relay.Tuple([relay.nn.relu(bn[0]), relay.nn.relu(bn[1])])   # bn[1] is the constant `mean`
    exe = build(program, "cpu")
    value = rand(1, 3, 2, 2)
    for _ in range(2):
        normalized, relu_mean = exe.run(x=value)
        np.testing.assert_array_equal(relu_mean, [0, 0, 0])
        np.testing.assert_allclose(normalized, evaluate(program, {"x": value})[0], rtol=1e-5)
    np.testing.assert_array_equal(mean.data, [-1, -1, -1])


KEPT = np.ones((2, 3), "float32")


@pytest.fixture
def negative_returning_a_kept_buffer():
    """`negative` replaced by a compute that returns a buffer it keeps between calls (not trusted)."""
    op = ir.get_op("negative")
    saved = op.get_attr("FTVMStrategy")

    def strategy(attrs, in_types, out_type, target):
        s = OpStrategy()
        s.add_implementation(lambda attrs, inputs, out_type, config: KEPT, lambda *a: ConfigSpace(), "kept")
        return s

    register_strategy("negative", strategy, override=True)
    yield
    op.set_attr("FTVMStrategy", saved)


def test_outputs_of_untrusted_computes_are_never_donated(negative_returning_a_kept_buffer):
    program = relay.exp(relay.negative(relay.var("x", shape=(2, 3))))
    exe = build(program, "cpu")
    assert donations(exe) == 0
    for _ in range(2):
        np.testing.assert_allclose(exe.run(x=rand(2, 3)), np.e, rtol=1e-6)
    np.testing.assert_array_equal(KEPT, 1)


def test_control_flow_runs_on_the_evaluator():
    x = relay.var("x", shape=(2,))
    straight = relay.Function([x], relay.nn.relu(relay.negative(x)))
    branching = relay.Function([x], relay.If(relay.const(True), relay.exp(x), x))
    assert is_straight_line(straight) and not is_straight_line(branching)
    assert build(straight, "cpu")._program is not None and build(branching, "cpu")._program is None


# -- random programs ----------------------------------------------------------------------------
UNARY = ["nn.relu", "negative", "tanh", "sigmoid", "abs", "copy"]
BINARY = ["add", "subtract", "multiply", "maximum"]
VIEWS = ["transpose", "reshape"]


@st.composite
def programs(draw):
    """Random DAGs of (4, 4) float32 values: element-wise ops, views, shared values, tuple outputs.

    A "fork" combines a view of a value with an op on the value itself, in either order: the
    pattern where writing into the value would change what the view reads.
    """
    x, y = relay.var("x", shape=(4, 4)), relay.var("y", shape=(4, 4))
    values = [x, y, relay.const(np.arange(16, dtype="float32").reshape(4, 4) / 16)]

    def unary(value):
        return ir.get_op(draw(st.sampled_from(UNARY)))(value)

    def binary(a, b):
        return ir.get_op(draw(st.sampled_from(BINARY)))(a, b)

    def view(value):
        if draw(st.sampled_from(VIEWS)) == "transpose":
            return relay.transpose(value)
        return relay.reshape(relay.reshape(value, newshape=(16,)), newshape=(4, 4))

    for _ in range(draw(st.integers(1, 10))):
        # mostly recent values, so that views and their sources meet again in later ops
        pick = values[draw(st.one_of(st.integers(max(0, len(values) - 3), len(values) - 1),
                                     st.integers(0, len(values) - 1)))]
        kind = draw(st.sampled_from(["unary", "binary", "view", "fork"]))
        if kind == "unary":
            values.append(unary(pick))
        elif kind == "binary":
            values.append(binary(pick, values[draw(st.integers(0, len(values) - 1))]))
        elif kind == "view":
            values.append(view(pick))
        else:
            pair = [view(pick), unary(pick)]
            values.append(binary(*pair) if draw(st.booleans()) else binary(*reversed(pair)))
    outputs = [len(values) - 1, *draw(st.lists(st.integers(0, len(values) - 1), max_size=2))]
    return relay.Function([x, y], relay.Tuple([values[i] for i in outputs]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_match_the_interpreter_and_keep_their_inputs(program):
    inputs = {"x": rand(4, 4), "y": rand(4, 4)}
    kept = {name: value.copy() for name, value in inputs.items()}
    exe = build(program, "cpu")
    expected = evaluate(program, kept)
    for _ in range(2):
        for got, want in zip(exe.run(inputs), expected):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        for name in inputs:
            np.testing.assert_array_equal(inputs[name], kept[name])
