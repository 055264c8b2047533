"""`ir.value_bounds`: intervals that hold every value an expression takes, None where it may be NaN;
checked against the values the numpy executor computes on extreme inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ir
from ir import relay
from ir.op.registry import make_call
from ir.value_bounds import ValueBounds
from strategies.interpreter import evaluate

RNG = np.random.default_rng(0)
TABLE = RNG.standard_normal((16, 8)).astype("float32")
WEIGHT = RNG.standard_normal((8, 8)).astype("float32")


def _embedded_norm() -> ir.Expr:
    """Token ids through an embedding table, a layer norm and a dense layer."""
    ids = relay.var("ids", shape=(2, 5), dtype="int64")
    hidden = relay.take(relay.const(TABLE), ids, axis=0)
    normed = relay.nn.layer_norm(hidden, relay.const(np.ones(8, "float32")), relay.const(np.zeros(8, "float32")))
    return relay.nn.dense(normed, relay.const(WEIGHT))


def _bound(expr: ir.Expr):
    mod = ir.IRModule.from_expr(relay.Function(ir.free_vars(expr), expr))
    ir.infer_type(mod)
    return ValueBounds().of(mod["main"].body), mod


def test_embeddings_norms_and_dense_layers_are_bounded_and_hold_their_values():
    bound, mod = _bound(_embedded_norm())
    assert bound is not None and all(math.isfinite(b) for b in bound)
    for seed in range(3):
        ids = np.random.default_rng(seed).integers(0, 16, (2, 5))
        values = np.asarray(evaluate(mod, {"ids": ids}))
        assert bound[0] <= values.min() and values.max() <= bound[1]


def test_a_float_input_is_unbounded_and_an_integer_one_finite():
    assert _bound(relay.nn.relu(relay.var("x", shape=(3,))))[0] is None
    assert math.isfinite(_bound(relay.cast(relay.var("i", shape=(3,), dtype="int64"), "float32"))[0][1])


@pytest.mark.parametrize("build", [
    lambda e: relay.add(relay.multiply(e, relay.const(np.float32(np.inf))), relay.const(np.float32(-np.inf))),
    lambda e: relay.multiply(relay.nn.relu(e), relay.const(np.float32(np.inf))),
    lambda e: relay.cos(relay.multiply(e, relay.const(np.float32(np.inf)))),
    lambda e: relay.nn.rms_norm(relay.multiply(e, relay.const(np.float32(np.inf))), relay.const(np.ones(8, "float32"))),
], ids=["inf-minus-inf", "zero-times-inf", "cos-of-inf", "norm-of-inf"])
def test_what_may_be_nan_has_no_bound(build):
    assert _bound(build(_embedded_norm()))[0] is None


def test_a_bound_past_float32_is_infinite():
    big = relay.multiply(_embedded_norm(), relay.const(np.float32(3e38)))
    assert _bound(big)[0][1] == math.inf


def test_rotary_attention_and_gates_hold_their_values():
    """Rotary tables of positions (cos and sin of angles from integers), attention over the rotated
    values, a SiLU gate: the bound of each holds what the executor computes."""
    hidden = relay.reshape(_embedded_norm(), newshape=[2, 5, 2, 4])
    heads = relay.transpose(hidden, axes=[0, 2, 1, 3])
    positions = relay.cast(relay.var("pos", shape=(1, 5, 1), dtype="int64"), "float32")
    angles = relay.multiply(positions, relay.const(np.float32([1.0, 0.1])))
    rotated = make_call("nn.rotary_embedding", [heads, relay.cos(angles), relay.sin(angles)], {"interleaved": False})
    attended = relay.nn.attention(rotated, rotated, heads, scale=0.5)
    out = relay.nn.silu(relay.subtract(attended, relay.const(np.float32(3))))
    bound, mod = _bound(out)
    assert bound is not None
    for seed in range(3):
        rng = np.random.default_rng(seed)
        values = np.asarray(evaluate(mod, {"ids": rng.integers(0, 16, (2, 5)), "pos": rng.integers(0, 64, (1, 5, 1))}))
        assert bound[0] <= values.min() and values.max() <= bound[1]
