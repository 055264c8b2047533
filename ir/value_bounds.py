"""Bounds on the values a program computes, from its weights and its ops alone: for an expression, an
interval (lo, hi) that holds every value it takes on any input, or None where it may be NaN (or no
bound is known). Ends may be infinite (-inf in a mask: a value that may be -inf).

Graph inputs are unbounded, but an integer input cast to a float is finite, and a norm's result is
bounded whatever finite values it normalizes: so from token ids through embeddings, norms and
dense layers (`nn.dense` with constant weights) the values of a transformer's layers have finite
bounds, layer after layer. The export uses them to leave out guards a kernel needs only for
non-finite values (`ir.frontend.export_attention`). Float arithmetic is bounded in float64 with a
relative slack, then checked against the float32 range (a bound past it may overflow to infinity).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .expr import Call, Constant, Expr, Tuple, TupleGetItem, Var
from .op.registry import Op
from .types import TensorType
from .visitor import post_order

__all__ = ["Interval", "ValueBounds"]

Interval = tuple[float, float]
_SLACK = 1.0 + 1e-5
"""how far past its exact bound a float32 result may round."""
_FLOAT32_OVERFLOW = float(np.finfo(np.float32).max) * (1.0 + 2.0**-24)
"""the least magnitude float32 rounding sends to infinity."""
_SAME = {"reshape", "transpose", "expand_dims", "squeeze", "strided_slice", "dyn.strided_slice", "dyn.reshape",
         "dyn.expand", "broadcast_to", "tile", "copy", "take", "gather", "gather_nd", "split", "reverse"}
"""ops whose every result value is one of their first argument's."""


def _fits(lo: float, hi: float) -> Interval:
    """(lo, hi) widened by the rounding slack, an end past float32's range made infinite."""
    def widen(x: float) -> float:
        x = x * _SLACK if x > 0 else x / _SLACK if x < 0 else x
        return x if abs(x) < _FLOAT32_OVERFLOW else math.copysign(math.inf, x)
    return widen(lo), widen(hi)


def _finite(b: Interval | None) -> bool:
    return b is not None and math.isfinite(b[0]) and math.isfinite(b[1])


def _magnitude(b: Interval) -> float:
    return max(abs(b[0]), abs(b[1]))


def _add(a: Interval | None, b: Interval | None) -> Interval | None:
    if a is None or b is None or (a[0] == -math.inf and b[1] == math.inf) or (a[1] == math.inf and b[0] == -math.inf):
        return None  # -inf + inf is NaN
    return _fits(a[0] + b[0], a[1] + b[1])


def _multiply(a: Interval | None, b: Interval | None) -> Interval | None:
    if a is None or b is None:
        return None
    if (not _finite(a) and b[0] <= 0 <= b[1]) or (not _finite(b) and a[0] <= 0 <= a[1]):
        return None  # 0 x inf is NaN
    products = [x * y for x in a for y in b]
    return _fits(min(products), max(products))


def _norm(call: Call, args: list[Interval | None], scale: int, shift: int | None) -> Interval | None:
    """A layer or RMS norm of finite data (its epsilon above 0): each normalized value at most sqrt(n)
    in magnitude over an axis of n, then scaled and shifted."""
    ty = call.args[0].checked_type
    n = ty.shape[call.attrs.axis] if isinstance(ty, TensorType) and ty.shape else None
    if not _finite(args[0]) or not isinstance(n, int) or not call.attrs.epsilon > 0:
        return None
    root = math.sqrt(n)
    out = _multiply((-root, root), args[scale] if getattr(call.attrs, "scale", True) else (1.0, 1.0))
    return out if shift is None or not getattr(call.attrs, "center", True) else _add(out, args[shift])


def _dense(call: Call, args: list[Interval | None], weight: np.ndarray | None, bias: int | None) -> Interval | None:
    """`x @ W^T` of finite x (W: (units, depth)): each output at most |x| times its row's absolute sum."""
    if not _finite(args[0]) or weight is None or weight.ndim != 2 or not np.isfinite(weight).all():
        return None
    reach = float(np.abs(weight.astype(np.float64)).sum(axis=1).max(initial=0.0)) * _magnitude(args[0])
    out = _fits(-reach, reach)
    return out if bias is None else _add(out, args[bias])


def _dense_bias_act(call: Call, args: list[Interval | None], vb: "ValueBounds") -> Interval | None:
    """`nn.dense_bias_act`: the dense layer plus its bias, through its activation."""
    out = _dense(call, args, vb.array(call.args[1]), 2)
    act, attrs = call.attrs.activation, call.attrs
    if out is None or act == "none":
        return out
    if act in ("sigmoid", "hard_sigmoid"):
        return 0.0, 1.0
    if act == "tanh":
        return -1.0, 1.0
    if act == "relu":
        return max(out[0], 0.0), max(out[1], 0.0)
    if act == "clip":
        return min(max(out[0], attrs.a_min), attrs.a_max), min(max(out[1], attrs.a_min), attrs.a_max)
    if act == "leaky_relu" and 0 <= attrs.alpha <= 1:
        return min(out[0], attrs.alpha * out[0]), max(out[1], attrs.alpha * out[1])
    return None


def _attention(call: Call, args: list[Interval | None], _: object = None) -> Interval | None:
    """A weighted mean of V's rows (0 for a row the op makes 0): V's bound and 0, where no score may be
    NaN or +inf (`scores_finite`)."""
    value = args[2]
    if value is None or not ValueBounds.scores_finite(call, args):
        return None
    return min(value[0], 0.0), max(value[1], 0.0)


class ValueBounds:
    """Bounds of the expressions of one program (memoized); `weights(var)` gives a parameter's array
    (its weights) or None (a graph input)."""

    def __init__(self, weights: Callable[[Var], np.ndarray | None] = lambda var: None):
        self._weights = weights
        self._known: dict[Expr, Interval | None] = {}

    def of(self, expr: Expr) -> Interval | None:
        """The interval of `expr`'s values (of every field, for a tuple), or None (see the module)."""
        for node in post_order(expr, stop=lambda e: e in self._known):
            self._known[node] = self._bound(node)
        return self._known[expr]

    def array(self, expr: Expr) -> np.ndarray | None:
        """The value of a constant or of a weight."""
        if isinstance(expr, Constant):
            return np.asarray(expr.data)
        return self._weights(expr) if isinstance(expr, Var) else None

    @staticmethod
    def scores_finite(call: Call, args: list[Interval | None]) -> bool:
        """Whether no score of attention `call` (Q K^T scaled, plus the mask) may be NaN or +inf: Q and
        K finite and their products within float32, the mask never NaN or +inf (-inf hides a key)."""
        cached = getattr(call.op, "name", "") == "nn.cached_attention"
        q, k = args[0], _union(args[1], args[3]) if cached else args[1]  # a cache's keys: the past's too
        ty = call.args[0].checked_type
        depth = ty.shape[-1] if isinstance(ty, TensorType) and ty.shape else None
        if not (_finite(q) and _finite(k) and isinstance(depth, int)):
            return False
        reach = depth * _magnitude(q) * _magnitude(k) * abs(getattr(call.attrs, "scale", 1.0))
        scores = _fits(-reach, reach)
        mask = args[5] if cached else args[3] if len(call.args) > 3 else (0.0, 0.0)
        return _finite(scores) and _add(scores, mask) is not None and _add(scores, mask)[1] < math.inf

    def _bound(self, expr: Expr) -> Interval | None:
        if isinstance(expr, (Constant, Var)):
            value = self.array(expr)
            if value is None or value.size == 0 or value.dtype.kind not in "fiub":
                return None
            if value.dtype.kind == "f" and np.isnan(value).any():
                return None
            return float(value.min()), float(value.max())
        if isinstance(expr, TupleGetItem):
            return self._known.get(expr.tuple_value)
        if isinstance(expr, Tuple):
            fields = [self._known.get(f) for f in expr.fields]
            return None if any(f is None for f in fields) else (min(f[0] for f in fields), max(f[1] for f in fields))
        if not (isinstance(expr, Call) and isinstance(expr.op, Op)):
            return None
        args = [self._known.get(a) for a in expr.args]
        return _RULES.get(expr.op.name, lambda call, bounds, self: None)(expr, args, self)


def _cast(call: Call, args: list[Interval | None], _: ValueBounds) -> Interval | None:
    source = call.args[0].checked_type
    if isinstance(source, TensorType) and source.dtype in ("int32", "int64", "uint8", "bool"):
        return args[0] or (-2.0**63, 2.0**63)  # any integer is a finite float32
    if args[0] is None or call.attrs.dtype not in ("float32", "float64"):
        return None
    return _fits(*args[0]) if call.attrs.dtype == "float32" else args[0]


def _unit(call: Call, args: list[Interval | None], _: ValueBounds) -> Interval | None:
    """cos, sin of finite values (cos and sin of infinity are NaN)."""
    return (-1.0, 1.0) if _finite(args[0]) else None


def _gated(low: float) -> Callable:
    """x times a gate in [0, 1] (SiLU, GELU): at least `low`, at most max(x, 0); NaN at x = -inf."""
    def rule(call: Call, args: list[Interval | None], _: ValueBounds) -> Interval | None:
        x = args[0]
        return None if x is None or x[0] == -math.inf else (min(low, max(x[0], low)), max(x[1], 0.0))
    return rule


def _rotary(call: Call, args: list[Interval | None], _: ValueBounds) -> Interval | None:
    """`x * cos + rotated(x) * sin`, rotated(x) holding x's values and their negations."""
    if args[0] is None or not (_finite(args[1]) and _finite(args[2])):
        return None
    both = (-_magnitude(args[0]), _magnitude(args[0]))
    return _add(_multiply(both, args[1]), _multiply(both, args[2]))


_RULES: dict[str, Callable[[Call, list[Interval | None], ValueBounds], Interval | None]] = {
    **{name: (lambda call, args, _: args[0]) for name in _SAME},
    "concatenate": lambda call, args, _: args[0],
    "layout_transform": lambda call, args, _: _union(args[0], (0.0, 0.0)),  # a blocked layout pads with zeros
    "where": lambda call, args, _: None if args[1] is None or args[2] is None else
    (min(args[1][0], args[2][0]), max(args[1][1], args[2][1])),
    "cast": _cast,
    "add": lambda call, args, _: _add(args[0], args[1]),
    "subtract": lambda call, args, _: None if args[1] is None else _add(args[0], (-args[1][1], -args[1][0])),
    "multiply": lambda call, args, _: _multiply(args[0], args[1]),
    "negative": lambda call, args, _: None if args[0] is None else (-args[0][1], -args[0][0]),
    "nn.relu": lambda call, args, _: None if args[0] is None else (max(args[0][0], 0.0), max(args[0][1], 0.0)),
    "sigmoid": lambda call, args, _: None if args[0] is None else (0.0, 1.0),
    "tanh": lambda call, args, _: None if args[0] is None else (-1.0, 1.0),
    "erf": lambda call, args, _: None if args[0] is None else (-1.0, 1.0),
    "cos": _unit,
    "sin": _unit,
    "nn.silu": _gated(-0.2785),
    "nn.gelu": _gated(-0.17),
    "nn.layer_norm": lambda call, args, _: _norm(call, args, 1, 2),
    "nn.rms_norm": lambda call, args, _: _norm(call, args, 1, None),
    "nn.skip_layer_norm": lambda call, args, _: _norm(call, [_add(args[0], args[1]), *args[2:]], 1, 2),
    "nn.dense": lambda call, args, vb: _dense(call, args, vb.array(call.args[1]), None),
    "nn.bias_add": lambda call, args, _: _add(args[0], args[1]),
    "nn.dense_bias_act": _dense_bias_act,
    "nn.rotary_embedding": _rotary,
    "nn.attention": _attention,
    "nn.masked_attention": _attention,
    "nn.cached_attention": lambda call, args, _: _union(_attention(call, [args[0], _union(args[1], args[3]),
                                                                          _union(args[2], args[4]), *args[3:]]),
                                                         _union(_union(args[1], args[3]), _union(args[2], args[4]))),
}
"""op -> the bound of its values (every field of a tuple result) from its arguments'."""


def _union(a: Interval | None, b: Interval | None) -> Interval | None:
    return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
