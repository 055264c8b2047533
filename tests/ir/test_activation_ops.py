"""The activation ops exporters spell out (nn.hard_sigmoid, nn.hard_swish, nn.silu, nn.quick_gelu, nn.rms_norm)
and nn.gelu's ONNX forms: each export, standard and contrib, at every opset that changes it, runs in ONNX
Runtime on edge values and agrees with the reference interpreter; each op is legal and priced on the host
targets and runs there."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import ir
from ir import relay
from ir.frontend import to_onnx
from strategies import CostModel, build
from strategies.interpreter import evaluate
from tests.ir.frontend.ort_helpers import run_ort

MS = "com.microsoft"
NEWEST = onnx.defs.onnx_opset_version()
#: zeros of both signs, infinities, the hard activations' kinks, large magnitudes, then random values
EDGES = [0.0, -0.0, np.inf, -np.inf, 3.0, -3.0, 2.5, -2.5, 1e30, -1e30, 1e4, -1e4, -40.0, 40.0]


def x_values(dtype: str = "float32") -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([EDGES, rng.uniform(-6, 6, 34)]).astype(dtype).reshape(2, 3, 8)


def program(body: ir.Expr) -> ir.IRModule:
    mod = ir.IRModule.from_expr(relay.Function(ir.free_vars(body), body))
    ir.infer_type(mod)
    return mod


def x_var(dtype: str = "float32") -> ir.Var:
    return relay.var("x", shape=(2, 3, 8), dtype=dtype)


def nodes(model: onnx.ModelProto) -> list[tuple[str, str]]:
    return [(n.domain, n.op_type) for n in model.graph.node]


# op -> builder of the call on x, and the ONNX nodes of its export by (opset, contrib)
ACTIVATIONS = {
    "hard_sigmoid": lambda x: relay.nn.hard_sigmoid(x, alpha=0.3, beta=0.4),
    "hard_swish": relay.nn.hard_swish,
    "silu": relay.nn.silu,
    "quick_gelu": relay.nn.quick_gelu,
    "gelu": relay.nn.gelu,
    "gelu_tanh": lambda x: relay.nn.gelu(x, approximate="tanh"),
}
SIGMOID_MUL = [("", "Sigmoid"), ("", "Mul")]


def expected_nodes(name: str, opset: int, contrib: bool) -> list[tuple[str, str]] | None:
    """The export's nodes (None: the standard decomposition, checked only by running it)."""
    if name == "hard_sigmoid":
        return [("", "HardSigmoid")]
    if name == "hard_swish":
        return [("", "HardSwish")] if opset >= 14 else [("", "HardSigmoid"), ("", "Mul")]
    if name in ("silu", "quick_gelu"):
        return [(MS, "QuickGelu")] if contrib else None
    if opset >= 20:
        return [("", "Gelu")]
    if contrib:
        return [(MS, "FastGelu" if name == "gelu_tanh" else "Gelu")]
    return None


@pytest.mark.parametrize("contrib", [False, True], ids=["standard", "contrib"])
@pytest.mark.parametrize("opset", [13, 14, 17, 20, NEWEST])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_export_runs_in_onnxruntime(name, opset, contrib):
    mod = program(ACTIVATIONS[name](x_var()))
    x = x_values()
    expected = evaluate(mod, {"x": x})
    model = to_onnx(mod, opset=opset, contrib=contrib)
    want = expected_nodes(name, opset, contrib)
    if want is not None:
        assert nodes(model) == want
    elif name in ("silu", "quick_gelu"):
        assert [n for n in nodes(model) if n != ("", "Mul")] == [("", "Sigmoid")]
    (out,) = run_ort(model, {"x": x})
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=2e-6, atol=1e-6)  # NaN (0 * -inf) where the reference has it
    np.testing.assert_array_equal(np.signbit(out[expected == 0]), np.signbit(expected[expected == 0]))


@pytest.mark.parametrize("name", ["hard_sigmoid", "hard_swish", "silu", "quick_gelu", "gelu_tanh"])
def test_float64_exports_run_in_onnxruntime(name):
    """ONNX Runtime has no float64 HardSigmoid (so none for HardSwish) nor float64 contrib kernels: those
    calls export as formulas."""
    mod = program(ACTIVATIONS[name](x_var("float64")))
    x = x_values("float64")
    expected = evaluate(mod, {"x": x})
    for model in (to_onnx(mod), to_onnx(mod, contrib=True), to_onnx(mod, opset=NEWEST)):
        assert not any(domain == MS for domain, _ in nodes(model))
        (out,) = run_ort(model, {"x": x})
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


RMS_CASES = [("last", -1, (8,)), ("middle", 1, (3,))]


@pytest.mark.parametrize("contrib", [False, True], ids=["standard", "contrib"])
@pytest.mark.parametrize("opset", [13, 17, 18, 23, NEWEST])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("case, axis, gamma_shape", RMS_CASES, ids=[c[0] for c in RMS_CASES])
def test_rms_norm_export_runs_in_onnxruntime(case, axis, gamma_shape, dtype, opset, contrib):
    gamma = relay.var("g", shape=gamma_shape, dtype=dtype)
    mod = program(relay.nn.rms_norm(x_var(dtype), gamma, epsilon=1e-3, axis=axis))
    rng = np.random.default_rng(1)
    feed = {"x": (rng.standard_normal((2, 3, 8)) * 3).astype(dtype),
            "g": rng.standard_normal(gamma_shape).astype(dtype)}
    feed["x"][0, 0] = 0.0  # a row of zeros: 0 / sqrt(epsilon)
    expected = evaluate(mod, feed)
    model = to_onnx(mod, opset=opset, contrib=contrib)
    if axis == -1 and opset >= 23:
        assert nodes(model) == [("", "RMSNormalization")]
        stash = {a.name: a.i for a in model.graph.node[0].attribute}.get("stash_type")
        assert stash == (onnx.TensorProto.DOUBLE if dtype == "float64" else None)
    else:
        assert [op for _, op in nodes(model) if op != "Unsqueeze"] == ["Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul"]
    (out,) = run_ort(model, feed)
    tolerance = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(out.astype("float64"), expected.astype("float64"), rtol=tolerance, atol=tolerance)


def test_onnxruntime_fuses_the_exported_rms_norm_and_silu(tmp_path):
    """RMS norm exports as one RMSNormalization (the default opset rises to 23 for it); below 23,
    the decompositions are the spellings ONNX Runtime's optimizer turns into its own kernels."""
    x, gamma = x_var(), relay.var("g", shape=(8,))
    mod = program(relay.nn.silu(relay.nn.rms_norm(x, gamma)))
    assert [op for _, op in nodes(to_onnx(mod))][0] == "RMSNormalization"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(to_onnx(mod, opset=17).SerializeToString(), options, providers=["CPUExecutionProvider"])
    assert [op for _, op in nodes(onnx.load(options.optimized_model_filepath))] == [
        "SimplifiedLayerNormalization", "QuickGelu"]


NEW_OPS = [("nn.hard_sigmoid", lambda x: relay.nn.hard_sigmoid(x)), ("nn.hard_swish", relay.nn.hard_swish),
           ("nn.silu", relay.nn.silu), ("nn.quick_gelu", relay.nn.quick_gelu),
           ("nn.rms_norm", lambda x: relay.nn.rms_norm(x, relay.var("g", shape=(8,))))]


@pytest.mark.parametrize("op, make", NEW_OPS, ids=[o for o, _ in NEW_OPS])
def test_new_ops_are_legal_priced_and_run_on_host_targets(op, make):
    call = make(x_var())
    ir.infer_type(call)
    in_types, out_type = [a.checked_type for a in call.args], call.checked_type
    for target in ("cpu", "ort", "cuda"):
        model = CostModel(target)
        assert model.is_legal(op, call.attrs, in_types, out_type), target
        assert 0 < model.node_cost(op, call.attrs, in_types, out_type) < math.inf
    mod = program(call)
    feed = {"x": x_values()}
    if op == "nn.rms_norm":
        feed["g"] = np.linspace(-1, 1, 8, dtype="float32")
    expected = evaluate(mod, feed)
    for target in ("cpu", "ort"):
        with np.errstate(all="ignore"):  # the edge values overflow on the way, as in the reference
            out = build(mod, target).run(**feed)
        np.testing.assert_array_equal(out, expected)  # the same operations as the reference, bit for bit


def test_transcendental_activations_cost_more_than_piecewise_linear_ones():
    ty = ir.TensorType((64, 1024), "float32")
    model = CostModel("cuda")
    cost = {op: model.node_cost(op, {}, [ty], ty) for op in ("nn.hard_swish", "nn.silu", "nn.relu")}
    assert cost["nn.relu"] == cost["nn.hard_swish"] <= cost["nn.silu"]
