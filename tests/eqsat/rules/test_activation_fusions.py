"""Activation forms ONNX Runtime fuses, from exporters' spellings to its kernels: each model is
optimized for the ort target, exported with contrib ops, and run in ONNX Runtime against the input."""

from __future__ import annotations

import io
import math
import os
import tempfile
from collections import Counter
from typing import Sequence

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import eqsat
import ir
import strategies
from tests.ir.frontend.ort_helpers import assert_outputs_close, run_ort

MS = "com.microsoft"
_SHAPE = (2, 5, 8)
_ELEM = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}


def _model(nodes: Sequence[onnx.NodeProto], inputs: dict[str, tuple[int, ...]], inits: dict[str, np.ndarray] = {},
           dtype: str = "float32") -> onnx.ModelProto:
    """A graph of `nodes` from `inputs` (and constant `inits`) to `y`."""
    graph = helper.make_graph(list(nodes), "g",
                              [helper.make_tensor_value_info(n, _ELEM[dtype], s) for n, s in inputs.items()],
                              [helper.make_tensor_value_info("y", _ELEM[dtype], None)],
                              [numpy_helper.from_array(np.asarray(v, dtype), n) for n, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _node(op: str, inputs: Sequence[str], out: str, **attrs) -> onnx.NodeProto:
    return helper.make_node(op, list(inputs), [out], **attrs)


def _optimized(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """`model` optimized for the ort target and exported with contrib ops; asserts that it computes the
    input's outputs in ONNX Runtime (1e-4 of each output's scale)."""
    mod, params = ir.frontend.from_onnx(model)
    res = eqsat.optimize(mod, params, target="ort")
    out = ir.frontend.to_onnx(res.mod, res.params, contrib=True)
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        feeds[value.name] = (3 * rng.standard_normal(dims)).astype(dtype)
    assert_outputs_close(run_ort(model, feeds), run_ort(out, feeds), rel=1e-4 if "float32" in str(feeds) else 2e-3)
    return out


def _ops(model: onnx.ModelProto) -> Counter:
    return Counter(f"{n.domain}:{n.op_type}" if n.domain else n.op_type for n in model.graph.node)


def _attr(model: onnx.ModelProto, op_type: str, name: str):
    node = next(n for n in model.graph.node if n.op_type == op_type)
    return next(helper.get_attribute_value(a) for a in node.attribute if a.name == name)


# -- tanh GELU -------------------------------------------------------------------------------------

def _gelu_tanh_nodes(x: str, cube: str, order: str) -> list[onnx.NodeProto]:
    """`0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` into `y`; the cube as Pow or two Muls,
    constant factors on the left (`order` "left", as torch writes) or on the right."""
    def mul(a: str, b: str, out: str) -> onnx.NodeProto:
        return _node("Mul", [a, b] if order == "left" or not b.startswith(("k_", "c_")) else [b, a], out)
    nodes = ([_node("Pow", [x, "c_three"], "cube")] if cube == "pow" else
             [_node("Mul", [x, x], "sq"), _node("Mul", ["sq", x], "cube")])
    return nodes + [mul("k_cube", "cube", "kc"), _node("Add", [x, "kc"], "inner"), mul("k_sqrt", "inner", "arg"),
                    _node("Tanh", ["arg"], "t"), _node("Add", ["c_one", "t"], "phi"), mul("c_half", x, "hx"),
                    _node("Mul", ["hx", "phi"], "y")]


_GELU_CONSTANTS = {"c_three": 3.0, "k_cube": 0.044715, "k_sqrt": math.sqrt(2 / math.pi), "c_one": 1.0, "c_half": 0.5}


@pytest.mark.parametrize("cube", ["pow", "product"])
@pytest.mark.parametrize("order", ["left", "right"])
def test_tanh_gelu_is_fast_gelu(cube, order):
    out = _optimized(_model(_gelu_tanh_nodes("x", cube, order), {"x": _SHAPE}, _GELU_CONSTANTS))
    assert _ops(out) == Counter({f"{MS}:FastGelu": 1})


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_standard_export_of_tanh_gelu_is_the_spelling_ort_fuses(dtype):
    """Without contrib ops (opset 17: no Gelu), the tanh GELU is written as GPT-2 writes it, which ONNX Runtime's
    optimizer fuses into FastGelu (it does not fuse `x * x * x`, nor the product with 0.5 taken last)."""
    nodes = [*_gelu_tanh_nodes("x", "product", "right")[:-1], _node("Mul", ["phi", "hx"], "g"), _node("Neg", ["g"], "y")]
    mod, params = ir.frontend.from_onnx(_model(nodes, {"x": _SHAPE}, _GELU_CONSTANTS, dtype))
    res = eqsat.optimize(mod, params, target="ort")
    assert res.op_counts_after.get("nn.gelu") == 1
    exported = ir.frontend.to_onnx(res.mod, res.params, opset=17)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    session = ort.InferenceSession(exported.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal(_SHAPE).astype(dtype)
    assert session.run(None, {"x": x})[0].shape == _SHAPE
    if dtype == "float32":
        options.optimized_model_filepath = os.path.join(tempfile.mkdtemp(), "optimized.onnx")
        ort.InferenceSession(exported.SerializeToString(), options, providers=["CPUExecutionProvider"])
        assert _ops(onnx.load(options.optimized_model_filepath))[f"{MS}:FastGelu"] == 1


@pytest.mark.parametrize("op", ["nn.gelu", "nn.bias_gelu"])
def test_standard_export_of_exact_gelu_is_the_spelling_ort_fuses(op):
    """Without contrib ops (opset 17), the exact GELU divides by sqrt(2) as PyTorch writes it: ONNX Runtime's
    optimizer fuses that into Gelu, not the product with 1 / sqrt(2)."""
    from ir import relay
    x, b = relay.var("x", shape=_SHAPE), relay.var("b", shape=_SHAPE[-1:])
    gelu = relay.nn.bias_gelu(x, b) if op == "nn.bias_gelu" else relay.nn.gelu(x)
    exported = ir.frontend.to_onnx(ir.IRModule.from_expr(relay.Function([x, b], relay.negative(gelu))), opset=17)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = os.path.join(tempfile.mkdtemp(), "optimized.onnx")
    ort.InferenceSession(exported.SerializeToString(), options, providers=["CPUExecutionProvider"])
    fused = _ops(onnx.load(options.optimized_model_filepath))
    assert fused[f"{MS}:Gelu"] + fused[f"{MS}:BiasGelu"] == 1 and "Erf" not in fused


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_tanh_gelu_after_a_bias_is_fast_gelu_with_its_bias(dtype):
    nodes = [_node("Add", ["x", "b"], "xb"), *_gelu_tanh_nodes("xb", "pow", "left")]
    out = _optimized(_model(nodes, {"x": _SHAPE, "b": _SHAPE[-1:]}, _GELU_CONSTANTS, dtype))
    assert _ops(out) == Counter({f"{MS}:FastGelu": 1})
    assert len(out.graph.node[0].input) == 2


def test_near_miss_a_wrong_cube_coefficient_stays_unfused():
    out = _optimized(_model(_gelu_tanh_nodes("x", "pow", "left"), {"x": _SHAPE}, {**_GELU_CONSTANTS, "k_cube": 0.0447}))
    assert f"{MS}:FastGelu" not in _ops(out) and "Tanh" in _ops(out)


def test_exact_gelu_is_not_fast_gelu():
    nodes = [_node("Div", ["x", "c_sqrt2"], "d"), _node("Erf", ["d"], "e"), _node("Add", ["e", "c_one"], "p"),
             _node("Mul", ["x", "p"], "xp"), _node("Mul", ["xp", "c_half"], "y")]
    out = _optimized(_model(nodes, {"x": _SHAPE}, {"c_sqrt2": math.sqrt(2), "c_one": 1.0, "c_half": 0.5}))
    assert f"{MS}:FastGelu" not in _ops(out)


# -- QuickGelu and SiLU ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("alpha", [1.702, 1.0])
def test_sigmoid_gate_is_quick_gelu(alpha, dtype):
    nodes = [_node("Mul", ["x", "a"], "ax"), _node("Sigmoid", ["ax"], "s"), _node("Mul", ["x", "s"], "y")]
    out = _optimized(_model(nodes, {"x": _SHAPE}, {"a": alpha}, dtype))
    assert _ops(out) == Counter({f"{MS}:QuickGelu": 1})
    assert _attr(out, "QuickGelu", "alpha") == pytest.approx(float(np.asarray(alpha, dtype)))  # the constant as written


def test_near_miss_a_per_channel_gate_scale_stays_unfused():
    nodes = [_node("Mul", ["x", "a"], "ax"), _node("Sigmoid", ["ax"], "s"), _node("Mul", ["x", "s"], "y")]
    out = _optimized(_model(nodes, {"x": _SHAPE}, {"a": np.linspace(1, 2, 8)}))
    assert f"{MS}:QuickGelu" not in _ops(out)


# -- gated feed-forwards ---------------------------------------------------------------------------

def _gated(activation: list[onnx.NodeProto]) -> onnx.ModelProto:
    """`act(x @ wg) * (x @ wu)`, `activation` from `g` to `a`."""
    rng = np.random.default_rng(1)
    nodes = [_node("MatMul", ["x", "wg"], "g"), _node("MatMul", ["x", "wu"], "u"), *activation,
             _node("Mul", ["a", "u"], "y")]
    return _model(nodes, {"x": _SHAPE}, {"wg": rng.standard_normal((8, 16)) / 3, "wu": rng.standard_normal((8, 16)) / 3,
                                         **_GELU_CONSTANTS})


def test_swiglu_gate_is_quick_gelu():
    out = _optimized(_gated([_node("Sigmoid", ["g"], "s"), _node("Mul", ["g", "s"], "a")]))
    assert _ops(out)[f"{MS}:QuickGelu"] == 1 and "Sigmoid" not in _ops(out)


def test_geglu_gate_is_fast_gelu():
    nodes = _gelu_tanh_nodes("g", "product", "left")
    nodes[-1] = _node("Mul", ["hx", "phi"], "a")
    out = _optimized(_gated(nodes))
    assert _ops(out)[f"{MS}:FastGelu"] == 1 and "Tanh" not in _ops(out)


# -- exact GELU after a dense layer ----------------------------------------------------------------

def _dense_gelu(dtype: str) -> onnx.ModelProto:
    rng = np.random.default_rng(2)
    nodes = [_node("MatMul", ["x", "w"], "m"), _node("Add", ["m", "b"], "h"), _node("Div", ["h", "c_sqrt2"], "d"),
             _node("Erf", ["d"], "e"), _node("Add", ["e", "c_one"], "p"), _node("Mul", ["h", "p"], "hp"),
             _node("Mul", ["hp", "c_half"], "y")]
    return _model(nodes, {"x": _SHAPE}, {"w": rng.standard_normal((8, 16)) / 3, "b": rng.standard_normal(16),
                                         "c_sqrt2": math.sqrt(2), "c_one": 1.0, "c_half": 0.5}, dtype)


def test_dense_bias_exact_gelu_reaches_bias_gelu():
    assert _ops(_optimized(_dense_gelu("float32")))[f"{MS}:BiasGelu"] == 1


@pytest.mark.parametrize("approximate,kernel", [("none", "BiasGelu"), ("tanh", "FastGelu")])
def test_float16_bias_gelu_is_ort_kernel(approximate, kernel):
    """ONNX Runtime's CPU BiasGelu and FastGelu run float16 (computing in float32): the ort target may
    extract `nn.bias_gelu` there, and its export is the kernel, within float16 rounding of the op."""
    from ir import relay
    x, b = relay.var("x", shape=_SHAPE, dtype="float16"), relay.var("b", shape=_SHAPE[-1:], dtype="float16")
    call = relay.nn.bias_gelu(x, b, approximate=approximate)
    ir.infer_type(ir.IRModule.from_expr(relay.Function([x, b], call)))
    assert strategies.CostModel("ort").is_legal("nn.bias_gelu", None, [x.checked_type, b.checked_type],
                                               call.checked_type)
    mod = ir.IRModule.from_expr(relay.Function([x, b], call))
    exported = ir.frontend.to_onnx(mod, contrib=True)
    assert _ops(exported) == Counter({f"{MS}:{kernel}": 1})
    rng = np.random.default_rng(3)
    feeds = {"x": (3 * rng.standard_normal(_SHAPE)).astype("float16"), "b": rng.standard_normal(8).astype("float16")}
    assert_outputs_close([strategies.evaluate(mod, feeds)], run_ort(exported, feeds), rel=2e-3)


# -- RMS norm with (1 + w) ---------------------------------------------------------------------------

def test_gemma_rms_norm_folds_one_plus_weight():
    w = np.linspace(-0.5, 0.5, 8)
    nodes = [_node("Pow", ["x", "c_two"], "sq"), _node("ReduceMean", ["sq"], "ms", axes=[-1]),
             _node("Add", ["ms", "eps"], "mse"), _node("Sqrt", ["mse"], "rms"), _node("Reciprocal", ["rms"], "inv"),
             _node("Mul", ["x", "inv"], "n"), _node("Add", ["c_one", "w"], "scale"), _node("Mul", ["n", "scale"], "y")]
    out = _optimized(_model(nodes, {"x": _SHAPE}, {"c_two": 2.0, "eps": 1e-6, "c_one": 1.0, "w": w}))
    assert _ops(out) == Counter({"RMSNormalization": 1})
    scale = next(numpy_helper.to_array(t) for t in out.graph.initializer if t.name == out.graph.node[0].input[1])
    np.testing.assert_array_equal(scale, np.float32(1) + w.astype("float32"))


# -- convolutions and Gemms with their activation ---------------------------------------------------

def _conv_act(op: str, channels: int, **attrs) -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    extra = {"lo": 0.0, "hi": 6.0} if op == "Clip" else {}
    nodes = [_node("Conv", ["x", "w", "b"], "c", pads=[1, 1, 1, 1]), _node(op, ["c", *extra], "y", **attrs)]
    return _model(nodes, {"x": (1, 3, 6, 6)}, {"w": rng.standard_normal((channels, 3, 3, 3)) / 4,
                                               "b": rng.standard_normal(channels), **extra})


@pytest.mark.parametrize("channels", [4, 16], ids=["padded-to-a-block", "whole-blocks"])
@pytest.mark.parametrize("op,attrs", [("Clip", {}), ("LeakyRelu", {"alpha": 0.1}), ("HardSigmoid", {}),
                                      ("Relu", {}), ("Tanh", {}), ("Sigmoid", {})])
def test_conv_takes_its_activation_in(op, attrs, channels):
    out = _optimized(_conv_act(op, channels, **attrs))
    assert op not in _ops(out)
    assert _ops(out)["com.microsoft.nchwc:Conv"] + _ops(out)[f"{MS}:FusedConv"] == 1


@pytest.mark.parametrize("op,attrs", [("Clip", {}), ("LeakyRelu", {"alpha": 0.1}), ("HardSigmoid", {"alpha": 0.25})])
def test_conv_of_a_weight_input_is_fused_conv_with_its_activation(op, attrs):
    """A weight the program reads as an input has no blocked form: the plain FusedConv takes the activation."""
    model = _conv_act(op, 4, **attrs)
    weight = next(t for t in model.graph.initializer if t.name == "w")
    model.graph.initializer.remove(weight)
    model.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, list(weight.dims)))
    out = _optimized(model)
    assert _ops(out) == Counter({f"{MS}:FusedConv": 1})
    params = {"Clip": [0.0, 6.0], "LeakyRelu": [0.1], "HardSigmoid": [0.25, 0.5]}[op]
    assert _attr(out, "FusedConv", "activation") == op.encode()
    assert _attr(out, "FusedConv", "activation_params") == pytest.approx(params)


def _gemm_act(op: str, **attrs) -> onnx.ModelProto:
    rng = np.random.default_rng(4)
    extra = {"lo": -1.0, "hi": 1.0} if op == "Clip" else {}
    nodes = [_node("Gemm", ["x", "w", "b"], "g", transB=1), _node(op, ["g", *extra], "y", **attrs)]
    return _model(nodes, {"x": (4, 8)}, {"w": rng.standard_normal((16, 8)), "b": rng.standard_normal(16), **extra})


@pytest.mark.parametrize("op,attrs", [("LeakyRelu", {"alpha": 0.1}), ("HardSigmoid", {"alpha": 0.25, "beta": 0.4}),
                                      ("Relu", {}), ("Tanh", {}), ("Sigmoid", {})])
def test_gemm_takes_its_activation_in(op, attrs):
    out = _optimized(_gemm_act(op, **attrs))
    assert _ops(out) == Counter({f"{MS}:FusedGemm": 1})
    assert _attr(out, "FusedGemm", "activation") == op.encode()


def test_near_miss_gemm_and_clip_stay_two_nodes():
    """ONNX Runtime's FusedGemm has no Clip ("unknown kernel type"): the Gemm keeps its Clip."""
    assert _ops(_optimized(_gemm_act("Clip"))) == Counter({"Gemm": 1, "Clip": 1})


# -- what PyTorch's exporters write ------------------------------------------------------------------

def _torch_export(module, *shapes: tuple[int, ...], dynamo: bool) -> onnx.ModelProto:
    torch = pytest.importorskip("torch")
    args = tuple(torch.randn(*s) for s in shapes)
    if dynamo:
        pytest.importorskip("onnxscript")
        return torch.onnx.export(module.eval(), args, dynamo=True, verbose=False).model_proto
    buffer = io.BytesIO()
    torch.onnx.export(module.eval(), args, buffer, dynamo=False, opset_version=17)
    return onnx.load_from_string(buffer.getvalue())


def _torch_module(forward):
    torch = pytest.importorskip("torch")
    return type("M", (torch.nn.Module,), {"forward": lambda self, x: forward(torch, x)})()


_TORCH_FORMS = {
    "gelu_new-pow": (lambda t, x: 0.5 * x * (1.0 + t.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * t.pow(x, 3.0)))),
                     "FastGelu"),
    "gelu_new-product": (lambda t, x: 0.5 * x * (1.0 + t.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))
                         , "FastGelu"),
    "gelu-tanh": (lambda t, x: t.nn.functional.gelu(x, approximate="tanh"), "FastGelu"),
    "gelu_fast": (lambda t, x: 0.5 * x * (1.0 + t.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x))), "FastGelu"),
    "bloom-gelu": (lambda t, x: x * 0.5 * (1.0 + t.tanh(0.79788456 * x * (1 + 0.044715 * x * x))), "FastGelu"),
    "quick-gelu": (lambda t, x: x * t.sigmoid(1.702 * x), "QuickGelu"),
    "silu": (lambda t, x: t.nn.functional.silu(x), "QuickGelu"),
}


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
@pytest.mark.parametrize("form", sorted(_TORCH_FORMS))
def test_torch_exports_reach_the_kernel(form, dynamo):
    forward, op_type = _TORCH_FORMS[form]
    out = _optimized(_torch_export(_torch_module(forward), _SHAPE, dynamo=dynamo))
    assert _ops(out) == Counter({f"{MS}:{op_type}": 1})
