"""Constant folding of inference batch norm (TVM's SimplifyInference and conv/batch-norm folding)."""

from __future__ import annotations

import numpy as np

from ir import Expr, const, relay
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


_rng = np.random.default_rng(7)


def _const(*shape: int, positive: bool = False) -> Expr:
    return relay.const((_rng.random(shape) + (0.5 if positive else -0.5)).astype("float32"))


def _bn(data: Expr, channels: int, gamma: Expr | None = None, axis: int = 1) -> Expr:
    """Inference batch norm of `data` with constant statistics (and `gamma`, unless given)."""
    gamma = _const(channels) if gamma is None else gamma
    return relay.nn.batch_norm(data, gamma, _const(channels), _const(channels), _const(channels, positive=True),
                               axis=axis)[0]


def _conv(weight: Expr | None = None, layout: str = "NCHW") -> Expr:
    """A 3x3 convolution of 3 to 4 channels (a constant weight unless given)."""
    if layout == "NCHW":
        data, kernel_layout = relay.var("x", shape=(1, 3, 6, 6)), "OIHW"
    else:
        data, kernel_layout = relay.var("x", shape=(1, 6, 6, 3)), "HWIO"
    if weight is None:
        weight = _const(4, 3, 3, 3) if layout == "NCHW" else _const(3, 3, 3, 4)
    return relay.nn.conv2d(data, weight, padding=(1, 1), data_layout=layout, kernel_layout=kernel_layout)


FOLDING = ruleset("folding", [
    rule("batch-norm-to-affine", _bn_call(x), _affine, exact=False,
         example=lambda: _bn(relay.var("x", shape=(2, 4, 3)), 4),
         near_miss=lambda: _bn(relay.var("x", shape=(2, 4, 3)), 4, gamma=relay.var("g", shape=(4,)))),
    rule("fold-batch-norm-into-conv", _bn_call(call("nn.conv2d", x, const_pat("w"), bind_attrs="c")), _into_conv,
         when=_conv_foldable, exact=False, example=lambda: _bn(_conv(), 4),
         near_miss=[lambda: _bn(_conv(relay.var("w", shape=(4, 3, 3, 3))), 4),  # a weight known only at run time
                    lambda: _bn(_conv(layout="NHWC"), 4, axis=3)]),               # channels last
])
