"""`nn.rotary_embedding`: its type relation, its reference kernel against the spelled-out formula,
and its three ONNX forms (ONNX Runtime's `RotaryEmbedding`, ONNX's opset-23 `RotaryEmbedding` and
the decomposition below opset 23) against the kernel in ONNX Runtime, and ONNX's op imported:
half-rotation and interleaved, full and partial rotary dimension, one table for the batch or one
per row, static and symbolic sizes."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import helper

import ir
import strategies
from ir import relay
from ir.errors import TypeInferenceError
from ir.frontend import from_onnx, to_onnx
from ir.op.registry import make_call
from ir.types import SizeVar
from tests.ir.frontend.ort_helpers import assert_outputs_close, run_ort

F = onnx.TensorProto.FLOAT
CASES = [  # batch, table batch, heads, sequence, head size, rotary dimension
    (2, 1, 3, 5, 8, 8), (2, 2, 3, 5, 8, 4), (1, 1, 2, 3, 6, 6), (3, 1, 1, 1, 16, 10)]


FORMS = {"contrib": lambda mod: to_onnx(mod, {}, contrib=True), "onnx23": lambda mod: to_onnx(mod, {}),
         "decomposed": lambda mod: to_onnx(mod, {}, opset=18)}
FORM_DOMAINS = {"contrib": ["com.microsoft"], "onnx23": [""], "decomposed": []}


def _module(shape: tuple, table: tuple, interleaved: bool, dtype: str = "float32") -> ir.IRModule:
    x, c, s = (relay.var(n, shape=t, dtype=dtype) for n, t in (("x", shape), ("c", table), ("s", table)))
    return ir.IRModule.from_expr(relay.Function([x, c, s], make_call("nn.rotary_embedding", [x, c, s],
                                                                     {"interleaved": interleaved})))


def _feed(shape: tuple, table: tuple, seed: int = 0, dtype: str = "float32") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(shape).astype(dtype), "c": rng.standard_normal(table).astype(dtype),
            "s": rng.standard_normal(table).astype(dtype)}


def _formula(x: np.ndarray, c: np.ndarray, s: np.ndarray, interleaved: bool) -> np.ndarray:
    """`x * cos + rotate(x) * sin` over the rotary features, as PyTorch models write it."""
    r = 2 * c.shape[-1]
    rot, rest = x[..., :r], x[..., r:]
    if interleaved:
        cos, sin = np.repeat(c, 2, axis=-1)[:, None], np.repeat(s, 2, axis=-1)[:, None]
        rotated = np.stack([-rot[..., 1::2], rot[..., 0::2]], axis=-1).reshape(rot.shape)
    else:
        cos, sin = np.concatenate([c, c], -1)[:, None], np.concatenate([s, s], -1)[:, None]
        rotated = np.concatenate([-rot[..., r // 2:], rot[..., :r // 2]], axis=-1)
    return np.concatenate([rot * cos + rotated * sin, rest], axis=-1)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("interleaved", [False, True], ids=["half", "interleaved"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c)))
def test_kernel_and_both_onnx_forms_match_the_formula(case, interleaved, dtype):
    """In float16 ONNX Runtime's kernels compute in float32 and round once: within float16 rounding
    of the formula's products and sum."""
    batch, table_batch, heads, seq, head, r = case
    shape, table = (batch, heads, seq, head), (table_batch, seq, r // 2)
    mod, feed = _module(shape, table, interleaved, dtype), _feed(shape, table, dtype=dtype)
    want = _formula(feed["x"], feed["c"], feed["s"], interleaved)
    got = strategies.build(mod, "ort", {}).run(**feed)
    np.testing.assert_array_equal(got, want)
    for form, export in FORMS.items():
        model = export(mod)
        assert [n.domain or "" for n in model.graph.node if n.op_type == "RotaryEmbedding"] == FORM_DOMAINS[form]
        assert_outputs_close([want], run_ort(model, feed), rel=1e-6 if dtype == "float32" else 2e-3)


def test_symbolic_batch_and_sequence_number_the_table_rows_when_the_model_runs():
    b, n = SizeVar("B"), SizeVar("S")
    for table_batch, form in itertools.product((1, b), FORMS):
        model = FORMS[form](_module((b, 2, n, 8), (table_batch, n, 3), interleaved=False))
        for batch, seq in ((1, 1), (3, 4)):
            feed = _feed((batch, 2, seq, 8), (batch if table_batch == b else 1, seq, 3), seed=seq)
            want = _formula(feed["x"], feed["c"], feed["s"], False)
            assert_outputs_close([want], run_ort(model, feed), rel=1e-6)


@pytest.mark.parametrize("shape, table", [
    ((2, 3, 5, 8), (1, 5, 5)),     # rotary dimension 10 > head size 8
    ((2, 3, 5, 8), (3, 5, 4)),     # table batch neither 1 nor the data's
    ((2, 3, 5, 8), (1, 4, 4)),     # another sequence length
    ((2, 15, 8), (1, 5, 4)),       # data not (B, N, S, H)
])
def test_type_relation_refuses_mismatched_tables(shape, table):
    with pytest.raises(TypeInferenceError, match="rotary"):
        ir.infer_type(_module(shape, table, interleaved=False))


def test_integer_data_is_refused():
    x, c = relay.var("x", shape=(1, 1, 2, 4), dtype="int32"), relay.var("c", shape=(1, 2, 2), dtype="int32")
    with pytest.raises(TypeInferenceError, match="float"):
        ir.infer_type(ir.IRModule.from_expr(relay.Function([x, c], make_call("nn.rotary_embedding", [x, c, c]))))


@pytest.mark.parametrize("interleaved", [0, 1], ids=["half", "interleaved"])
@pytest.mark.parametrize("packed, with_ids, rotary", [(False, False, 0), (True, True, 4), (True, False, 8),
                                                      (False, True, 4)],
                         ids=["4d", "3d-ids-partial", "3d", "4d-ids-partial"])
def test_onnx_rotary_embedding_imports(packed, with_ids, rotary, interleaved):
    """ONNX's RotaryEmbedding (opset 23) imports as nn.rotary_embedding: 3-D input split into
    `num_heads`, caches read at `position_ids`, a partial rotary dimension; it runs as ONNX Runtime
    runs it, on the executor and re-exported with the contrib kernel."""
    batch, heads, seq, head = 2, 3, 5, 8
    half = (rotary or head) // 2
    shape = (batch, seq, heads * head) if packed else (batch, heads, seq, head)
    cache = (16, half) if with_ids else (batch, seq, half)
    inputs = [helper.make_tensor_value_info("x", F, shape), helper.make_tensor_value_info("c", F, cache),
              helper.make_tensor_value_info("s", F, cache)]
    if with_ids:
        inputs.append(helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, (batch, seq)))
    node = helper.make_node("RotaryEmbedding", [i.name for i in inputs], ["y"], interleaved=interleaved,
                            rotary_embedding_dim=rotary, num_heads=heads if packed or rotary else 0)
    graph = helper.make_graph([node], "rope", inputs, [helper.make_tensor_value_info("y", F, shape)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal(shape).astype("float32"), "c": rng.standard_normal(cache).astype("float32"),
            "s": rng.standard_normal(cache).astype("float32")}
    if with_ids:
        feed["ids"] = rng.integers(0, 16, (batch, seq)).astype("int64")
    mod, params = from_onnx(proto)
    want = run_ort(proto, feed)
    assert_outputs_close(want, [strategies.build(mod, "ort", params).run(**feed)], rel=1e-6)
    assert_outputs_close(want, run_ort(to_onnx(mod, params, contrib=True), feed), rel=1e-6)
