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


def _vector_bias(m: Match) -> bool:
    """A 1-D bias (the fused op's type relation checks its length; the merge checks the result type)."""
    bias = m.tensor_type("b")
    return bias is not None and bias.ndim == 1


def _last_axis(m: Match) -> bool:
    return m["ln"].axis in (-1, m.ndim("x") - 1)


def _scaled_matmul(m: Match) -> Expr:
    mm = m["mm"]
    return make_call("nn.fused_matmul", [m.expr("x"), m.expr("w")],
                     {"transpose_a": mm.transpose_a, "transpose_b": mm.transpose_b,
                      "alpha": m.scalar("c")})


def _float32_scalar(m: Match) -> bool:
    """One scale that the float32 `alpha` attribute holds exactly (integer products must wrap, so
    the rule is for float matmuls only)."""
    c = m.scalar("c")
    return c is not None and float(np.float32(c)) == c


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
    rule("conv-bias",        call("nn.bias_add", call("nn.conv2d", x, w, bind_attrs="c"), b, axis=1),
         call("nn.conv2d_bias_act", x, w, b, attrs_from="c", activation="none"),
         when=lambda m: m["c"].data_layout == "NCHW"),
    [rule(f"conv-bias-{act}", call(op, call("nn.conv2d_bias_act", x, w, b, activation="none", bind_attrs="f")),
          call("nn.conv2d_bias_act", x, w, b, attrs_from="f", activation=act)) for op, act in _ACTIVATIONS],
    rule("dense-bias",       call("add", call("nn.dense", x, w, bind_attrs="d"), b),
         call("nn.dense_bias_act", x, w, b, attrs_from="d", activation="none"),
         when=_vector_bias),
    [rule(f"dense-bias-{act}", call(op, call("nn.dense_bias_act", x, w, b, activation="none", bind_attrs="f")),
          call("nn.dense_bias_act", x, w, b, attrs_from="f", activation=act)) for op, act in _ACTIVATIONS],
    rule("bias-gelu",        call("nn.gelu", call("add", x, b), approximate="none"), call("nn.bias_gelu", x, b),
         when=_vector_bias),
    rule("skip-layer-norm",  call("nn.layer_norm", call("add", x, s), g, be, bind_attrs="ln"),
         call("nn.skip_layer_norm", x, s, g, be, attrs_from="ln"),
         when=_last_axis),
    rule("scaled-matmul",    call("multiply", call("nn.matmul", x, w, out_dtype="", bind_attrs="mm"), const_pat("c")),
         _scaled_matmul, when=_float32_scalar, dtypes="float"),
    rule("bias-add-as-add",  call("nn.bias_add", x, b, bind_attrs="ba"), _bias_add_as_add),
])
