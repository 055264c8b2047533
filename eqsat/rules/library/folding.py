"""Constant folding of inference batch norm (TVM's SimplifyInference and conv/batch-norm folding)."""

from __future__ import annotations

import numpy as np

from ir import Expr, relay
from ir.op.registry import make_call

from ...egraph.terms import Kind
from ..match import Match
from ..pattern import call, const_pat, getitem, pvars
from ..rule import rule, ruleset
from .exact import constant, rounded, subnormal

__all__ = ["FOLDING"]

x, = pvars("x")
_BN = ("g", "be", "mean", "var")
_ANY = np.True_  # a shift that underflows moves an output by less than the dtype's smallest normal: allowed


def _scale_shift(m: Match) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel y = x * scale + shift of a batch norm with constant statistics (in float64)."""
    bn = m["bn"]
    gamma, beta, mean, var = (m.const(n).astype(np.float64) for n in _BN)
    with np.errstate(all="ignore"):
        scale = (gamma if bn.scale else 1.0) / np.sqrt(var + bn.epsilon)
        shift = (beta if bn.center else 0.0) - mean * scale
    return scale, shift


def _bn_call(data):
    return getitem(call("nn.batch_norm", data, *(const_pat(n) for n in _BN), bind_attrs="bn"), 0)


def _affine(m: Match) -> Expr | None:
    """x * scale + shift, both rounded once to x's dtype; refused where either is not finite (a
    negative variance, an overflow) or the scale underflows in that dtype."""
    scale, shift = _scale_shift(m)
    ndim, axis = m.ndim("x"), m["bn"].axis % m.ndim("x")
    shape = (-1,) + (1,) * (ndim - 1 - axis)
    dtype = m.dtype("x")
    scale, shift = rounded(scale.reshape(shape), dtype), rounded(shift.reshape(shape), dtype, exempt=_ANY)
    if scale is None or shift is None or not (np.isfinite(scale).all() and np.isfinite(shift).all()):
        return None
    scaled = make_call("multiply", [m.expr("x"), constant(scale)])
    return make_call("add", [scaled, constant(shift)])


def _into_conv(m: Match) -> Expr | None:
    """conv(x, w * scale) + shift; refused where the scaled weight or the shift overflows or
    underflows in the weight's dtype (a float16 weight of 1e3 times a scale of 1e3 is inf)."""
    scale, shift = _scale_shift(m)
    weight = m.const("w")
    with np.errstate(all="ignore"):
        product = weight.astype(np.float64) * scale.reshape(-1, 1, 1, 1)
    folded = rounded(product, weight.dtype.name, exempt=subnormal(weight))
    shift = rounded(shift, weight.dtype.name, exempt=_ANY)
    if folded is None or shift is None or not (np.isfinite(folded).all() and np.isfinite(shift).all()):
        return None
    conv = make_call("nn.conv2d", [m.expr("x"), constant(folded)], dict(m["c"]))
    return make_call("nn.bias_add", [conv, constant(shift)], {"axis": 1})


def _conv_foldable(m: Match) -> bool:
    return _into_conv_layouts(m["c"]) and m["bn"].axis == 1


def _into_conv_layouts(c) -> bool:
    return c.data_layout == "NCHW" and c.kernel_layout == "OIHW"


def _not_after_a_foldable_conv(m: Match) -> bool:
    """The batch norm's data is not a convolution by a constant weight that `fold-batch-norm-into-conv`
    folds it into: there the affine form would reach the same program by a second path (the
    channel-scale and -shift rules), with weights rounded twice, each blocked and laid out again by
    the layout rules (a third of a ResNet's saturation)."""
    return m["bn"].axis != 1 or not any(_into_conv_layouts(attrs) and m.holds(operands[1], Kind.CONST)
                                        for attrs, operands in m.calls("x", "nn.conv2d"))


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
    rule("batch-norm-to-affine", _bn_call(x), _affine, exact=False, when=_not_after_a_foldable_conv,
         example=lambda: _bn(relay.var("x", shape=(2, 4, 3)), 4),
         near_miss=lambda: _bn(relay.var("x", shape=(2, 4, 3)), 4, gamma=relay.var("g", shape=(4,)))),
    rule("fold-batch-norm-into-conv", _bn_call(call("nn.conv2d", x, const_pat("w"), bind_attrs="c")), _into_conv,
         when=_conv_foldable, exact=False, example=lambda: _bn(_conv(), 4),
         near_miss=[lambda: _bn(_conv(relay.var("w", shape=(4, 3, 3, 3))), 4),  # a weight known only at run time
                    lambda: _bn(_conv(layout="NHWC"), 4, axis=3)]),               # channels last
])
