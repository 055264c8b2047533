"""The attention ops: type relation, reference kernel against loops, ONNX export run in ONNX Runtime."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest

import ir
from ir import relay
from ir.errors import TypeInferenceError
from ir.frontend import DEFAULT_OPSET, to_onnx
from strategies.kernels.reference import run_reference

B, H, S, T, D, DV = 2, 3, 5, 7, 4, 6


def _inputs(mask_shape=None, seed=0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {"q": (B, H, S, D), "k": (B, H, T, D), "v": (B, H, T, DV)}
    if mask_shape is not None:
        shapes["mask"] = mask_shape
    return {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}


def _program(values: dict[str, np.ndarray], scale: float) -> ir.IRModule:
    args = [relay.var(n, shape=v.shape) for n, v in values.items()]
    op = relay.nn.masked_attention if "mask" in values else relay.nn.attention
    return ir.IRModule.from_expr(relay.Function(args, op(*args, scale=scale)))


def _loops(values: dict[str, np.ndarray], scale: float) -> np.ndarray:
    """Attention written element by element, in float64."""
    q, k, v = (values[n].astype(np.float64) for n in "qkv")
    mask = np.broadcast_to(values["mask"], (B, H, S, T)) if "mask" in values else np.zeros((B, H, S, T))
    out = np.zeros((B, H, S, DV))
    for b in range(B):
        for h in range(H):
            for i in range(S):
                scores = [sum(q[b, h, i, d] * k[b, h, j, d] for d in range(D)) * scale + mask[b, h, i, j]
                          for j in range(T)]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                for e in range(DV):
                    out[b, h, i, e] = sum(w / total * v[b, h, j, e] for j, w in enumerate(weights))
    return out


@pytest.mark.parametrize("mask_shape", [None, (B, 1, 1, T), (S, T)])
def test_reference_kernel_matches_the_loops(mask_shape):
    values = _inputs(mask_shape)
    op = "nn.masked_attention" if mask_shape else "nn.attention"
    got = run_reference(op, ir.Attrs({"scale": 0.3}), list(values.values()))
    np.testing.assert_allclose(got, _loops(values, 0.3), rtol=1e-5, atol=1e-6)


def test_type_relation_gives_the_context_shape_and_refuses_bad_operands():
    q, k, v = relay.var("q", shape=(B, H, S, D)), relay.var("k", shape=(B, H, T, D)), relay.var("v", shape=(B, H, T, DV))
    assert ir.infer_type(relay.nn.attention(q, k, v)).checked_type == ir.TensorType((B, H, S, DV), "float32")
    bad = [
        (relay.nn.attention, (q, relay.var("k", shape=(B, H, T, D + 1)), v), "head size"),
        (relay.nn.attention, (q, k, relay.var("v", shape=(B, H, T + 1, DV))), "one length"),
        (relay.nn.attention, (q, relay.var("k", shape=(B, H + 1, T, D)), v), "leading axes"),
        (relay.nn.attention, (relay.var("q", shape=(S, D)), relay.var("k", shape=(T, D)), relay.var("v", shape=(T, D))),
         "rank >= 3"),
        (relay.nn.masked_attention, (q, k, v, relay.var("m", shape=(2, B, H, S, T))), "without growing"),
        (relay.nn.masked_attention, (q, k, v, relay.var("m", shape=(S, T + 1))), "mask"),
    ]
    for op, args, message in bad:
        with pytest.raises(TypeInferenceError, match=message):
            ir.infer_type(op(*args))


@pytest.mark.parametrize("mask_shape", [None, (B, 1, 1, T), (1, 1, S, T), (S, T), (T,), (H, 1, T)])
@pytest.mark.parametrize("opset", [DEFAULT_OPSET, 23])
def test_export_runs_in_onnx_runtime(mask_shape, opset):
    values = _inputs(mask_shape)
    model = to_onnx(_program(values, 0.3), opset=opset)
    ops = [n.op_type for n in model.graph.node]
    assert ("Attention" in ops) == (opset >= 23)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, values)[0], _loops(values, 0.3), rtol=1e-4, atol=1e-5)


def test_export_rises_to_the_first_opset_with_attention_unless_told():
    values = _inputs((B, 1, 1, T))
    assert to_onnx(_program(values, 0.5)).opset_import[0].version == 23
    assert to_onnx(_program(values, 0.5), opset=17).opset_import[0].version == 17
    plain = ir.IRModule.from_expr(relay.nn.relu(relay.var("x", shape=(2, 3))))
    assert to_onnx(plain).opset_import[0].version == DEFAULT_OPSET
