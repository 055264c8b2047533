"""Negative axes (counted from the end) export to a form ONNX Runtime accepts: `Transpose` takes only
non-negative `perm` entries, so those are normalized; every op with an axis runs the same in ONNX
Runtime as in the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay
from ir.frontend import to_onnx
from strategies.interpreter import evaluate
from tests.ir.frontend.ort_helpers import assert_outputs_close, flat_outputs, run_ort

SHAPE = (2, 3, 4)

PROGRAMS = {
    "transpose": lambda x: relay.transpose(x, (0, 1, -1)),
    "transpose-all-negative": lambda x: relay.transpose(x, (-1, -3, -2)),
    "concatenate": lambda x: relay.concatenate([x, x], axis=-1),
    "split": lambda x: relay.split(x, 2, axis=-1).astuple(),
    "squeeze": lambda x: relay.squeeze(relay.expand_dims(x, -1), axis=[-1]),
    "expand_dims": lambda x: relay.expand_dims(x, -2),
    "strided_slice": lambda x: relay.strided_slice(x, begin=[1], end=[3], axes=[-1]),
    "take": lambda x: relay.take(x, relay.const(np.array([0, 2], "int32")), axis=-1),
    "sum": lambda x: relay.sum(x, axis=[-1, -3]),
    "argmax": lambda x: relay.argmax(x, axis=[-2]),
    "softmax": lambda x: relay.nn.softmax(x, axis=-2),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_negative_axes_run_in_onnx_runtime(name):
    x = relay.var("x", shape=SHAPE)
    mod = ir.infer_type(ir.IRModule.from_expr(relay.Function([x], PROGRAMS[name](x))))
    model = to_onnx(mod)
    for node in model.graph.node:
        for attr in node.attribute:
            if node.op_type == "Transpose" and attr.name == "perm":
                assert sorted(attr.ints) == list(range(len(SHAPE)))
    inputs = {"x": np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)}
    assert_outputs_close(flat_outputs(evaluate(mod, inputs)), run_ort(model, inputs), rel=1e-6)
