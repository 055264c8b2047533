"""Activation and normalization ops that exporters spell out and ONNX (Runtime) has kernels for.

Each is one op so that a rewrite can recognise the idiom once and a target can run it as one
kernel: `HardSigmoid`, `HardSwish`, ORT's `QuickGelu`, `RMSNormalization` (ORT's
`SimplifiedLayerNormalization`). SiLU has no ONNX op; it exports as `Sigmoid` and `Mul`.
Products with a gate keep IEEE semantics: at x = -inf the gate is 0 and the result NaN, as the
ONNX definitions and ONNX Runtime give.
"""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..types import Type
from .nn import _channel_params
from .registry import AttrField, OpPattern, register_op
from .tensor import float_unary_rel

#: ONNX HardSwish's fixed gate: HardSigmoid with alpha 1/6 and beta 1/2
HARD_SWISH_ALPHA, HARD_SWISH_BETA = 1 / 6, 0.5


def rms_norm_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    float_unary_rel(args[:1], attrs)
    return _channel_params(args, attrs.axis, ["gamma"])


E = OpPattern.ELEMWISE
register_op("nn.hard_sigmoid", ["data"], float_unary_rel, E,
            attrs=[AttrField("alpha", "float", 0.2), AttrField("beta", "float", 0.5)],
            doc="clip(alpha * x + beta, 0, 1) (ONNX HardSigmoid).")
register_op("nn.hard_swish", ["data"], float_unary_rel, E,
            doc="x * hard_sigmoid(x, alpha=1/6, beta=0.5), i.e. x * clip(x / 6 + 0.5, 0, 1) (ONNX HardSwish).")
register_op("nn.silu", ["data"], float_unary_rel, E, doc="x * sigmoid(x) (SiLU, also called swish).")
register_op("nn.quick_gelu", ["data"], float_unary_rel, E, attrs=[AttrField("alpha", "float", 1.702)],
            doc="x * sigmoid(alpha * x), the sigmoid approximation of GELU (ORT QuickGelu).")
register_op("nn.rms_norm", ["data", "gamma"], rms_norm_rel, OpPattern.OPAQUE,
            attrs=[AttrField("epsilon", "float", 1e-5), AttrField("axis", "int", -1)],
            doc="x / sqrt(mean(x^2 over axis) + epsilon) * gamma, gamma 1-D along `axis` "
                "(ONNX RMSNormalization over the last axis).")
