"""Constant folding of inference batch norm (TVM's SimplifyInference and conv/batch-norm folding)."""

from __future__ import annotations

import numpy as np

from ir import Expr, const
from ir.op.registry import make_call

from ..match import Match
from ..pattern import call, const_pat, getitem, pvars
from ..rule import rule, ruleset

__all__ = ["FOLDING"]

x, = pvars("x")
_BN = ("g", "be", "mean", "var")


def _scale_shift(m: Match) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel y = x * scale + shift of a batch norm with constant statistics."""
    bn = m["bn"]
    gamma, beta, mean, var = (m.const(n).astype(np.float64) for n in _BN)
    scale = (gamma if bn.scale else 1.0) / np.sqrt(var + bn.epsilon)
    shift = (beta if bn.center else 0.0) - mean * scale
    return scale, shift


def _bn_call(data):
    return getitem(call("nn.batch_norm", data, *(const_pat(n) for n in _BN), bind_attrs="bn"), 0)


def _affine(m: Match) -> Expr:
    scale, shift = _scale_shift(m)
    ndim, axis = m.ndim("x"), m["bn"].axis % m.ndim("x")
    shape = (-1,) + (1,) * (ndim - 1 - axis)
    dtype = m.dtype("x")
    scaled = make_call("multiply", [m.expr("x"), const(scale.reshape(shape).astype(dtype))])
    return make_call("add", [scaled, const(shift.reshape(shape).astype(dtype))])


def _into_conv(m: Match) -> Expr:
    scale, shift = _scale_shift(m)
    weight = m.const("w")
    folded = (weight * scale.reshape(-1, 1, 1, 1)).astype(weight.dtype)
    conv = make_call("nn.conv2d", [m.expr("x"), const(folded)], dict(m["c"]))
    return make_call("nn.bias_add", [conv, const(shift.astype(weight.dtype))], {"axis": 1})


def _conv_foldable(m: Match) -> bool:
    c = m["c"]
    return c.data_layout == "NCHW" and c.kernel_layout == "OIHW" and m["bn"].axis == 1


FOLDING = ruleset("folding", [
    rule("batch-norm-to-affine", _bn_call(x), _affine, exact=False),
    rule("fold-batch-norm-into-conv", _bn_call(call("nn.conv2d", x, const_pat("w"), bind_attrs="c")), _into_conv,
         when=_conv_foldable, exact=False),
])
