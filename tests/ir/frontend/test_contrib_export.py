"""`to_onnx(contrib=True)`: fused forms as ONNX Runtime contrib ops, checked in ONNX Runtime against the
interpreter; calls the contrib ops cannot express keep the standard decomposition."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import ir
from ir import relay
from ir.frontend import to_onnx
from strategies.interpreter import evaluate
from tests.ir.frontend.ort_helpers import assert_outputs_close, flat_outputs, graph_inputs, run_ort


MS = "com.microsoft"


def v(name: str, *shape: int, dtype: str = "float32") -> ir.Var:
    return relay.var(name, shape=shape, dtype=dtype)


def node_types(model) -> Counter:
    return Counter((n.domain, n.op_type) for n in model.graph.node)


def export_and_check(body: ir.Expr) -> tuple:
    """Both exports of `body`, each run in ONNX Runtime and compared with the interpreter."""
    mod = ir.IRModule.from_expr(body)
    ir.infer_type(mod)
    inputs = graph_inputs(mod["main"], {})
    expected = flat_outputs(evaluate(mod, inputs))
    models = to_onnx(mod), to_onnx(mod, contrib=True)
    for model in models:
        assert_outputs_close(expected, run_ort(model, inputs), rel=1e-4)
    return models


CONV = dict(strides=(2, 1), padding=(1, 0, 1, 2), dilation=(1, 2), channels=6, kernel_size=(3, 3))
CONTRIB_CASES = [
    ("conv-relu", lambda: relay.nn.conv2d_bias_act(v("x", 1, 4, 9, 9), v("w", 6, 4, 3, 3), v("b", 6),
                                                   activation="relu", **CONV), "FusedConv"),
    ("conv-leaky-nhwc-hwio", lambda: relay.nn.conv2d_bias_act(
        v("x", 1, 9, 9, 4), v("w", 3, 3, 2, 6), v("b", 6), activation="leaky_relu", alpha=0.2, groups=2,
        data_layout="NHWC", kernel_layout="HWIO", padding=(1, 1)), "FusedConv"),
    ("dense-sigmoid", lambda: relay.nn.dense_bias_act(v("x", 3, 5), v("w", 4, 5), v("b", 4), activation="sigmoid"),
     "FusedGemm"),
    ("dense-leaky", lambda: relay.nn.dense_bias_act(v("x", 3, 5), v("w", 4, 5), v("b", 4), activation="leaky_relu",
                                                    alpha=0.3), "FusedGemm"),
    ("dense-3d-relu", lambda: relay.nn.dense_bias_act(v("x", 2, 3, 5), v("w", 4, 5), v("b", 4), activation="relu"),
     "FusedGemm"),
    ("matmul-batched-transposed", lambda: relay.nn.fused_matmul(v("a", 2, 4, 3), v("b", 2, 5, 4), transpose_a=True,
                                                                 transpose_b=True, alpha=0.5), "FusedMatMul"),
    ("matmul-broadcast", lambda: relay.nn.fused_matmul(v("a", 2, 3, 4), v("b", 4, 5), alpha=2.0), "FusedMatMul"),
    ("bias-gelu", lambda: relay.nn.bias_gelu(v("x", 2, 3, 8), v("b", 8)), "BiasGelu"),
]


@pytest.mark.parametrize("build, op_type", [c[1:] for c in CONTRIB_CASES], ids=[c[0] for c in CONTRIB_CASES])
def test_fused_form_exports_as_one_contrib_op(build, op_type):
    standard, contrib = export_and_check(build())
    assert (MS, op_type) in node_types(contrib)
    assert not any(domain == MS for domain, _ in node_types(standard))
    assert sum(node_types(contrib).values()) < sum(node_types(standard).values())
    assert {(o.domain, o.version) for o in contrib.opset_import} == {("", 17), (MS, 1)}
    assert [o.domain for o in standard.opset_import] == [""]


FALLBACK_CASES = [
    ("conv-no-activation", lambda: relay.nn.conv2d_bias_act(v("x", 1, 4, 5, 5), v("w", 6, 4, 3, 3), v("b", 6))),
    ("matmul-float64", lambda: relay.nn.fused_matmul(v("a", 3, 4, dtype="float64"), v("b", 4, 5, dtype="float64"),
                                                     alpha=0.5)),
    # ONNX Runtime's SkipLayerNormalization runs slower than Add and LayerNormalization: never written
    ("skip-ln-3d", lambda: relay.nn.skip_layer_norm(v("x", 2, 3, 8), v("s", 2, 3, 8), v("g", 8), v("b", 8),
                                                    epsilon=1e-3)),
    ("skip-ln-2d-no-beta", lambda: relay.nn.skip_layer_norm(v("x", 3, 8), v("s", 3, 8), v("g", 8), v("b", 8),
                                                            center=False)),
    ("skip-ln-4d", lambda: relay.nn.skip_layer_norm(v("x", 2, 2, 3, 8), v("s", 2, 2, 3, 8), v("g", 8), v("b", 8))),
]


@pytest.mark.parametrize("build", [c[1] for c in FALLBACK_CASES], ids=[c[0] for c in FALLBACK_CASES])
def test_call_contrib_ops_cannot_express_keeps_the_standard_nodes(build):
    standard, contrib = export_and_check(build())
    assert contrib.graph.node == standard.graph.node


def test_contrib_false_is_the_default_and_unchanged_for_a_whole_model():
    mod, params = ir.models.get("bert", small=True)
    default = to_onnx(mod, params)
    assert to_onnx(mod, params, contrib=False).SerializeToString() == default.SerializeToString()
    assert not any(n.domain for n in default.graph.node)


def test_contrib_export_of_a_fused_program_matches_the_standard_one():
    x, w1, b1, w2, b2 = v("x", 4, 8), v("w1", 16, 8), v("b1", 16), v("w2", 8, 16), v("b2", 8)
    hidden = relay.nn.dense_bias_act(x, w1, b1, activation="relu")
    out = relay.nn.skip_layer_norm(relay.nn.dense(hidden, w2), x, v("g", 8), b2)
    standard, contrib = export_and_check(relay.nn.bias_gelu(out, b2))
    assert {op for domain, op in node_types(contrib) if domain == MS} == {"FusedGemm", "BiasGelu"}
    assert len(contrib.graph.node) < len(standard.graph.node)


def test_contrib_nodes_inside_if_branches_run():
    x, b = v("x", 2, 8), v("b", 8)
    cond = relay.var("c", shape=(1,), dtype="bool")
    body = relay.If(cond, relay.nn.bias_gelu(x, b), relay.nn.relu(x))
    mod = ir.IRModule.from_expr(body)
    ir.infer_type(mod)
    model = to_onnx(mod, contrib=True)
    inputs = {"x": np.linspace(-2, 2, 16, dtype="float32").reshape(2, 8), "b": np.ones(8, "float32")}
    for flag in (True, False):
        feed = {**inputs, "c": np.array([flag])}
        assert_outputs_close(flat_outputs(evaluate(mod, feed)), run_ort(model, feed))
    branch = next(a.g for a in model.graph.node[-1].attribute if a.name == "then_branch")
    assert any(n.domain == MS and n.op_type == "BiasGelu" for n in branch.node)


def test_the_cost_model_and_the_export_agree_on_the_kernels_dtypes():
    """The dtypes ort's strategies call legal for the activation, rotary and attention kernels are the
    ones the export writes them in (two layers, one fact: `ir` cannot import `strategies`)."""
    from ir.frontend import export_attention, export_contrib
    from strategies.op_strategies import contrib as strategies_contrib
    assert set(strategies_contrib.KERNEL_DTYPES) == set(export_contrib.KERNEL_DTYPES)
    assert set(strategies_contrib.ATTENTION_DTYPES) == set(export_attention._ATTENTION_DTYPES)
