"""`nn.feed_forward` exports as Gemm, Gelu, Gemm in column chunks sized to a core's cache, equal to one block."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import ir
from ir import relay
from ir.frontend import to_onnx
from ir.frontend.export_feed_forward import CHUNK_BYTES, MIN_CHUNK_UNITS, chunk_count
from strategies.interpreter import evaluate
from tests.ir.frontend.ort_helpers import assert_outputs_close, run_ort

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("rows, units, expected", [
    (4, 16, 1),                               # far below the budget: one chunk
    (CHUNK_BYTES // 4 // 2048, 2048, 1),      # exactly the budget
    (CHUNK_BYTES // 4 // 2048 + 1, 2048, 2),  # one row over it
    (128, 3072, 2),                           # BERT-base's 128 tokens: 1.5 MiB of hidden values, 2 x 1536
    (150, 7168, 7),                           # 6 chunks would do, but 7168 = 7 x 1024: the next divisor
    (196, 1536, 1),                           # ConvNeXt-T's third stage: 2 chunks of 768 units are too narrow
    (3136, 384, 1),                           # ConvNeXt-T's first stage: chunks of 32 units are too narrow
    (784, 768, 1),                            # 6 chunks of 128 units too
])
def test_chunk_count_is_the_fewest_even_chunks_within_the_budget(rows, units, expected):
    count = chunk_count(rows, units, 4)
    assert count == expected and (count == 1 or units // count >= MIN_CHUNK_UNITS)


def _block(rows: int | ir.SizeVar, k: int, units: int, weights_as_params: bool):
    x = relay.var("x", shape=(2, rows, k))
    shapes = {"w1": (units, k), "b1": (units,), "w2": (k, units), "b2": (k,)}
    weights = [relay.var(n, shape=s) for n, s in shapes.items()]
    mod = ir.IRModule.from_expr(relay.Function([x, *weights], relay.nn.feed_forward(x, *weights)))
    ir.infer_type(mod)
    values = {n: (RNG.standard_normal(s) * 0.2).astype("float32") for n, s in shapes.items()}
    params = values if weights_as_params else {}
    return mod, params, values


def _export_and_check(mod, params, values, rows: int, contrib: bool = False) -> Counter:
    model = to_onnx(mod, params, contrib=contrib)
    inputs = {"x": RNG.standard_normal((2, rows, mod["main"].params[0].checked_type.shape[-1])).astype("float32"),
              **{k: v for k, v in values.items() if k not in params}}
    expected = evaluate(mod, {**inputs, **params})
    assert_outputs_close([expected], run_ort(model, inputs), rel=1e-4)
    assert {i.name for i in model.graph.initializer} <= {name for node in model.graph.node for name in node.input}
    return Counter(n.op_type for n in model.graph.node)


def test_a_block_over_the_budget_is_chunked_and_equal():
    rows, units = 64, 4096  # 2 x 64 rows x 4096 x 4 bytes = 2 MiB of hidden values: 4 chunks
    ops = _export_and_check(*_block(rows, 32, units, weights_as_params=True), rows)
    assert ops["Gemm"] == 2 * 4 and ops["Concat"] == ops["Split"] == 0


def test_the_whole_weights_are_not_written_next_to_their_chunks():
    mod, params, values = _block(64, 32, 4096, weights_as_params=True)
    model = to_onnx(mod, params)
    names = {i.name for i in model.graph.initializer}
    assert names.isdisjoint({"w1", "b1", "w2"}) and "b2" in names
    assert sum(np.prod(i.dims) for i in model.graph.initializer) < sum(v.size for v in values.values()) + 100


def test_weights_that_are_graph_inputs_keep_one_chunk():
    ops = _export_and_check(*_block(64, 32, 4096, weights_as_params=False), 64)
    assert ops["Gemm"] == 2


@pytest.mark.parametrize("contrib", [False, True])
def test_symbolic_rows_are_matmuls_over_the_tokens(contrib):
    """Rows known only when the model runs: one chunk of MatMuls on the 3-D data (no Shape, Slice,
    Concat or Reshape to flatten the rows for Gemm), the first bias and the GELU one `BiasGelu` in the
    contrib export, `Add` and the GELU in standard ONNX (its erf formula below opset 20); equal in ONNX
    Runtime at two lengths."""
    mod, params, values = _block(ir.SizeVar("seq"), 32, 4096, weights_as_params=True)
    for rows in (64, 3):
        ops = _export_and_check(mod, params, values, rows, contrib)
    assert ops["MatMul"] == 2 and not ops.keys() & {"Gemm", "Shape", "Slice", "Concat", "Reshape"}, ops
    assert (ops["BiasGelu"], ops["Add"]) == ((1, 1) if contrib else (0, 3)), ops


def test_symbolic_rows_with_weights_as_inputs_keep_one_gemm_chunk():
    mod, params, values = _block(ir.SizeVar("seq"), 32, 4096, weights_as_params=False)
    ops = _export_and_check(mod, params, values, 64)
    assert ops["Gemm"] == 2


@pytest.mark.parametrize("opset", [17, 20])
def test_the_gelu_is_one_node_for_onnx_runtime_at_any_opset(opset):
    """Below opset 20 (no ONNX Gelu) the contrib export uses ONNX Runtime's Gelu, the standard one its formula."""
    mod, params, values = _block(8, 32, 64, weights_as_params=True)
    inputs = {"x": RNG.standard_normal((2, 8, 32)).astype("float32")}
    expected = evaluate(mod, {**inputs, **params})
    for contrib in (True, False):
        model = to_onnx(mod, params, opset=opset, contrib=contrib)
        ops = Counter((n.domain, n.op_type) for n in model.graph.node)
        one_node = ("com.microsoft" if opset < 20 and contrib else "", "Gelu")
        assert (ops[one_node] == 1 and ops[("", "Erf")] == 0) if contrib or opset >= 20 else ops[("", "Erf")] == 1
        assert_outputs_close([expected], run_ort(model, inputs), rel=1e-4)
