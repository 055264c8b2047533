"""Fused forms some targets run as one kernel (ONNX Runtime's contrib ops), and bias_add lowering.

Extraction keeps a fused node only where the cost model can run it: a target without the fused
kernel reports it as illegal (infinite cost) and gets the portable form from the same e-graph.
"""

from __future__ import annotations

import numpy as np

from ir import Expr
from ir.op.registry import make_call

from ..match import Match
from ..pattern import call, const_pat, pvars
from ..rule import rule, ruleset

__all__ = ["FUSION"]

x, w, b, s, g, be = pvars("x w b s g be")


def _conv_bias(m: Match) -> Expr:
    return make_call("nn.conv2d_bias_act", [m.expr("x"), m.expr("w"), m.expr("b")], {**m["c"], "activation": "none"})


def _with_activation(op: str, activation: str):
    def build(m: Match) -> Expr:
        attrs = {**m["f"], "activation": activation}
        return make_call(op, [m.expr("x"), m.expr("w"), m.expr("b")], attrs)
    return build


def _dense_bias(m: Match) -> Expr:
    return make_call("nn.dense_bias_act", [m.expr("x"), m.expr("w"), m.expr("b")], {**m["d"], "activation": "none"})


def _vector_bias(m: Match) -> bool:
    """A 1-D bias (the fused op's type relation checks its length; the merge checks the result type)."""
    bias = m.tensor_type("b")
    return bias is not None and bias.ndim == 1


def _skip_layer_norm(m: Match) -> Expr:
    return make_call("nn.skip_layer_norm", [m.expr("x"), m.expr("s"), m.expr("g"), m.expr("be")], dict(m["ln"]))


def _last_axis(m: Match) -> bool:
    return m["ln"].axis in (-1, m.ndim("x") - 1)


def _scaled_matmul(m: Match) -> Expr:
    mm = m["mm"]
    return make_call("nn.fused_matmul", [m.expr("x"), m.expr("w")],
                     {"transpose_a": mm.transpose_a, "transpose_b": mm.transpose_b,
                      "alpha": float(m.const("c").reshape(-1)[0])})


def _float32_scalar(m: Match) -> bool:
    """One scale that the float32 `alpha` attribute holds exactly (integer products must wrap, so
    the rule is for float matmuls only)."""
    c = m.const("c")
    return c.size == 1 and bool(np.float32(c.reshape(-1)[0]) == c.reshape(-1)[0])


def _bias_add_as_add(m: Match) -> Expr | None:
    ndim = m.ndim("x")
    axis = m["ba"].axis % ndim
    bias = m.expr("b")
    trailing = ndim - 1 - axis
    if trailing:
        bias = make_call("expand_dims", [bias], {"axis": 1, "num_newaxis": trailing})
    return make_call("add", [m.expr("x"), bias])


_ACTIVATIONS = [("nn.relu", "relu"), ("sigmoid", "sigmoid"), ("tanh", "tanh")]

FUSION = ruleset("fusion", [
    rule("conv-bias",        call("nn.bias_add", call("nn.conv2d", x, w, bind_attrs="c"), b, axis=1), _conv_bias,
         when=lambda m: m["c"].data_layout == "NCHW"),
    [rule(f"conv-bias-{act}", call(op, call("nn.conv2d_bias_act", x, w, b, activation="none", bind_attrs="f")),
          _with_activation("nn.conv2d_bias_act", act)) for op, act in _ACTIVATIONS],
    rule("dense-bias",       call("add", call("nn.dense", x, w, bind_attrs="d"), b), _dense_bias,
         when=_vector_bias),
    [rule(f"dense-bias-{act}", call(op, call("nn.dense_bias_act", x, w, b, activation="none", bind_attrs="f")),
          _with_activation("nn.dense_bias_act", act)) for op, act in _ACTIVATIONS],
    rule("bias-gelu",        call("nn.gelu", call("add", x, b), approximate="none"), call("nn.bias_gelu", x, b),
         when=_vector_bias),
    rule("skip-layer-norm",  call("nn.layer_norm", call("add", x, s), g, be, bind_attrs="ln"), _skip_layer_norm,
         when=_last_axis),
    rule("scaled-matmul",    call("multiply", call("nn.matmul", x, w, out_dtype="", bind_attrs="mm"), const_pat("c")),
         _scaled_matmul, when=_float32_scalar, dtypes="float"),
    rule("bias-add-as-add",  call("nn.bias_add", x, b, bind_attrs="ba"), _bias_add_as_add),
])
