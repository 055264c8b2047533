"""Element-wise ops commute with layout ops, so that transposes and reshapes on either side of
them meet and cancel (`transpose-compose`, `transpose-identity`, `reshape-compose` in
`simplify.py`).

    f(transpose(x, p))                    -> transpose(f(x), p)      for element-wise f
    f(reshape(x, s))                      -> reshape(f(x), s)
    g(transpose(a, p), transpose(b, p))   -> transpose(g(a, b), p)   for a binary g, a and b of one shape
    g(transpose(a, p), k)                 -> transpose(g(a, k'), p)  k a constant, k' = k laid out like a
    g(k, transpose(a, p))                 -> transpose(g(k', a), p)

The constant forms keep a layer scale or bias from pinning a residual stream to one layout:
ConvNeXt's blocks compute in NHWC and scale `(C, 1, 1)` NCHW, and once the scale is laid out
like the block's data, the residual sums run in NHWC and the transposes meet the convolutions.

An exporter that works in NHWC around an NCHW op writes `Transpose -> Relu -> Transpose`; after
these rules the two transposes compose to the identity. An element-wise op computes each element
alone, wherever the layout put it; the rules are exact where the kernels agree on that bit for bit
(`POSITION_EXACT`: ONNX Runtime's vectorized transcendental functions and its min / max of signed
zeros do not).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ir import Expr, relay
from ir.op.registry import make_call
from ir.op.shapes import transpose_axes

from ..match import Match
from ..pattern import call, const_pat, ops, pvars
from ..rule import Rewrite, rule, ruleset
from .exact import constant

__all__ = ["LAYOUT_COMMUTE", "UNARY_ELEMENTWISE", "BINARY_ELEMENTWISE"]

x, a, b = pvars("x a b")

#: element-wise ops of one input whose attributes are scalars (no axis)
UNARY_ELEMENTWISE = ("abs", "ceil", "clip", "erf", "exp", "floor", "log", "negative", "round", "rsqrt", "sigmoid",
                     "sqrt", "tanh", "nn.relu", "nn.leaky_relu", "nn.gelu", "nn.silu", "nn.hard_sigmoid",
                     "nn.hard_swish", "nn.quick_gelu")
#: element-wise ops of two inputs (same shapes are required, so no broadcasting is moved)
BINARY_ELEMENTWISE = ("add", "subtract", "multiply", "divide", "maximum", "minimum")
#: ops whose kernels give an element the same bits wherever a layout puts it (IEEE arithmetic, rounding
#: and sign ops); the others are exact=False: ONNX Runtime's vectorized exp / log / tanh / erf / sigmoid
#: round an element differently in the SIMD body and the scalar tail, and its max / min / relu / clip
#: pick the sign of an equal zero by position
POSITION_EXACT = frozenset({"abs", "ceil", "floor", "negative", "round", "sqrt", "add", "subtract", "multiply",
                            "divide"})

_EXAMPLE_ATTRS = {"clip": {"a_min": -1.0, "a_max": 1.0}}


def _unary(op: str, arg: Expr) -> Expr:
    return make_call(op, [arg], _EXAMPLE_ATTRS.get(op, {}))


def _x(*shape: int, name: str = "x") -> Expr:
    return relay.var(name, shape=shape)


def _through(op: str, layout: str) -> Rewrite:
    return rule(f"{op}-through-{layout}", call(op, call(layout, x)), call(layout, call(op, x)),
                exact=op in POSITION_EXACT,
                example=lambda: _unary(op, relay.transpose(_x(2, 3), (1, 0)) if layout == "transpose"
                                       else relay.reshape(_x(2, 3), (3, 2))),
                near_miss=lambda: _unary(op, relay.expand_dims(_x(2, 3), 0)))


def _same_layout(m: Match) -> bool:
    return m["t1"].axes == m["t2"].axes and m.type("a") == m.type("b")


def _binary(op: str) -> Rewrite:
    def pair(axes_b: tuple[int, ...], shape_b: tuple[int, ...] = (2, 3)) -> Expr:
        return make_call(op, [relay.transpose(_x(2, 3, name="a"), (1, 0)),
                              relay.transpose(_x(*shape_b, name="b"), axes_b)], {})
    return rule(f"{op}-through-transpose",
                call(op, ops.transpose(a, bind_attrs="t1"), ops.transpose(b, bind_attrs="t2")),
                ops.transpose(call(op, a, b), attrs_from="t1"), when=_same_layout, exact=op in POSITION_EXACT,
                example=lambda: pair((1, 0)),
                near_miss=lambda: pair((0, 1), (3, 2)))


def _axes(m: Match) -> tuple[int, ...]:
    return transpose_axes(m["t"].axes, m.ndim("a"))


def _constant_fits(m: Match) -> bool:
    """`k` broadcasts into the transposed operand without growing it, and every shape is known."""
    shape = m.root_type().shape
    return (all(isinstance(d, int) for d in shape) and m.const("k").ndim <= len(shape)
            and tuple(shape) == tuple(m.shape("a")[i] for i in _axes(m)))


def _constant_through(op: str, constant_first: bool) -> Rewrite:
    """`g(transpose(a, p), k) -> transpose(g(a, k'), p)` (or with `k` first), where `k'` holds the
    values of `k` broadcast to the operand's rank and laid out like `a`: the same pairs of elements
    meet, so the result is the same bit for bit."""
    moved = ops.transpose(a, bind_attrs="t")
    operands = (const_pat("k"), moved) if constant_first else (moved, const_pat("k"))

    def build(m: Match) -> Expr:
        axes = _axes(m)
        k = m.const("k")
        laid_out = constant(k.reshape((1,) * (len(axes) - k.ndim) + k.shape).transpose(np.argsort(axes)))
        args = [laid_out, m.expr("a")] if constant_first else [m.expr("a"), laid_out]
        return make_call("transpose", [make_call(op, args, {})], {"axes": list(axes)})

    def example(shape: tuple[int, ...]) -> Callable[[], Expr]:
        def program() -> Expr:
            moved_x = relay.transpose(_x(2, 3, 4), (0, 2, 1))
            k = relay.const(np.linspace(0.5, 2.0, int(np.prod(shape)), dtype="float32").reshape(shape))
            return make_call(op, [k, moved_x] if constant_first else [moved_x, k], {})
        return program

    side = "left" if constant_first else "right"
    return rule(f"{op}-{side}-constant-through-transpose", call(op, *operands), build, when=_constant_fits,
                exact=op in POSITION_EXACT,
                example=example((3,)), near_miss=example((5, 1, 1, 3)))


LAYOUT_COMMUTE = ruleset("layout-commute", [
    *(_through(op, layout) for op in UNARY_ELEMENTWISE for layout in ("transpose", "reshape")),
    *(_binary(op) for op in BINARY_ELEMENTWISE),
    *(_constant_through(op, first) for op in BINARY_ELEMENTWISE for first in (False, True)),
])
