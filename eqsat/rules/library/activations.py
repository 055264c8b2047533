"""Activations ONNX Runtime runs as one kernel, from the spellings exporters write.

    pow(x, 3)                            -> (x * x) * x                 an axiom: the two tanh GELU spellings meet
    (x * (tanh((x + ((x * x) * x) * 0.044715) * sqrt(2/pi)) + 1)) * 0.5, the inner sum also as
    x * ((x * x) * 0.044715 + 1) (HF's gelu_fast, BLOOM)
                                         -> nn.gelu(x, "tanh")           FastGelu
    nn.gelu(x + b, "tanh"), b 1-D        -> nn.bias_gelu(x, b, "tanh")   FastGelu with its bias
    x * sigmoid(x * a), a a scalar       -> nn.quick_gelu(x, alpha=a)    QuickGelu
    act(dense / conv2d + bias), act leaky relu, clip (conv only) or hard sigmoid
                                         -> the fused op with act         FusedGemm / FusedConv
    f(strided_slice(x)), f an activation -> strided_slice(f(x))          a padded NCHWc conv takes f in

The tanh GELU is an approximation and never equal to the exact one (`nn.gelu(approximate="none")`);
its idiom holds only where every constant is the formula's (to float32 precision, or rounded to the
constant's own dtype). A scalar `a` of QuickGelu must be one float32 value (the kernel's `alpha`);
`a == 1` is SiLU (`nn.silu`, exported as QuickGelu with alpha 1: bit for bit ONNX Runtime's `Sigmoid`
and `Mul`, and 1.7x faster than them in float32 on one core, 1x128x768). The crop rules are layout
rules (`layout`): only there does a convolution padded to whole channel blocks wait for the
activation behind its crop.

Gated feed-forwards (SwiGLU `silu(gate) * up`, GeGLU `gelu(gate) * up`) fuse their activation only:
ONNX Runtime 1.32 defines `com.microsoft.SwiGLU` (and ONNX `SwiGLU`, opset 28) but has no CPU kernel
for it, so the gate becomes QuickGelu / FastGelu and the product stays a `Mul`.
"""

from __future__ import annotations

import math

import numpy as np

from ir import Expr, relay
from ir.op.registry import make_call

from ..match import Match
from ..pattern import Pat, attr, call, choose, const_pat, nn, ops, pvars
from ..rule import Rewrite, rule, ruleset
from .fusion import _fused, _vector_bias

__all__ = ["ACTIVATIONS", "ACTIVATION_LAYOUT"]

x, w, b = pvars("x w b")
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_CUBE_COEFFICIENT = 0.044715


def _v(*shape: int, name: str = "x") -> Expr:
    return relay.var(name, shape=shape)


def _c(value) -> Expr:
    return relay.const(np.asarray(value, "float32"))


def _close(m: Match, name: str, want: float) -> bool:
    """The constant bound to `name` is one value, `want` to float32 precision or `want` rounded to its dtype
    (a float16 model holds the formula's constants in float16)."""
    value = m.scalar(name)
    return value is not None and (abs(value - want) <= 1e-6 * abs(want)
                                  or value == float(np.asarray(want, m.const(name).dtype)))


def _is_gelu_tanh(m: Match) -> bool:
    return _close(m, "k", _CUBE_COEFFICIENT) and _close(m, "s", _SQRT_2_OVER_PI) and _keeps_shape(m)


def _keeps_shape(m: Match) -> bool:
    return m.type("x") == m.root_type()


def _float32_scale(m: Match) -> bool:
    """`a` of `x * sigmoid(x * a)` is one finite float32 value (QuickGelu's alpha)."""
    alpha = m.scalar("a")
    return alpha is not None and math.isfinite(alpha) and float(np.float32(alpha)) == alpha and _keeps_shape(m)


def _canonical_gelu_tanh(k: float = _CUBE_COEFFICIENT, factored: bool = False) -> Expr:
    """The canonical tanh GELU; `factored`: its inner sum as `x * (k * x^2 + 1)`."""
    v = _v(2, 8)
    square = relay.multiply(v, v)
    if factored:
        inner = relay.multiply(v, relay.add(relay.multiply(square, _c(k)), _c(1.0)))
    else:
        inner = relay.add(v, relay.multiply(relay.multiply(square, v), _c(k)))
    phi = relay.tanh(relay.multiply(inner, _c(_SQRT_2_OVER_PI)))
    return relay.multiply(relay.multiply(v, relay.add(phi, _c(1.0))), _c(0.5))


def _gelu_tanh(inner: Pat) -> Pat:
    """`(x * (tanh(inner * s) + 1)) * 0.5`."""
    return (x * (ops.tanh(inner * const_pat("s")) + 1.0)) * 0.5


def _sigmoid_gated(alpha) -> Expr:
    v = _v(2, 8)
    return relay.multiply(v, relay.sigmoid(relay.multiply(v, _c(alpha))))


def _through_crop(op: str, attrs: dict) -> Rewrite:
    """An element-wise activation computes each element alone, so it commutes with a crop."""
    return rule(f"{op.split('.')[-1]}-through-crop", call(op, ops.strided_slice(x)), ops.strided_slice(call(op, x)),
                example=lambda: make_call(op, [relay.strided_slice(_v(1, 8, 3, 3), [0], [6], axes=[1])], attrs),
                near_miss=lambda: make_call(op, [relay.transpose(_v(1, 8, 3, 3), (0, 2, 3, 1))], attrs))


_CUBE = (x * x) * x
_FUSED = {"dense": "nn.dense_bias_act", "conv": "nn.conv2d_bias_act"}
#: activations with parameters that the fused conv / dense take in: op -> (activation, its attributes, example's)
_PARAMETERIZED = {"nn.leaky_relu": ("leaky_relu", ("alpha",), {"alpha": 0.1}),
                  "clip": ("clip", ("a_min", "a_max"), {"a_min": 0.0, "a_max": 6.0}),
                  "nn.hard_sigmoid": ("hard_sigmoid", ("alpha", "beta"), {"alpha": 0.2, "beta": 0.5})}


def _takes_in(kind: str, op: str) -> Rewrite:
    """The fused conv or dense of `kind` without activation, followed by `op`, takes it in with its parameters
    (FusedGemm has no Clip: no dense rule for it)."""
    fused, (activation, kept, attrs) = _FUSED[kind], _PARAMETERIZED[op]
    return rule(f"{kind}-bias-{activation}", call(op, call(fused, x, w, b, activation="none"), bind_attrs="act"),
                call(fused, x, w, b, activation=activation, **{k: attr("act", k) for k in kept}),
                example=lambda: make_call(op, [_fused(kind)], attrs),
                near_miss=lambda: make_call(op, [_fused(kind, activation="relu")], attrs))


ACTIVATIONS = ruleset("activations", [
    rule("cube-as-product", ops.power(x, 3.0), _CUBE, when=_keeps_shape, dtypes="float", exact=False,
         example=lambda: relay.power(_v(2, 3), _c(3.0)), near_miss=lambda: relay.power(_v(2, 3), _c(3.5))),
    rule("gelu-tanh", _gelu_tanh(x + _CUBE * const_pat("k")), nn.gelu(x, approximate="tanh"), when=_is_gelu_tanh,
         dtypes="float", exact=False,
         example=_canonical_gelu_tanh, near_miss=lambda: _canonical_gelu_tanh(k=0.044)),
    rule("gelu-tanh-factored", _gelu_tanh(x * ((x * x) * const_pat("k") + 1.0)), nn.gelu(x, approximate="tanh"),
         when=_is_gelu_tanh, dtypes="float", exact=False,
         example=lambda: _canonical_gelu_tanh(factored=True),
         near_miss=lambda: _canonical_gelu_tanh(k=0.044, factored=True)),
    rule("bias-gelu-tanh", nn.gelu(x + b, approximate="tanh"), nn.bias_gelu(x, b, approximate="tanh"),
         when=_vector_bias, dtypes="float", exact=False,
         example=lambda: relay.nn.gelu(relay.add(_v(2, 5), _v(5, name="b")), approximate="tanh"),
         near_miss=lambda: relay.nn.gelu(relay.add(_v(2, 5), _v(2, 5, name="b")), approximate="tanh")),
    rule("quick-gelu", x * ops.sigmoid(x * const_pat("a")),       # SiLU when a is 1
         choose(lambda m: m.scalar("a") == 1.0, nn.silu(x), nn.quick_gelu(x, alpha=lambda m: m.scalar("a"))),
         when=_float32_scale,
         dtypes="float", exact=False,
         example=lambda: _sigmoid_gated(1.702), near_miss=lambda: _sigmoid_gated([1.702] * 8)),
    *(_takes_in(kind, op) for kind in _FUSED for op in _PARAMETERIZED if (kind, op) != ("dense", "clip")),
])

#: activations a blocked convolution takes in (relu reaches a padded one inside the plain fused conv)
_CROPPED = {"clip": {"a_min": 0.0, "a_max": 6.0}, "nn.leaky_relu": {"alpha": 0.1}, "nn.hard_sigmoid": {},
            "nn.hard_swish": {}, "sigmoid": {}, "tanh": {}}
ACTIVATION_LAYOUT = ruleset("activation-layout", [_through_crop(op, attrs) for op, attrs in _CROPPED.items()])
