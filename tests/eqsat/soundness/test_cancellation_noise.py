"""Verification's noise scale where terms that share their inputs cancel: tanh GELU's tail,
`x * 0.5 * (1 + tanh(z))` as tanh(z) nears -1, which ONNX Runtime's FastGelu computes with its
own tanh. Moving the inputs scales both terms alike and hides the rounding of their difference;
the scalar constants of the arithmetic move too (`inputs.ARITHMETIC_OPS`), so the tail verifies,
while a GELU of another argument still fails."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from eqsat.errors import VerificationError
from eqsat.soundness.verify import verify
from ir import relay

WEIGHT = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32) * np.float32(0.25)
"""a dense layer's weight whose outputs reach GELU's tail (x < -3.5) on typical random inputs, each
the sum of many products: moving the inputs and weights moves it by far less than `RTOL`."""


def _program(body) -> ir.IRModule:
    x = relay.var("x", shape=(4, 256))
    mod = ir.IRModule.from_expr(relay.Function([x], body(relay.nn.dense(x, relay.const(WEIGHT)))))
    ir.infer_type(mod)
    return mod


def _spelled(x):
    """torch's `gelu(x, approximate="tanh")` as its TorchScript export writes it."""
    def c(value: float) -> ir.Expr:
        return relay.const(np.float32(value))
    cubed = relay.multiply(c(0.044715), relay.power(x, c(3.0)))
    inner = relay.multiply(c(0.7978846), relay.add(x, cubed))
    return relay.multiply(x, relay.multiply(c(0.5), relay.add(c(1.0), relay.tanh(inner))))


def test_fast_gelu_tail_verifies_in_onnx_runtime():
    result = verify(_program(_spelled), {}, _program(lambda x: relay.nn.gelu(x, approximate="tanh")), {}, where="ort")
    assert result.status == "verified", result.summary()


@pytest.mark.parametrize("factor", [1.01, 0.99])
def test_a_gelu_of_another_argument_still_fails(factor):
    other = _program(lambda x: relay.nn.gelu(relay.multiply(x, relay.const(np.float32(factor))), approximate="tanh"))
    with pytest.raises(VerificationError):
        verify(_program(_spelled), {}, other, {}, where="ort")
