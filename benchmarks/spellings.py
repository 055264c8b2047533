"""One computation, many spellings: the ONNX that real exporters write for the same fused program.

    from benchmarks.spellings import FAMILIES
    family = FAMILIES["layernorm"]
    model = family.spellings["pytorch"]("full")      # an onnx.ModelProto, hidden 768, seq 128

Each family has a canonical spelling (the ONNX standard op where one exists) and the spellings
exporters emit for it: PyTorch's decompositions before the standard op existed, tf2onnx's
`Reciprocal(Sqrt)` and Keras's batch-norm algebra, operands swapped, constants divided or
multiplied. Every builder takes a size (`"small"` for tests, `"full"` for the benchmark) and
builds the same function with the same seeded weights as its family's canonical spelling, so
their outputs agree within float rounding. `fused_ops` are the IR ops of which the optimized
program must contain one.

The `torch_export` spellings run `torch.onnx.export` and raise `Unavailable` where torch is not
installed (it is imported only when such a builder runs).
"""

from __future__ import annotations

import importlib.util
import inspect
import io
from dataclasses import dataclass
from typing import Callable, Literal, Mapping

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["Size", "Builder", "Family", "FAMILIES", "Unavailable", "spelling_ids", "builder", "model_inputs"]

Size = Literal["small", "full"]
Builder = Callable[[Size], onnx.ModelProto]

OPSET = 17
EPS = 1e-5
SQRT2 = 1.4142135
SIXTH = 1.0 / 6.0


class Unavailable(RuntimeError):
    """A spelling whose exporter is not installed."""


@dataclass(frozen=True)
class Family:
    """A computation: its canonical spelling, the spellings exporters write, what fusing it means."""

    name: str
    canonical: Builder
    spellings: Mapping[str, Builder]
    fused_ops: frozenset[str]
    """IR ops of which the optimized program of every spelling must contain one (alternatives, e.g.
    the fused convolution in the plain or in the blocked layout)."""


# -- building graphs -------------------------------------------------------------------------------------------

def _random(shape: tuple[int, ...], seed: int, scale: float = 1.0, offset: float = 0.0) -> np.ndarray:
    """Seeded weights: the same seed gives every spelling of a family the same values."""
    return (np.random.default_rng(seed).standard_normal(shape) * scale + offset).astype(np.float32)


class _Graph:
    """Accumulates the nodes and weights of one ONNX graph; values are named by their order."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def _name(self, prefix: str) -> str:
        return f"{prefix}{len(self.nodes) + len(self.initializers)}"

    def weight(self, value: np.ndarray) -> str:
        """A weight, stored as an initializer (as exporters store parameters)."""
        name = self._name("w")
        self.initializers.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    def const(self, value: float | list[float] | np.ndarray, dtype: type = np.float32) -> str:
        """A small constant, as a `Constant` node (as exporters write scalars)."""
        name = self._name("c")
        self.nodes.append(helper.make_node("Constant", [], [name],
                                           value=numpy_helper.from_array(np.asarray(value, dtype))))
        return name

    def op(self, op_type: str, *inputs: str, **attrs: object) -> str:
        name = self._name("t")
        self.nodes.append(helper.make_node(op_type, list(inputs), [name], **attrs))
        return name

    def model(self, inputs: Mapping[str, tuple[int, ...]], output: str, opset: int = OPSET,
              shape: tuple[int, ...] | None = None) -> onnx.ModelProto:
        """The model with float32 `inputs` and the value `output` as `y` (of `shape`, by default the
        first input's), checked by `onnx.checker`."""
        self.nodes.append(helper.make_node("Identity", [output], ["y"]))
        graph = helper.make_graph(
            self.nodes, "spelling",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape or next(iter(inputs.values()))))],
            self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="benchmarks.spellings")
        onnx.checker.check_model(model)
        return model


def model_inputs(model: onnx.ModelProto, seed: int = 0, scale: float = 3.0) -> dict[str, np.ndarray]:
    """Seeded float32 values for the model's graph inputs (scaled to reach every clip's bounds)."""
    rng = np.random.default_rng(seed)
    return {i.name: (rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]) * scale)
            .astype(np.float32) for i in model.graph.input}


# -- normalizations --------------------------------------------------------------------------------------------

def _tokens(size: Size) -> tuple[int, int, int]:
    """(batch, sequence, hidden) of the normalization and activation families."""
    return (2, 4, 16) if size == "small" else (1, 128, 768)


def _norm_weights(size: Size) -> tuple[np.ndarray, np.ndarray]:
    hidden = _tokens(size)[-1]
    return _random((hidden,), 1, 0.5, 1.0), _random((hidden,), 2, 0.5)


def _mean(g: _Graph, x: str) -> str:
    return g.op("ReduceMean", x, axes=[-1], keepdims=1)


def _square(g: _Graph, x: str, square: str) -> str:
    """x**2 as `Pow(x, 2)` (PyTorch) or `Mul(x, x)` (tf2onnx's SquaredDifference, hand-written RMSNorm)."""
    return g.op("Pow", x, g.const(2.0)) if square == "pow" else g.op("Mul", x, x)


def _normalize(g: _Graph, x: str, variance: str, rstd: str) -> str:
    """x / sqrt(variance + eps), as `Div(x, Sqrt)`, `Mul(x, Reciprocal(Sqrt))` or `Mul(x, Pow(-0.5))`."""
    shifted = g.op("Add", variance, g.const(EPS))
    if rstd == "div":
        return g.op("Div", x, g.op("Sqrt", shifted))
    inverse = g.op("Reciprocal", g.op("Sqrt", shifted)) if rstd == "reciprocal" else g.op("Pow", shifted, g.const(-0.5))
    return g.op("Mul", x, inverse)


def _decomposed_layernorm(x: str, g: _Graph, size: Size, *, square: str = "pow", rstd: str = "div",
                          affine: bool = True, gamma_first: bool = False, moments: bool = False) -> str:
    """mean, centre, variance, normalize, then gamma and beta (PyTorch's export before opset 17);
    with `moments`, the variance as mean(x^2) - mean(x)^2 (hand-written and fused-statistics kernels)."""
    mean = _mean(g, x)
    centered = g.op("Sub", x, mean)
    variance = (g.op("Sub", _mean(g, _square(g, x, square)), g.op("Mul", mean, mean)) if moments
                else _mean(g, _square(g, centered, square)))
    out = _normalize(g, centered, variance, rstd)
    if not affine:
        return out
    gamma, beta = (g.weight(w) for w in _norm_weights(size))
    if gamma_first:
        return g.op("Add", beta, g.op("Mul", gamma, out))
    return g.op("Add", g.op("Mul", out, gamma), beta)


def _tokens_model(body: Callable[[str, _Graph, Size], str], size: Size, opset: int = OPSET) -> onnx.ModelProto:
    """A model of one (batch, sequence, hidden) input `x` whose output `body` builds."""
    g = _Graph()
    return g.model({"x": _tokens(size)}, body("x", g, size), opset)


def _layernorm_op(x: str, g: _Graph, size: Size, affine: bool = True) -> str:
    gamma, beta = _norm_weights(size)
    if not affine:
        return g.op("LayerNormalization", x, g.weight(np.ones_like(gamma)), axis=-1, epsilon=EPS)
    return g.op("LayerNormalization", x, g.weight(gamma), g.weight(beta), axis=-1, epsilon=EPS)


def _keras_layernorm(x: str, g: _Graph, size: Size) -> str:
    """tf.nn.batch_normalization's algebra as tf2onnx writes it: x * inv + (beta - mean * inv), inv = rsqrt * gamma."""
    mean = _mean(g, x)
    centered = g.op("Sub", x, mean)
    inverse = g.op("Reciprocal", g.op("Sqrt", g.op("Add", _mean(g, g.op("Mul", centered, centered)), g.const(EPS))))
    gamma, beta = (g.weight(w) for w in _norm_weights(size))
    scale = g.op("Mul", inverse, gamma)
    return g.op("Add", g.op("Mul", x, scale), g.op("Sub", beta, g.op("Mul", mean, scale)))


def _rmsnorm(x: str, g: _Graph, size: Size, *, square: str = "pow", rstd: str = "div",
             gamma_first: bool = False) -> str:
    """x / sqrt(mean(x**2) + eps) * gamma; `rstd` and `square` pick the spelling of each step."""
    out = _normalize(g, x, _mean(g, _square(g, x, square)), rstd)
    gamma = g.weight(_norm_weights(size)[0])
    return g.op("Mul", gamma, out) if gamma_first else g.op("Mul", out, gamma)


def _residual_model(body: Callable[[str, _Graph, Size], str], size: Size, swapped: bool = False) -> onnx.ModelProto:
    """`body` applied to x + skip (a transformer block's residual), the sum's operands swapped if asked."""
    g = _Graph()
    total = g.op("Add", "skip", "x") if swapped else g.op("Add", "x", "skip")
    return g.model({"x": _tokens(size), "skip": _tokens(size)}, body(total, g, size))


# -- activations -----------------------------------------------------------------------------------------------

def _gelu(x: str, g: _Graph, *, scale: str = "div", order: str = "torch") -> str:
    """0.5 * x * (1 + erf(x / sqrt(2))): F.gelu's export (`order="torch"`), 0.5 multiplied first
    (`"half_first"`), or every product's operands swapped (`"swapped"`)."""
    scaled = g.op("Div", x, g.const(SQRT2)) if scale == "div" else g.op("Mul", x, g.const(1.0 / SQRT2))
    erf = g.op("Erf", scaled)
    if order == "torch":
        return g.op("Mul", g.op("Mul", x, g.op("Add", erf, g.const(1.0))), g.const(0.5))
    if order == "half_first":
        return g.op("Mul", g.op("Mul", x, g.const(0.5)), g.op("Add", erf, g.const(1.0)))
    return g.op("Mul", g.const(0.5), g.op("Mul", g.op("Add", g.const(1.0), erf), x))


def _gelu_tanh(x: str, g: _Graph, *, cube: str = "pow", factored: bool = False) -> str:
    """GPT-2's `gelu_new`, the cube as `cube` "pow" or "mul"; `factored`: HF's gelu_fast, BLOOM's x * (1 + k x^2)."""
    k, s = g.const(0.044715), g.const(0.7978845608)  # s: sqrt(2 / pi), as Hugging Face writes it
    inner = (g.op("Mul", g.op("Mul", x, s), g.op("Add", g.const(1.0), g.op("Mul", g.op("Mul", k, x), x))) if factored
             else g.op("Mul", s, g.op("Add", x, g.op("Mul", k, g.op("Pow", x, g.const(3.0)) if cube == "pow"
                                                   else g.op("Mul", g.op("Mul", x, x), x)))))
    return g.op("Mul", g.op("Mul", g.const(0.5), x), g.op("Add", g.const(1.0), g.op("Tanh", inner)))


def _relu6(g: _Graph, x: str, form: str = "clip") -> str:
    """min(max(x, 0), 6): `Clip(x, 0, 6)` (PyTorch, tf2onnx), `Min(Max(x, 0), 6)`, `Min(Relu(x), 6)`
    or `Max(Min(x, 6), 0)`."""
    if form == "clip":
        return g.op("Clip", x, g.const(0.0), g.const(6.0))
    if form == "minmax":
        return g.op("Min", g.op("Max", x, g.const(0.0)), g.const(6.0))
    if form == "relu_min":
        return g.op("Min", g.op("Relu", x), g.const(6.0))
    return g.op("Max", g.op("Min", x, g.const(6.0)), g.const(0.0))


def _relu6_plus3(g: _Graph, x: str, form: str = "clip") -> str:
    return _relu6(g, g.op("Add", x, g.const(3.0)), form)


def _hardswish(x: str, g: _Graph, *, relu6: str = "clip", sixth: str = "div") -> str:
    """x * relu6(x + 3) / 6, divided (PyTorch before opset 14) or multiplied by 1/6 (Keras MobileNetV3)."""
    product = g.op("Mul", x, _relu6_plus3(g, x, relu6))
    return g.op("Div", product, g.const(6.0)) if sixth == "div" else g.op("Mul", product, g.const(SIXTH))


def _hardsigmoid_op(x: str, g: _Graph) -> str:
    return g.op("HardSigmoid", x, alpha=SIXTH, beta=0.5)


def _softmax(x: str, g: _Graph, *, stable: bool = True, reciprocal: bool = False) -> str:
    """exp(x - max) / sum(exp(x - max)) over the last axis; without the shift when not `stable`."""
    shifted = g.op("Sub", x, g.op("ReduceMax", x, axes=[-1], keepdims=1)) if stable else x
    exp = g.op("Exp", shifted)
    total = g.op("ReduceSum", exp, g.const([-1], np.int64), keepdims=1)
    return g.op("Mul", exp, g.op("Reciprocal", total)) if reciprocal else g.op("Div", exp, total)


def _mlp_width(size: Size) -> tuple[int, ...]:
    """An MLP's inner activations: (batch, sequence, 4 * hidden)."""
    return _tokens(size)[:2] + (_tokens(size)[2] * 4,)


def _attention_scores(size: Size) -> tuple[int, ...]:
    return (2, 2, 4, 8) if size == "small" else (1, 12, 128, 128)


def _elementwise(body: Callable[[str, _Graph], str], opset: int = OPSET) -> Builder:
    """A builder of a model that applies `body` to one (batch, sequence, hidden) input."""
    def build(size: Size) -> onnx.ModelProto:
        g = _Graph()
        return g.model({"x": _mlp_width(size)}, body("x", g), opset)
    return build


def _softmax_model(body: Callable[[str, _Graph], str]) -> Builder:
    def build(size: Size) -> onnx.ModelProto:
        g = _Graph()
        return g.model({"x": _attention_scores(size)}, body("x", g))
    return build


# -- linear and convolution ------------------------------------------------------------------------------------

def _linear_weights(size: Size) -> tuple[int, np.ndarray, np.ndarray]:
    """(rows of x, W of shape (in, out), bias of out)."""
    rows, inner, outer = (8, 16, 12) if size == "small" else (128, 768, 3072)
    return rows, _random((inner, outer), 3, inner ** -0.5), _random((outer,), 4, 0.1)


def _linear(form: str) -> Builder:
    """x @ W + b: `Gemm(transB=1)` (torch nn.Linear on 2-D data), `Gemm` of W itself, `MatMul` + `Add`
    (either order), or `MatMul` of a transposed stored weight."""
    def build(size: Size) -> onnx.ModelProto:
        rows, weight, bias = _linear_weights(size)
        g = _Graph()
        if form == "gemm_transposed":
            out = g.op("Gemm", "x", g.weight(weight.T), g.weight(bias), transB=1)
        elif form == "gemm":
            out = g.op("Gemm", "x", g.weight(weight), g.weight(bias))
        else:
            w = g.op("Transpose", g.weight(weight.T), perm=[1, 0]) if form == "matmul_transpose" else g.weight(weight)
            product, b = g.op("MatMul", "x", w), g.weight(bias)
            out = g.op("Add", b, product) if form == "add_swapped" else g.op("Add", product, b)
        return g.model({"x": (rows, weight.shape[0])}, out, shape=(rows, weight.shape[1]))
    return build


@dataclass(frozen=True)
class _ConvBN:
    """A 3x3 convolution followed by inference batch norm, and its folded weight and bias."""

    data: tuple[int, int, int, int]
    weight: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    mean: np.ndarray
    var: np.ndarray

    @property
    def scale(self) -> np.ndarray:
        return (self.gamma / np.sqrt(self.var + EPS)).astype(np.float32)

    @property
    def shift(self) -> np.ndarray:
        return (self.beta - self.mean * self.scale).astype(np.float32)

    def folded(self) -> tuple[np.ndarray, np.ndarray]:
        return (self.weight * self.scale[:, None, None, None]).astype(np.float32), self.shift


def _conv_bn(size: Size) -> _ConvBN:
    channels, out, side = (4, 8, 8) if size == "small" else (64, 64, 56)
    fan_in = channels * 9
    return _ConvBN((1, channels, side, side), _random((out, channels, 3, 3), 5, fan_in ** -0.5),
                   _random((out,), 6, 0.2, 1.0), _random((out,), 7, 0.2), _random((out,), 8, 0.2),
                   np.abs(_random((out,), 9, 0.3, 1.0)) + 0.1)


def _conv_bn_relu(form: str) -> Builder:
    """conv + BN + relu: `Conv(W, B)` + `Relu` with BN folded (canonical), `BatchNormalization`,
    Keras's BN as per-channel `Mul` and `Add` after a bias-free or biased `Conv`, relu as `Max(x, 0)`."""
    def build(size: Size) -> onnx.ModelProto:
        p = _conv_bn(size)
        g = _Graph()
        conv = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
        per_channel = (-1, 1, 1)
        if form == "folded":
            weight, bias = p.folded()
            out = g.op("Conv", "x", g.weight(weight), g.weight(bias), **conv)
        elif form in ("batchnorm", "batchnorm_max"):
            out = g.op("BatchNormalization", g.op("Conv", "x", g.weight(p.weight), **conv),
                       *(g.weight(v) for v in (p.gamma, p.beta, p.mean, p.var)), epsilon=EPS)
        elif form == "mul_add":
            out = g.op("Add", g.op("Mul", g.op("Conv", "x", g.weight(p.weight), **conv),
                                   g.weight(p.scale.reshape(per_channel))), g.weight(p.shift.reshape(per_channel)))
        else:  # a biased conv, then the batch norm as Mul and Add
            bias = _random(p.scale.shape, 10, 0.1)
            shift = p.shift - bias * p.scale
            scaled = g.op("Mul", g.op("Conv", "x", g.weight(p.weight), g.weight(bias), **conv),
                          g.weight(p.scale.reshape(per_channel)))
            out = g.op("Add", scaled, g.weight(shift.reshape(per_channel)))
        out = g.op("Max", out, g.const(0.0)) if form == "batchnorm_max" else g.op("Relu", out)
        return g.model({"x": p.data}, out, shape=(1, p.weight.shape[0], *p.data[2:]))
    return build


# -- attention -------------------------------------------------------------------------------------------------

def _heads(size: Size) -> tuple[int, int, int, int]:
    """(batch, sequence, heads, head size) of the attention family."""
    return (2, 4, 2, 8) if size == "small" else (1, 128, 12, 64)


def _split_heads(g: _Graph, x: str, size: Size, perm: tuple[int, ...] = (0, 2, 1, 3)) -> str:
    """(batch, sequence, hidden) -> (batch, heads, sequence, head size), or another `perm` of the split axes."""
    return g.op("Transpose", g.op("Reshape", x, g.const(list(_heads(size)), np.int64)), perm=list(perm))


def _attention(form: str) -> Builder:
    """softmax(Q Kᵀ / sqrt(d) + mask) V over split heads, merged back to (batch, sequence, hidden):
    the scores scaled (canonical), divided by sqrt(d) (Hugging Face BERT), K transposed in the head
    split (GPT-2 style exports), Q scaled first, Q and K each scaled by d^-1/4 (PyTorch's SDPA export),
    Einsum products (Flax), or the mask added first."""
    def build(size: Size) -> onnx.ModelProto:
        batch, seq, heads, dim = _heads(size)
        scale = dim ** -0.5
        g = _Graph()
        q, v = _split_heads(g, "q", size), _split_heads(g, "v", size)
        if form == "k_transposed_early":
            k_t = _split_heads(g, "k", size, (0, 2, 3, 1))
        else:
            k = _split_heads(g, "k", size)
            k_t = None if form == "einsum" else g.op("Transpose", k, perm=[0, 1, 3, 2])
        if form == "query_scaled":
            scores = g.op("MatMul", g.op("Mul", q, g.const(scale)), k_t)
        elif form == "both_scaled":
            root = g.const(scale ** 0.5)
            scores = g.op("MatMul", g.op("Mul", q, root), g.op("Mul", k_t, root))
        elif form == "bert_div":
            scores = g.op("Div", g.op("MatMul", q, k_t), g.const(dim ** 0.5))
        elif form == "einsum":
            scores = g.op("Mul", g.op("Einsum", q, k, equation="bhqd,bhkd->bhqk"), g.const(scale))
        else:
            scores = g.op("Mul", g.op("MatMul", q, k_t), g.const(scale))
        scores = g.op("Add", "mask", scores) if form == "mask_first" else g.op("Add", scores, "mask")
        probs = g.op("Softmax", scores, axis=-1)
        context = (g.op("Einsum", probs, v, equation="bhqk,bhkd->bhqd") if form == "einsum"
                   else g.op("MatMul", probs, v))
        merged = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]),
                      g.const([batch, seq, heads * dim], np.int64))
        hidden = (batch, seq, heads * dim)
        return g.model({"q": hidden, "k": hidden, "v": hidden, "mask": (batch, 1, 1, seq)}, merged, shape=hidden)
    return build


# -- torch exports ---------------------------------------------------------------------------------------------

def _torch_export(make_module: Callable[..., object], shape: Callable[[Size], tuple[int, ...]],
                  opset: int = OPSET,
                  inputs: Callable[[Size], Mapping[str, tuple[int, ...]]] | None = None) -> Builder:
    """`torch.onnx.export` (the TorchScript exporter) of `make_module(torch, size)` on an input `x` of
    `shape(size)`, or on the named `inputs(size)`."""
    def build(size: Size) -> onnx.ModelProto:
        if importlib.util.find_spec("torch") is None:
            raise Unavailable("torch is not installed")
        import torch
        module = make_module(torch, size)
        options = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
        shapes = inputs(size) if inputs is not None else {"x": shape(size)}
        buffer = io.BytesIO()
        torch.onnx.export(module, tuple(torch.zeros(s) for s in shapes.values()), buffer, opset_version=opset,
                          input_names=list(shapes), output_names=["y"], **options)
        return onnx.load_from_string(buffer.getvalue())
    return build


def _torch_layernorm(torch: object, size: Size) -> object:
    gamma, beta = _norm_weights(size)
    module = torch.nn.LayerNorm(gamma.shape[0], eps=EPS)
    with torch.no_grad():
        module.weight.copy_(torch.from_numpy(gamma))
        module.bias.copy_(torch.from_numpy(beta))
    return module.eval()


def _functional(name: str, **kwargs: object) -> Callable[[object, Size], object]:
    """A factory of a module that applies `torch.nn.functional.<name>` (with `kwargs`)."""
    def make(torch: object, size: Size) -> object:
        fn = getattr(torch.nn.functional, name)

        class Module(torch.nn.Module):
            def forward(self, x):
                return fn(x, **kwargs)
        return Module().eval()
    return make


def _attention_inputs(size: Size) -> dict[str, tuple[int, ...]]:
    batch, seq, heads, dim = _heads(size)
    hidden = (batch, seq, heads * dim)
    return {"q": hidden, "k": hidden, "v": hidden, "mask": (batch, 1, 1, seq)}


def _torch_attention(form: str) -> Callable[[object, Size], object]:
    """Self-attention over split heads as PyTorch code writes it: Hugging Face BERT's
    `matmul / sqrt(d) + mask` (`"bert"`), or `F.scaled_dot_product_attention` (`"sdpa"`)."""
    def make(torch: object, size: Size) -> object:
        batch, seq, heads, dim = _heads(size)

        def split(t):
            return t.view(batch, seq, heads, dim).permute(0, 2, 1, 3)

        class Module(torch.nn.Module):
            def forward(self, q, k, v, mask):
                q, k, v = split(q), split(k), split(v)
                if form == "sdpa":
                    context = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                else:
                    scores = torch.matmul(q, k.transpose(-1, -2)) / dim ** 0.5 + mask
                    context = torch.matmul(torch.softmax(scores, dim=-1), v)
                return context.permute(0, 2, 1, 3).reshape(batch, seq, heads * dim)
        return Module().eval()
    return make


# -- the registry ----------------------------------------------------------------------------------------------

def _tokens_builder(body: Callable[..., str], opset: int = OPSET, **options: object) -> Builder:
    return lambda size: _tokens_model(lambda x, g, s: body(x, g, s, **options), size, opset)


FAMILIES: dict[str, Family] = {f.name: f for f in [
    Family("layernorm", _tokens_builder(_layernorm_op), {
        "pytorch": _tokens_builder(_decomposed_layernorm),
        "mul_square": _tokens_builder(_decomposed_layernorm, square="mul"),
        "reciprocal_sqrt": _tokens_builder(_decomposed_layernorm, square="mul", rstd="reciprocal"),
        "pow_rsqrt": _tokens_builder(_decomposed_layernorm, rstd="pow"),
        "gamma_first": _tokens_builder(_decomposed_layernorm, gamma_first=True),
        "keras": _tokens_builder(_keras_layernorm),
        "moments": _tokens_builder(_decomposed_layernorm, square="mul", moments=True),
        "torch_export": _torch_export(_torch_layernorm, _tokens, opset=14),
    }, frozenset({"nn.layer_norm"})),
    Family("layernorm_no_affine", _tokens_builder(_layernorm_op, affine=False), {
        "pytorch": _tokens_builder(_decomposed_layernorm, affine=False),
        "reciprocal_sqrt": _tokens_builder(_decomposed_layernorm, affine=False, square="mul", rstd="reciprocal"),
        "pow_rsqrt": _tokens_builder(_decomposed_layernorm, affine=False, rstd="pow"),
    }, frozenset({"nn.layer_norm"})),
    Family("rmsnorm", _tokens_builder(_rmsnorm), {
        "llama": _tokens_builder(_rmsnorm, rstd="reciprocal", gamma_first=True),
        "mul_square_reciprocal": _tokens_builder(_rmsnorm, square="mul", rstd="reciprocal"),
        "mul_square_div": _tokens_builder(_rmsnorm, square="mul"),
        "pow_rsqrt": _tokens_builder(_rmsnorm, rstd="pow"),
    }, frozenset({"nn.rms_norm"})),
    Family("residual_layernorm", lambda size: _residual_model(_layernorm_op, size), {
        "pytorch": lambda size: _residual_model(_decomposed_layernorm, size),
        "add_swapped": lambda size: _residual_model(_layernorm_op, size, swapped=True),
    }, frozenset({"nn.skip_layer_norm"})),
    Family("gelu_exact", _elementwise(lambda x, g: g.op("Gelu", x), opset=20), {
        "pytorch": _elementwise(_gelu),
        "mul_rsqrt2": _elementwise(lambda x, g: _gelu(x, g, scale="mul")),
        "half_first": _elementwise(lambda x, g: _gelu(x, g, order="half_first")),
        "swapped": _elementwise(lambda x, g: _gelu(x, g, order="swapped")),
        "torch_export": _torch_export(_functional("gelu"), _mlp_width),
    }, frozenset({"nn.gelu"})),
    Family("gelu_tanh", _elementwise(lambda x, g: g.op("Gelu", x, approximate="tanh"), opset=20), {
        "gpt2_pow": _elementwise(_gelu_tanh),
        "gpt2_mul": _elementwise(lambda x, g: _gelu_tanh(x, g, cube="mul")),
        "gelu_fast": _elementwise(lambda x, g: _gelu_tanh(x, g, factored=True)),
        "torch_export": _torch_export(_functional("gelu", approximate="tanh"), _mlp_width),
    }, frozenset({"nn.gelu"})),
    Family("quick_gelu", _elementwise(lambda x, g: g.op("Mul", x, g.op("Sigmoid", g.op("Mul", g.const(1.702), x)))), {
        "swapped": _elementwise(lambda x, g: g.op("Mul", g.op("Sigmoid", g.op("Mul", x, g.const(1.702))), x)),
    }, frozenset({"nn.quick_gelu"})),
    Family("silu", _elementwise(lambda x, g: g.op("Mul", x, g.op("Sigmoid", x))), {
        "sigmoid_first": _elementwise(lambda x, g: g.op("Mul", g.op("Sigmoid", x), x)),
        "div_exp": _elementwise(lambda x, g: g.op("Div", x, g.op("Add", g.const(1.0), g.op("Exp", g.op("Neg", x))))),
        "torch_export": _torch_export(_functional("silu"), _mlp_width),
    }, frozenset({"nn.silu"})),
    Family("hardswish", _elementwise(lambda x, g: g.op("HardSwish", x)), {
        "pytorch_clip_div": _elementwise(_hardswish),
        "keras_mul_sixth": _elementwise(lambda x, g: _hardswish(x, g, sixth="mul")),
        "minmax_div": _elementwise(lambda x, g: _hardswish(x, g, relu6="minmax")),
        "relu_min_div": _elementwise(lambda x, g: _hardswish(x, g, relu6="relu_min")),
        "hardsigmoid_mul": _elementwise(lambda x, g: g.op("Mul", x, _hardsigmoid_op(x, g))),
        "torch_export": _torch_export(_functional("hardswish"), _mlp_width),
    }, frozenset({"nn.hard_swish"})),
    Family("hardsigmoid", _elementwise(_hardsigmoid_op), {
        "relu6_div": _elementwise(lambda x, g: g.op("Div", _relu6_plus3(g, x), g.const(6.0))),
        "relu6_mul_sixth": _elementwise(lambda x, g: g.op("Mul", _relu6_plus3(g, x), g.const(SIXTH))),
        "clip_affine": _elementwise(lambda x, g: g.op("Clip", g.op("Add", g.op("Mul", x, g.const(SIXTH)), g.const(0.5)),
                                                      g.const(0.0), g.const(1.0))),
        "minmax_div": _elementwise(lambda x, g: g.op("Div", _relu6_plus3(g, x, "minmax"), g.const(6.0))),
    }, frozenset({"nn.hard_sigmoid"})),
    Family("relu6", _elementwise(lambda x, g: _relu6(g, x)), {
        "minmax": _elementwise(lambda x, g: _relu6(g, x, "minmax")),
        "relu_min": _elementwise(lambda x, g: _relu6(g, x, "relu_min")),
        "maxmin": _elementwise(lambda x, g: _relu6(g, x, "maxmin")),
    }, frozenset({"clip"})),
    Family("softmax", _softmax_model(lambda x, g: g.op("Softmax", x, axis=-1)), {
        "stable": _softmax_model(_softmax),
        "stable_reciprocal": _softmax_model(lambda x, g: _softmax(x, g, reciprocal=True)),
        "unshifted": _softmax_model(lambda x, g: _softmax(x, g, stable=False)),
    }, frozenset({"nn.softmax"})),
    Family("linear", _linear("gemm_transposed"), {
        "matmul_add": _linear("matmul_add"),
        "add_swapped": _linear("add_swapped"),
        "matmul_transpose": _linear("matmul_transpose"),
        "gemm": _linear("gemm"),
    }, frozenset({"nn.dense_bias_act"})),
    Family("conv_bn_relu", _conv_bn_relu("folded"), {
        "batchnorm": _conv_bn_relu("batchnorm"),
        "keras_mul_add": _conv_bn_relu("mul_add"),
        "bias_mul_add": _conv_bn_relu("bias_mul_add"),
        "batchnorm_max": _conv_bn_relu("batchnorm_max"),
    }, frozenset({"nn.conv2d_bias_act", "nn.contrib_conv2d_NCHWc_bias_act"})),
    Family("attention", _attention("scores_scaled"), {
        "bert_div": _attention("bert_div"),
        "k_transposed_early": _attention("k_transposed_early"),
        "query_scaled": _attention("query_scaled"),
        "both_scaled": _attention("both_scaled"),
        "einsum": _attention("einsum"),
        "mask_first": _attention("mask_first"),
        "torch_bert": _torch_export(_torch_attention("bert"), _tokens, inputs=_attention_inputs),
        "torch_sdpa": _torch_export(_torch_attention("sdpa"), _tokens, inputs=_attention_inputs),
    }, frozenset({"nn.masked_attention"})),
]}


def spelling_ids(families: Mapping[str, Family] = FAMILIES) -> list[str]:
    """`family/spelling` for every family's canonical spelling (`family/canonical`) and its spellings."""
    return [f"{name}/{s}" for name, f in families.items() for s in ("canonical", *f.spellings)]


def builder(spelling_id: str) -> Builder:
    """The builder of `family/spelling` (`family/canonical` for the canonical one)."""
    family, spelling = spelling_id.split("/")
    f = FAMILIES[family]
    return f.canonical if spelling == "canonical" else f.spellings[spelling]
