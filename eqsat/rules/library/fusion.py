"""Fused forms some targets run as one kernel (ONNX Runtime's contrib ops), and bias_add lowering.

Extraction keeps a fused node only where the cost model can run it: a target without the fused
kernel reports it as illegal (infinite cost) and gets the portable form from the same e-graph.
"""

from __future__ import annotations

import numpy as np

from ir import Expr, relay
from ir.op.registry import make_call

from ..match import Match
from ..pattern import attr, call, choose, const_pat, nn, ops, pvars
from ..rule import rule, ruleset

__all__ = ["FUSION"]

x, w, b, s, g, be, w2, b2 = pvars("x w b s g be w2 b2")


def _vector_bias(m: Match) -> bool:
    """A 1-D bias (the fused op's type relation checks its length; the merge checks the result type)."""
    bias = m.tensor_type("b")
    return bias is not None and bias.ndim == 1


def _last_axis(m: Match) -> bool:
    return m["ln"].axis in (-1, m.ndim("x") - 1)


def _float32_scalar(m: Match) -> bool:
    """One scale that the float32 `alpha` attribute holds exactly (integer products must wrap, so
    the rule is for float matmuls only)."""
    c = m.scalar("c")
    return c is not None and float(np.float32(c)) == c


def _trailing(m: Match) -> int:
    """The axes of `x` after the one `bias_add` adds along: the bias needs as many, of size 1."""
    return m.ndim("x") - 1 - m["ba"].axis % m.ndim("x")


_ACTIVATIONS = [("nn.relu", "relu"), ("sigmoid", "sigmoid"), ("tanh", "tanh")]


def _v(name: str, *shape: int) -> Expr:
    return relay.var(name, shape=shape)


def _conv(layout: str = "NCHW") -> Expr:
    if layout == "NCHW":
        return relay.nn.conv2d(_v("x", 1, 3, 6, 6), _v("w", 4, 3, 3, 3), padding=(1, 1))
    return relay.nn.conv2d(_v("x", 1, 6, 6, 3), _v("w", 3, 3, 3, 4), padding=(1, 1), data_layout="NHWC",
                           kernel_layout="HWIO")


_FUSED = {"conv": "nn.conv2d_bias_act", "dense": "nn.dense_bias_act"}


def _fused(kind: str, activation: str = "none") -> Expr:
    """The fused conv or dense of `kind` with `activation`."""
    if kind == "conv":
        return relay.nn.conv2d_bias_act(_v("x", 1, 3, 6, 6), _v("w", 4, 3, 3, 3), _v("b", 4), padding=(1, 1),
                                        activation=activation)
    return relay.nn.dense_bias_act(_v("x", 2, 5), _v("w", 3, 5), _v("b", 3), activation=activation)


def _activated(kind: str) -> list:
    """One rule per activation: the fused conv or dense of `kind` without activation, followed by
    the activation, takes it in (one that has an activation already does not)."""
    fused = _FUSED[kind]
    return [rule(f"{kind}-bias-{act}", call(fn, call(fused, x, w, b, activation="none", bind_attrs="f")),
                 call(fused, x, w, b, attrs_from="f", activation=act),
                 example=lambda fn=fn: make_call(fn, [_fused(kind)], {}),
                 near_miss=lambda fn=fn: make_call(fn, [_fused(kind, activation="relu")], {}))
            for fn, act in _ACTIVATIONS]


def _plain_denses(m: Match) -> bool:
    """Both dense layers compute in their inputs' dtype (the fused op has no `out_dtype`)."""
    return not m["d1"].out_dtype and not m["d2"].out_dtype


def _feed_forward(approximate: str = "none") -> Expr:
    hidden = relay.nn.gelu(_fused("dense"), approximate=approximate)
    return relay.nn.dense_bias_act(hidden, _v("w2", 4, 3), _v("b2", 4))


def _skip_layer_norm(axis: int = -1) -> Expr:
    size = 5 if axis == -1 else 2
    return relay.nn.layer_norm(relay.add(_v("x", 2, 5), _v("s", 2, 5)), _v("g", size), _v("be", size), axis=axis)

FUSION = ruleset("fusion", [
    rule("conv-bias",        nn.bias_add(nn.conv2d(x, w, bind_attrs="c"), b, axis=1),
         nn.conv2d_bias_act(x, w, b, attrs_from="c", activation="none"),
         when=lambda m: m["c"].data_layout == "NCHW",
         example=lambda: relay.nn.bias_add(_conv(), _v("b", 4)),
         near_miss=lambda: relay.nn.bias_add(_conv("NHWC"), _v("b", 6), axis=1)),
    _activated("conv"),
    rule("dense-bias",       nn.dense(x, w, bind_attrs="d") + b,
         nn.dense_bias_act(x, w, b, attrs_from="d", activation="none"),
         when=_vector_bias,
         example=lambda: relay.add(relay.nn.dense(_v("x", 2, 5), _v("w", 3, 5)), _v("b", 3)),
         near_miss=lambda: relay.add(relay.nn.dense(_v("x", 2, 5), _v("w", 3, 5)), _v("b", 2, 3))),
    _activated("dense"),
    rule("bias-gelu",        nn.gelu(x + b, approximate="none"), nn.bias_gelu(x, b),
         when=_vector_bias, exact=False,  # ONNX Runtime's float16 BiasGelu keeps the sum in float32
         example=lambda: relay.nn.gelu(relay.add(_v("x", 2, 5), _v("b", 5))),
         near_miss=lambda: relay.nn.gelu(relay.add(_v("x", 2, 5), _v("b", 5)), approximate="tanh")),
    rule("feed-forward",     call("nn.dense_bias_act",
                                  call("nn.gelu", call("nn.dense_bias_act", x, w, b, activation="none",
                                                       bind_attrs="d1"), approximate="none"),
                                  w2, b2, activation="none", bind_attrs="d2"),
         call("nn.feed_forward", x, w, b, w2, b2), when=_plain_denses, dtypes="float",
         exact=False,  # the kernels round the hidden values and sum the column chunks in their own order
         example=_feed_forward, near_miss=lambda: _feed_forward(approximate="tanh")),
    rule("skip-layer-norm",  nn.layer_norm(x + s, g, be, bind_attrs="ln"),
         nn.skip_layer_norm(x, s, g, be, attrs_from="ln"),
         when=_last_axis, example=_skip_layer_norm, near_miss=lambda: _skip_layer_norm(axis=0)),
    rule("scaled-matmul",    nn.matmul(x, w, out_dtype="", bind_attrs="mm") * const_pat("c"),
         nn.fused_matmul(x, w, transpose_a=attr("mm", "transpose_a"), transpose_b=attr("mm", "transpose_b"),
                         alpha=lambda m: m.scalar("c")), when=_float32_scalar, dtypes="float",
         example=lambda: relay.multiply(relay.nn.matmul(_v("a", 2, 3), _v("b", 3, 4)), relay.const(np.float32(0.5))),
         near_miss=lambda: relay.multiply(relay.nn.matmul(_v("a", 2, 3), _v("b", 3, 4)),
                                          relay.const(np.array([0.5, 1.0, 2.0, 4.0], "float32")))),
    rule("bias-add-as-add",  nn.bias_add(x, b, bind_attrs="ba"),
         x + choose(_trailing, ops.expand_dims(b, axis=1, num_newaxis=_trailing), b),
         example=lambda: relay.nn.bias_add(_v("x", 1, 4, 3, 3), _v("b", 4)),
         near_miss=lambda: relay.add(_v("x", 1, 4, 3, 3), _v("b", 3))),
])
