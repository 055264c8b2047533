"""One small program that uses the ONNX conformance ops (all but `arange`, whose output length only the
run knows), and inputs for it."""

from __future__ import annotations

import numpy as np

import ir
from ir import relay


def conformance_program() -> tuple[ir.IRModule, dict[str, np.ndarray]]:
    x, a = relay.var("x", shape=(2, 3, 4)), relay.var("a", shape=(3,))
    i = relay.var("i", shape=(2, 3, 4), dtype="int64")
    g, b = relay.var("g", shape=(3,)), relay.var("b", shape=(3,))
    y = relay.nn.selu(relay.nn.celu(relay.nn.prelu(relay.nn.elu(x), a))) + relay.nn.shrink(x)
    y = relay.nn.instance_norm(relay.expand_dims(y, 3), g, b)
    gathered = relay.gather(relay.squeeze(y, axis=[3]), i, axis=2)
    top = relay.topk(relay.cumsum(relay.trilu(relay.tile(gathered, (1, 1, 2)), 1), axis=2, exclusive=True), 3)
    scattered = relay.scatter_nd(top[0], relay.const(np.array([[0], [1]], "int64")),  # row (0, 1) becomes ones
                                 relay.const(np.ones((1, 3), "float32")))
    hot = relay.one_hot(relay.argmax(scattered, axis=2, select_last_index=True), relay.const(1.0), relay.const(0.0), 3)
    out = relay.Tuple([relay.reverse(hot, 1), relay.floor_mod(top[0], relay.const(0.7)), top[1]])
    mod = ir.infer_type(ir.IRModule({"main": relay.Function([x, a, i, g, b], out)}))
    rng = np.random.default_rng(3)
    inputs = {"x": rng.standard_normal((2, 3, 4)).astype("float32"), "a": rng.standard_normal(3).astype("float32"),
              "i": rng.integers(-4, 4, (2, 3, 4)), "g": rng.standard_normal(3).astype("float32"),
              "b": rng.standard_normal(3).astype("float32")}
    return mod, inputs
