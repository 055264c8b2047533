"""The attention ops: type relation, ONNX export run in ONNX Runtime (against `attention_loops`), and\nONNX `Attention` import."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

import ir
import strategies
from ir import relay
from ir.errors import TypeInferenceError
from ir.frontend import DEFAULT_OPSET, FrontendError, from_onnx, to_onnx
from tests.ir.attention_cases import DV, B, D, H, S, T, attention_inputs, attention_loops


def _program(values: dict[str, np.ndarray], scale: float) -> ir.IRModule:
    args = [relay.var(n, shape=v.shape) for n, v in values.items()]
    op = relay.nn.masked_attention if "mask" in values else relay.nn.attention
    return ir.IRModule.from_expr(relay.Function(args, op(*args, scale=scale)))


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
    values = attention_inputs(mask_shape)
    model = to_onnx(_program(values, 0.3), opset=opset)
    ops = [n.op_type for n in model.graph.node]
    assert ("Attention" in ops) == (opset >= 23)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, values)[0], attention_loops(values, 0.3), rtol=1e-4, atol=1e-5)


def test_export_rises_to_the_first_opset_with_attention_unless_told():
    values = attention_inputs((B, 1, 1, T))
    assert to_onnx(_program(values, 0.5)).opset_import[0].version == 23
    assert to_onnx(_program(values, 0.5), opset=17).opset_import[0].version == 17
    plain = ir.IRModule.from_expr(relay.nn.relu(relay.var("x", shape=(2, 3))))
    assert to_onnx(plain).opset_import[0].version == DEFAULT_OPSET


def _attention_model(inputs: dict[str, np.ndarray], **attrs) -> onnx.ModelProto:
    node = helper.make_node("Attention", list(inputs), ["y"], **attrs)
    graph = helper.make_graph([node], "attention",
                              [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                               for n, v in inputs.items()],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


@pytest.mark.parametrize("mask, attrs", [
    (None, {}), ("float", {"scale": 0.7}), ("bool", {}), (None, {"is_causal": 1}), ("float", {"is_causal": 1}),
])
def test_onnx_attention_imports_and_matches_onnx_runtime(mask, attrs):
    values = attention_inputs()
    if mask == "float":
        values["mask"] = np.random.default_rng(1).standard_normal((B, 1, S, T)).astype(np.float32)
    elif mask == "bool":
        values["mask"] = np.random.default_rng(1).random((S, T)) < 0.7
        values["mask"][:, 0] = True  # every query attends to something
    model = _attention_model(values, **attrs)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, values)[0]
    mod, params = from_onnx(model)
    got = strategies.evaluate(mod, values, params=params)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("change, message", [
    (lambda m: m.graph.node[0].input.extend(["", "past_key"]), "past_key"),
    (lambda m: m.graph.node[0].attribute.append(helper.make_attribute("softcap", 2.0)), "softcap"),
    (lambda m: m.graph.input[0].type.tensor_type.shape.dim.pop(), "4-D"),
])
def test_onnx_attention_forms_not_taken_are_refused_by_name(change, message):
    values = attention_inputs()
    model = _attention_model(values)
    change(model)
    if message == "past_key":
        model.graph.input.append(helper.make_tensor_value_info("past_key", onnx.TensorProto.FLOAT, [B, H, 1, D]))
    with pytest.raises(FrontendError, match=message):
        from_onnx(model)


@pytest.mark.parametrize("mask_shape", [None, (1, T), (H, S, T)])
def test_three_dimensional_attention_exports_as_one_batch_of_heads(mask_shape):
    values = {k: v[0] for k, v in attention_inputs().items()}  # (heads, sequence, head size)
    if mask_shape is not None:
        values["mask"] = np.random.default_rng(2).standard_normal(mask_shape).astype(np.float32)
    model = to_onnx(_program(values, 0.4))
    assert [n.op_type for n in model.graph.node if n.op_type == "Attention"] == ["Attention"]
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, values)[0]
    want = attention_loops({k: v[None] for k, v in values.items()}, 0.4)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", [DEFAULT_OPSET, 23])
def test_a_fully_masked_row_stays_nan_in_onnx_runtime(opset):
    values = attention_inputs((B, 1, S, T))
    values["mask"][0, 0, 1, :] = -np.inf   # softmax of nothing: 0 / 0
    values["mask"][1, 0, 2, 3] = np.nan
    model = to_onnx(_program(values, 0.3), opset=opset)
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, values)[0]
    want = attention_loops(values, 0.3)
    assert np.isnan(want[0, :, 1]).all() and np.isnan(want[1, :, 2]).all()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)  # NaN where the loops give NaN


@pytest.mark.parametrize("hidden", [np.finfo(np.float32).min, -np.inf])
def test_a_mask_chosen_between_constants_is_raised_on_its_constants(hidden):
    """The exports' `where(keep, 0, lowest)` mask: its constants are raised to the kernel's floor, one
    `Where` in place of the mask's and its guard; a -inf fill keeps the guard that puts a hidden row's
    NaN back. Either way a row hidden throughout is what the op gives."""
    values = attention_inputs()
    keep = np.random.default_rng(3).random((B, 1, S, T)) < 0.6
    keep[0, 0, 1, :] = False
    keep[:, :, :, 0] |= np.arange(S) != 1
    args = [relay.var(n, shape=v.shape) for n, v in values.items()]
    flag = relay.var("keep", shape=keep.shape, dtype="bool")
    mask = relay.where(flag, relay.const(0.0), relay.const(np.float32(hidden)))
    mod = ir.IRModule.from_expr(relay.Function([*args, flag], relay.nn.masked_attention(*args, mask, scale=0.3)))
    model = to_onnx(mod)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Where") == (1 if np.isfinite(hidden) else 3) and ("ReduceMax" in ops) == (not np.isfinite(hidden))
    feeds = {**values, "keep": keep}
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    want = np.asarray(strategies.evaluate(mod, feeds))
    assert np.isnan(want[0, :, 1]).all() == (not np.isfinite(hidden))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
