"""Grouped- and multi-query attention: the attention ops take K and V with fewer heads than Q (each
KV head serving a group of query heads in turn, `repeat_kv`'s order); the reference kernel equals
attention on the copied heads, and the export runs in ONNX Runtime as `Attention` with fewer KV
heads (opset 23, float32) or spelled out with the heads gathered (older opsets, other dtypes)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import ir
import strategies
from ir import relay
from ir.errors import TypeInferenceError
from ir.frontend import DEFAULT_OPSET, to_onnx

B, HQ, HKV, S, T, D = 2, 6, 2, 5, 7, 4
SCALE = 0.35


def _inputs(kv_heads: int = HKV, dtype: str = "float32", masked: bool = True, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = {"q": rng.standard_normal((B, HQ, S, D)), "k": rng.standard_normal((B, kv_heads, T, D)),
              "v": rng.standard_normal((B, kv_heads, T, D))}
    if masked:
        values["mask"] = np.where(rng.random((B, 1, S, T)) < 0.3, -np.inf, 0.0)
        values["mask"][0, 0, 1] = -np.inf  # a row hidden entirely: 0 with nan_rows="zero"
    return {n: v.astype(dtype) for n, v in values.items()}


def _program(values: dict[str, np.ndarray], **attrs) -> ir.IRModule:
    args = [relay.var(n, shape=v.shape, dtype=str(v.dtype)) for n, v in values.items()]
    op = relay.nn.masked_attention if "mask" in values else relay.nn.attention
    return ir.IRModule.from_expr(relay.Function(args, op(*args, scale=SCALE, **attrs)))


def _copied(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    groups = values["q"].shape[-3] // values["k"].shape[-3]
    return {n: np.repeat(v, groups, axis=-3) if n in "kv" else v for n, v in values.items()}


def test_type_relation_takes_fewer_kv_heads_that_divide_the_query_heads():
    q, k, v = (relay.var(n, shape=s) for n, s in (("q", (B, HQ, S, D)), ("k", (B, HKV, T, D)), ("v", (B, HKV, T, 3))))
    assert ir.infer_type(relay.nn.attention(q, k, v)).checked_type == ir.TensorType((B, HQ, S, 3), "float32")
    for kv_heads in (4, 12):
        bad = relay.var("k", shape=(B, kv_heads, T, D))
        with pytest.raises(TypeInferenceError, match="fewer heads"):
            ir.infer_type(relay.nn.attention(q, bad, relay.var("v", shape=(B, kv_heads, T, D))))
    with pytest.raises(TypeInferenceError, match="leading axes"):  # K and V of different head counts
        ir.infer_type(relay.nn.attention(q, k, relay.var("v", shape=(B, 3, T, D))))


@pytest.mark.parametrize("nan_rows", ["keep", "zero"])
def test_reference_kernel_is_attention_on_the_copied_heads_bit_for_bit(nan_rows):
    values = _inputs()
    with np.errstate(invalid="ignore"):
        got = np.asarray(strategies.evaluate(_program(values, nan_rows=nan_rows), values))
        want = np.asarray(strategies.evaluate(_program(_copied(values), nan_rows=nan_rows), _copied(values)))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("opset, dtype", [(23, "float32"), (DEFAULT_OPSET, "float32"), (23, "float64")])
@pytest.mark.parametrize("kv_heads", [1, HKV])
@pytest.mark.parametrize("masked", [False, True])
def test_export_runs_in_onnx_runtime(opset, dtype, kv_heads, masked):
    values = _inputs(kv_heads, dtype, masked)
    model = to_onnx(_program(values, nan_rows="zero"), opset=opset)
    ops = [n.op_type for n in model.graph.node]
    fused = opset >= 23 and dtype == "float32"
    inputs = {i.name for i in model.graph.input}
    copies = [n for n in model.graph.node if n.op_type == "Gather" and n.input[0] in inputs]  # K's, V's heads
    assert ("Attention" in ops) == fused and bool(copies) == (not fused)
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, values)[0]
    with np.errstate(invalid="ignore"):
        want = np.asarray(strategies.evaluate(_program(_copied(values), nan_rows="zero"), _copied(values)))
    assert np.array_equal(got == 0, want == 0) if masked else True
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_three_dimensional_call_takes_fewer_heads():
    values = {n: v[0] for n, v in _inputs(masked=False).items()}  # (heads, sequence, head size)
    model = to_onnx(_program(values))
    assert "Attention" in [n.op_type for n in model.graph.node]
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, values)[0]
    want = np.asarray(strategies.evaluate(_program(_copied(values)), _copied(values)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
