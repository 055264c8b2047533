"""The attention ops' `nan_rows="zero"` (torch SDPA's export guard `where(isnan(p), 0, p)` on the
probabilities) and masks typed from run-time shapes: the type relation, the reference kernel
against the guarded formula bit for bit, and the export in ONNX Runtime (its `Attention` kernel,
opset 23, and the spelled-out form of older opsets)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import ir
import strategies
from ir import relay
from ir.errors import TypeInferenceError
from ir.frontend import DEFAULT_OPSET, to_onnx
from ir.types import Any, SizeVar
from tests.ir.attention_cases import DV, B, D, H, S, T, attention_inputs

SCALE = 0.3


def _guarded_formula(values: dict[str, np.ndarray], scale: float) -> np.ndarray:
    """The SDPA export's spelling, in the inputs' dtype and the reference kernels' order."""
    q, k, v, mask = (values[n] for n in ("q", "k", "v", "mask"))
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * np.float32(scale) + mask
    with np.errstate(invalid="ignore"):  # a row hidden by -inf: -inf - -inf
        e = np.exp(scores - scores.max(-1, keepdims=True))
        probs = e / e.sum(-1, keepdims=True)
    return np.matmul(np.where(np.isnan(probs), np.float32(0), probs), v)


def _program(values: dict[str, np.ndarray], nan_rows: str) -> ir.IRModule:
    args = [relay.var(n, shape=v.shape) for n, v in values.items()]
    body = relay.nn.masked_attention(*args, scale=SCALE, nan_rows=nan_rows)
    return ir.IRModule.from_expr(relay.Function(args, body))


def _hidden_rows(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Row 1 of batch 0 hidden by -inf, row 2 of batch 1 by float32's lowest value (the eager
    exports' fill: uniform, not hidden, in the op), row 3 of batch 1 partly by each."""
    mask = values["mask"]
    mask[0, 0, 1, :] = -np.inf
    mask[1, 0, 2, :] = np.finfo(np.float32).min
    mask[1, 0, 3, :3] = -np.inf
    mask[1, 0, 3, 3:] = np.finfo(np.float32).min
    return values


def test_a_mask_typed_from_run_time_shapes_fits_the_scores_unless_it_could_grow_them():
    batch, seq = SizeVar("batch"), SizeVar("seq")
    q, k = relay.var("q", shape=(batch, H, seq, D)), relay.var("k", shape=(batch, H, seq, D))
    v = relay.var("v", shape=(batch, H, seq, DV))
    unknown = relay.var("m", shape=(Any, Any, Any, Any))
    typed = ir.infer_type(relay.nn.masked_attention(q, k, v, unknown, nan_rows="zero"))
    assert typed.checked_type == ir.TensorType((batch, H, seq, DV), "float32")
    one_row = relay.var("q", shape=(batch, H, 1, D))
    with pytest.raises(TypeInferenceError, match="without growing"):  # a mask of any rows could grow 1 row
        ir.infer_type(relay.nn.masked_attention(one_row, k, v, unknown))
    with pytest.raises(TypeInferenceError, match="without growing"):
        ir.infer_type(relay.nn.masked_attention(q, k, v, relay.var("m", shape=(batch, H + 1, seq, seq))))


def test_zero_rows_are_the_guarded_formula_bit_for_bit():
    values = _hidden_rows(attention_inputs((B, 1, S, T)))
    got = np.asarray(strategies.evaluate(_program(values, "zero"), values))
    want = _guarded_formula(values, SCALE)
    np.testing.assert_array_equal(got, want)
    assert not np.any(got[0, :, 1]) and np.all(np.isfinite(got))
    keep = np.asarray(strategies.evaluate(_program(values, "keep"), values))
    assert np.isnan(keep[0, :, 1]).all() and np.array_equal(np.delete(keep, 1, axis=2)[0], np.delete(got, 1, axis=2)[0])


@pytest.mark.parametrize("opset", [DEFAULT_OPSET, 23])
@pytest.mark.parametrize("mask_shape", [(B, 1, S, T), (1, 1, S, T), (B, 1, 1, T)])
def test_zero_rows_export_runs_in_onnx_runtime(opset, mask_shape):
    values = attention_inputs(mask_shape, seed=3)
    if mask_shape[2] == S:
        values = _hidden_rows(attention_inputs((B, 1, S, T), seed=3))
        values["mask"] = values["mask"][: mask_shape[0]]
    else:  # every row of batch 0 hidden
        values["mask"][0] = -np.inf
    model = to_onnx(_program(values, "zero"), opset=opset)
    ops = [n.op_type for n in model.graph.node]
    assert ("Attention" in ops) == (opset >= 23) and "IsNaN" in ops
    if opset >= 23:  # the guard reads the kernel's result (see tests/ir/frontend/test_attention_kernel_rows.py)
        results = {n.output[0] for n in model.graph.node if n.op_type == "Attention"}
        assert all(n.input[0] in results for n in model.graph.node if n.op_type == "IsNaN")
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, values)[0]
    want = _guarded_formula(values, SCALE)
    assert np.array_equal(got == 0, want == 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
