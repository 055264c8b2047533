"""`evaluate`: graphs with tuples, inner functions, Let and If; freeing; deep graphs; input errors."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

import ir
from ir import relay
from strategies.errors import InputError
from strategies.interpreter import Evaluator, bind_inputs, entry_function, evaluate
from strategies.kernels.reference import run_reference

RNG = np.random.default_rng(1)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def test_module_function_and_bare_expression_agree():
    x, w = relay.var("x", shape=(1, 3, 6, 6)), relay.var("w", shape=(4, 3, 3, 3))
    body = relay.nn.relu(relay.nn.conv2d(x, w, padding=1))
    xs, ws = rand(1, 3, 6, 6), rand(4, 3, 3, 3)
    expected = np.maximum(run_reference("nn.conv2d", ir.get_op("nn.conv2d")(x, w, padding=1).attrs, [xs, ws]), 0)
    for program in (body, relay.Function([x, w], body), ir.IRModule.from_expr(body)):
        np.testing.assert_allclose(evaluate(program, {"x": xs, "w": ws}), expected, rtol=1e-6)
    np.testing.assert_allclose(evaluate(body, {"x": xs}, params={"w": ws}), expected, rtol=1e-6)


def test_tuple_outputs_and_tuple_get_item():
    x = relay.var("x", shape=(4, 2))
    parts = relay.split(x, 2)
    xs = np.arange(8, dtype="float32").reshape(4, 2) - 4
    out = evaluate(relay.Tuple([parts[1], relay.nn.relu(parts[0])]), {"x": xs})
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_array_equal(out[0], [[0, 1], [2, 3]])
    np.testing.assert_array_equal(out[1], [[0, 0], [0, 0]])


def test_partitioned_composite_function_is_called():
    a, b = relay.var("a", shape=(2, 3)), relay.var("b", shape=(3,))
    body = relay.nn.relu(relay.nn.bias_add(a, b, axis=1))
    composite = relay.Function([a, b], body).with_attr("Composite", "bias_relu")
    x, bias = relay.var("x", shape=(2, 3)), relay.var("bias", shape=(3,))
    call = relay.Call(composite, [x, bias])
    xs, bs = rand(2, 3), rand(3)
    np.testing.assert_allclose(evaluate(call * call, {"x": xs, "bias": bs}), np.maximum(xs + bs, 0) ** 2, rtol=1e-6)


def test_let_and_if_take_only_the_selected_branch():
    x = relay.var("x", shape=(3,))
    v = relay.var("v")
    let = relay.Let(v, relay.exp(x), relay.add(v, v))
    np.testing.assert_allclose(evaluate(let, {"x": np.zeros(3, "float32")}), [2, 2, 2])
    flag = relay.var("flag", shape=(), dtype="bool")
    # the false branch would fail (shapes do not fit), so it must not run when flag is true
    bad = relay.add(relay.reshape(x, newshape=(3, 1)), relay.var("y", shape=(2,)))
    program = relay.If(flag, relay.negative(x), relay.sum(bad, axis=0))
    out = evaluate(program, {"x": np.ones(3, "float32"), "flag": np.array(True), "y": np.zeros(2, "float32")})
    np.testing.assert_array_equal(out, [-1, -1, -1])


def test_if_branch_reuses_a_value_computed_before_it():
    x = relay.var("x", shape=(2,))
    shared = relay.exp(x)
    flag = relay.var("flag", shape=(), dtype="bool")
    program = relay.add(shared, relay.If(flag, relay.negative(shared), shared))
    calls = []
    def run_op(call, args):
        calls.append(call.op.name)
        return run_reference(call.op.name, call.attrs, args)

    evaluator = Evaluator(run_op)
    func = entry_function(program)
    bound = bind_inputs(func, {"x": np.zeros(2, "float32"), "flag": np.array(True)})
    np.testing.assert_array_equal(evaluator.run(func, bound), [0, 0])
    assert calls.count("exp") == 1


def test_closure_called_twice_computes_its_body_per_call():
    p = relay.var("p", shape=(2,))
    double = relay.Function([p], relay.multiply(p, relay.const(2.0)))
    x = relay.var("x", shape=(2,))
    out = evaluate(relay.Call(double, [relay.Call(double, [x])]), {"x": np.array([1, 2], "float32")})
    np.testing.assert_array_equal(out, [4, 8])


def test_deep_graph_runs_without_recursion_and_frees_intermediates():
    x = relay.var("x", shape=(4,))
    node = x
    for _ in range(3000):
        node = relay.add(node, relay.const(1.0))
    alive_counts = []
    produced: list[weakref.ref] = []

    def run_op(call, args):
        out = run_reference(call.op.name, call.attrs, args)
        produced.append(weakref.ref(out))
        alive_counts.append(sum(r() is not None for r in produced[-50:]))
        return out

    func = entry_function(node)
    bound = bind_inputs(func, {"x": np.zeros(4, "float32")})
    np.testing.assert_array_equal(Evaluator(run_op).run(func, bound), [3000] * 4)
    assert max(alive_counts) <= 3  # the value being built, its operand, and nothing older


@pytest.mark.parametrize("inputs, message", [
    ({}, "missing input.*'x'"),
    ({"x": np.zeros((2, 3), "float32"), "z": np.zeros(1)}, r"unexpected input.*'z'"),
    ({"x": np.zeros((2, 4), "float32")}, r"input 'x': expected Tensor\[\(2, 3\), float32\], got Tensor\[\(2, 4\)"),
    ({"x": np.zeros((2, 3), "float64")}, r"input 'x': expected .*float32\], got .*float64"),
    ({"x": np.zeros((3,), "float32")}, r"input 'x': expected .*got Tensor\[\(3,\)"),
])
def test_bad_inputs_are_named(inputs, message):
    x = relay.var("x", shape=(2, 3))
    with pytest.raises(InputError, match=message):
        evaluate(relay.nn.relu(x), inputs)


def test_symbolic_dims_bind_consistently():
    n = ir.SizeVar("n")
    a, b = relay.var("a", shape=(n, 3)), relay.var("b", shape=(n, 3))
    out = evaluate(relay.add(a, b), {"a": np.ones((5, 3), "float32"), "b": np.ones((5, 3), "float32")})
    assert out.shape == (5, 3)
    with pytest.raises(InputError, match="dimension n is 4, but input 'a' gave it 5"):
        evaluate(relay.add(a, b), {"a": np.ones((5, 3), "float32"), "b": np.ones((4, 3), "float32")})
    any_dim = relay.var("c", shape=(ir.Any, 2))
    assert evaluate(relay.nn.relu(any_dim), {"c": np.ones((7, 2), "float32")}).shape == (7, 2)


def test_input_given_twice_is_an_error():
    x = relay.var("x", shape=(2,))
    with pytest.raises(InputError, match="both as inputs and as params"):
        evaluate(relay.nn.relu(x), {"x": np.zeros(2, "float32")}, params={"x": np.zeros(2, "float32")})
