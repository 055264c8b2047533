"""Algebraic axioms: the small, sound equalities that lead every spelling to one canonical form.

Idioms (`idioms.py`) are written once, against the canonical spelling; these rules bring the
others to it: division by a constant is multiplication by its inverse, `pow(x, 2)` is `x * x`,
`rsqrt` / `pow(x, -0.5)` / `1 / sqrt(x)` are one thing, `a + (-b)` is `a - b`, `max(x, 0)` is
`relu(x)`, min/max with constants are `clip`, and a scalar constant factor may float to the top
of a product, out of a transpose or a matmul operand (where attention exporters put the scale),
and two such factors fold into one; `a * (1 / b)` is `a / b`, `a / (1 + exp(-x))` is
`a * sigmoid(x)`, and a common factor comes out of a difference (`a*s - b*s = (a - b)*s`, after
`a + (b - x)` is regrouped as `(a - x) + b`), with constant factors grouped last; a constant
scale distributes over a constant shift (`(a + c1) * c2 = a * c2 + c1 * c2`) and constant
addends fold, so a scale reaches the op before a bias. The variance written as
`mean(x*x) - mean(x)^2` is the centred `mean((x - mean(x))^2)` (which does not cancel).
Commutativity of add and multiply lives in `ac.py` (`COMMUTE`, bounded: one swapped twin per node).

Each rule states its dtypes and value preconditions. Rules that change float rounding (but never
where NaN or infinities appear) are `exact=False`.
"""

from __future__ import annotations

import numpy as np

from ir import Expr, relay
from ir.dtype_info import FLOAT_DTYPES, exact_value, float32_exact, float_info
from ir.op.registry import make_call

from ...egraph.terms import Kind
from ..match import Match
from ..pattern import const_pat, nn, ops, pvars
from ..rule import rule, ruleset
from .exact import constant, fold, rounded

__all__ = ["ALGEBRA", "nonnegative"]

x, a, b = pvars("x a b")


def _v(*shape: int, name: str = "x", dtype: str = "float32") -> Expr:
    return relay.var(name, shape=shape, dtype=dtype)


def _c(value, dtype: str = "float32") -> Expr:
    return relay.const(np.asarray(value, dtype))


_FLOAT64_EXACT = 2 ** 53
RELU_DTYPES = frozenset(FLOAT_DTYPES) | {"int8", "int16", "int32", "int64"}
"""the dtypes ONNX's Relu (opset 14) accepts."""
_NONNEGATIVE_OPS = frozenset({"exp", "sqrt", "abs", "sigmoid"})
_NONNEGATIVE_REDUCE = frozenset({"mean", "sum"})


def nonnegative(m: Match, name: str, depth: int = 6) -> bool:
    """True when every value of the class bound to `name` is >= +0 or NaN (never -0.0): a square
    `y * y` or even power, an exp/sqrt/abs/sigmoid, a sum or mean of such, or sums of such
    (constants included when non-negative)."""
    eg = m.egraph
    nodes = eg.class_nodes()

    def even_exponent(cls) -> bool:
        for t in nodes.get(eg.canonical(cls), ()):
            if t.kind is Kind.CONST:
                data = eg.constants[t.payload[0]].data
                return data.size == 1 and float(data.reshape(-1)[0]) % 2 == 0
        return False

    def holds(cls, left: int) -> bool:
        if left == 0:
            return False
        for t in nodes.get(eg.canonical(cls), ()):
            if t.kind is Kind.CONST:
                data = eg.constants[t.payload[0]].data
                if np.all(data >= 0) and not np.any(np.signbit(data)):
                    return True
            if t.kind is not Kind.CALL:
                continue
            op, kids = t.payload[0], t.children
            if op == "multiply" and eg.canonical(kids[0]) == eg.canonical(kids[1]):
                return True
            if op == "power" and even_exponent(kids[1]):
                return True
            if op in _NONNEGATIVE_OPS or (op in _NONNEGATIVE_REDUCE and holds(kids[0], left - 1)):
                return True
            if op == "add" and all(holds(k, left - 1) for k in kids):
                return True
        return False

    return holds(m.classes[name], depth)


def _inverse(m: Match) -> Expr | None:
    """`x / c` as `x * (1 / c)` for a finite, nonzero constant c whose reciprocal is a finite normal
    number of the op's dtype (1 / c is rounded once; a subnormal c has no finite reciprocal in float16)."""
    c = m.const("c")
    with np.errstate(all="ignore"):
        wide = c.astype(np.float64)
        if not (np.all(np.isfinite(wide)) and np.all(wide != 0)):
            return None
        inverse = rounded(1 / wide, m.dtype("x"))
    return None if inverse is None else make_call("multiply", [m.expr("x"), constant(inverse)])


def _bound(m: Match, name: str) -> int | float | None:
    """A one-element clip bound read in its own kind (an int stays an int, so an int64 above 2^53
    is seen as itself); None when the float32 `a_min` / `a_max` attribute cannot hold it exactly,
    or an integer bound lies beyond 2^53 (clip kernels compare integers as float64: values between
    bounds of at most 2^53 stay exact)."""
    c = m.const(name)
    if c.size != 1:
        return None
    value = exact_value(c)
    if not float32_exact(value) or isinstance(value, int) and abs(value) > _FLOAT64_EXACT:
        return None
    return value


def _bounds(lo: str | None, hi: str):
    """Guard: the clip bounds `lo` (None: 0) and `hi` are exact one-element constants, in order, and the
    result keeps the shape of `x`."""
    def guard(m: Match) -> bool:
        low, high = 0 if lo is None else _bound(m, lo), _bound(m, hi)
        return low is not None and high is not None and low <= high and _keeps_shape(m)
    return guard


def _bound_of(name: str):
    """A template attribute: the clip bound held by constant `name`."""
    return lambda m: _bound(m, name)


def _relu_of(m: Match) -> bool:
    """`max(x, +0)` of a float or signed integer `x` (ONNX's Relu takes no unsigned or bool tensors;
    for those `max(x, 0)` is `x` anyway)."""
    return m.dtype("x") in RELU_DTYPES and _keeps_shape(m)


def _moderate(values: np.ndarray, dtype: str) -> bool:
    """Every value is zero-free and within the square root of `dtype`'s range (float16: 2^-7 to
    2^8): moving such a factor past another operand of moderate size changes rounding only, never
    where a product overflows or underflows (65504 * 2 * 1e-4 is inf or 13.1 by the order)."""
    info = float_info(dtype)
    low, high = 2.0 ** (info.minexp / 2), 2.0 ** (info.maxexp / 2)
    wide = np.abs(np.asarray(values).astype(np.float64))
    return bool(np.all((wide >= low) & (wide <= high)))


def _class_constant(m: Match, name: str) -> np.ndarray | None:
    """The value of a constant in the class bound to `name`, if it holds one."""
    eg = m.egraph
    for t in eg.class_nodes().get(eg.canonical(m.classes[name]), ()):
        if t.kind is Kind.CONST:
            return eg.constants[t.payload[0]].data
    return None


def _moderate_factors(k: str, others: tuple[str, ...] = ("a", "b"), scalar: bool = True):
    """Guard: the constant `k` (one value, with `scalar`) is moderate (see `_moderate`), and so is
    each of `others` whose class holds a constant."""
    def guard(m: Match) -> bool:
        if scalar and m.scalar(k) is None or not _moderate(m.const(k), m.dtype(k)):
            return False
        values = (_class_constant(m, name) for name in others)
        return all(v is None or _moderate(v, m.dtype(k)) for v in values)
    return guard


_scalar_operand = _moderate_factors("k")


def _keeps_shape(m: Match) -> bool:
    return m.type("x") == m.root_type()


def _scalar_factor_of(operand: str, moderate: bool = False):
    """Guard: `k` is a one-element constant that scales `operand` without adding axes to it (and,
    with `moderate`, within the square root of the dtype's range: see `_moderate`)."""
    def guard(m: Match) -> bool:
        if m.scalar("k") is None or m.const("k").ndim > m.ndim(operand):
            return False
        return not moderate or _moderate(m.const("k"), m.dtype("k"))
    return guard


def _scalar_product(m: Match) -> Expr | None:
    """`(x * c1) * c2` as `x * (c1 * c2)` when neither factor nor their product (computed in the
    op's dtype) leaves [tiny, 1] in magnitude: then no partial product overflows and the folded one
    is a normal float of that dtype (in float16, 1e-4 * 1e-4 is 0: refused)."""
    c1, c2, dtype = m.const("k1"), m.const("k2"), m.dtype("x")
    if c1.size != 1 or c2.size != 1 or m.type("x") != m.root_type():
        return None
    product = fold(np.multiply, c1.reshape(()), c2.reshape(()), dtype=dtype)
    if product is None:
        return None
    tiny = float(float_info(dtype).tiny)
    if not all(tiny <= abs(float(c)) <= 1 for c in (c1.reshape(-1)[0], c2.reshape(-1)[0], product)):
        return None
    return make_call("multiply", [m.expr("x"), constant(product)])


def _constant_sum(m: Match) -> Expr | None:
    """`(a + c1) + c2` as `a + (c1 + c2)`, the constant sum computed at build time in the op's
    dtype (refused where it overflows or cancels to a subnormal, or where rounding absorbs a non-zero
    addend: float16's 65504 + 3 is 65504, and `y + 3` in the class of `y` would fold 3s into new
    constants without end)."""
    c1, c2 = m.const("c1"), m.const("c2")
    total = fold(np.add, c1, c2, dtype=m.dtype("a"))
    if total is None or any(np.any((total == c) & (other != 0)) for c, other in ((c1, c2), (c2, c1))):
        return None
    return make_call("add", [m.expr("a"), constant(total)])


def _expanded_constant(m: Match) -> Expr:
    """`expand_dims` of a constant, done at build time."""
    return constant(m.const("c").reshape(m.root_type().concrete_shape))


def _distributed(m: Match) -> Expr | None:
    """`(a + c1) * c2` as `a * c2 + (c1 * c2)`, the constant product computed at build time in the
    op's dtype (refused where it overflows or underflows)."""
    product = fold(np.multiply, m.const("c1"), m.const("c2"), dtype=m.dtype("a"))
    if product is None:
        return None
    scaled = make_call("multiply", [m.expr("a"), m.expr("c2")])
    return make_call("add", [scaled, constant(product)])


def _same_means(m: Match) -> bool:
    """The three means reduce the same axes of `x`, keeping them (so the difference broadcasts back)."""
    first = m["m1"]
    return first.keepdims and all(m[n] == first for n in ("m2", "m3"))


def _moments_variance(axis: tuple[int, ...] = (-1,), keepdims: bool = True) -> Expr:
    """mean(x * x) - mean(x) * mean(x) over `axis`."""
    x = _v(2, 8)
    mean = relay.mean(x, axis, keepdims)
    return relay.subtract(relay.mean(relay.multiply(x, x), axis, keepdims), relay.multiply(mean, mean))


def _logistic(x: Expr, one: float) -> Expr:
    """x / (one + exp(-x)): x * sigmoid(x) written with exp when `one` is 1."""
    return relay.divide(x, relay.add(relay.exp(relay.negative(x)), _c(one)))


def _difference_of_products(s: Expr, t: Expr | None = None) -> Expr:
    """a * s - b * t, with a common factor when `t` is `s`."""
    return relay.subtract(relay.multiply(_v(2, 3, name="a"), s), relay.multiply(_v(2, 1, name="b"), s if t is None else t))


ALGEBRA = ruleset("algebra", [
    # -- division, powers and roots ------------------------------------------------------------
    rule("divide-by-constant",   x / const_pat("c"),                               _inverse,
         dtypes="float", exact=False,
         example=lambda: relay.divide(_v(2, 3), _c(1.4142135)),
         near_miss=lambda: relay.divide(_v(2, 3), _c(0.0))),
    rule("square-as-product",    ops.power(x, 2.0),                                x * x,
         when=_keeps_shape, dtypes="float",
         example=lambda: relay.power(_v(2, 3), _c(2.0)),
         near_miss=lambda: relay.power(_v(2, 3), _c([2.0, 2.0, 3.0]))),
    rule("half-power-as-sqrt",   ops.power(x, 0.5),                                ops.sqrt(x),
         when=lambda m: _keeps_shape(m) and nonnegative(m, "x"), dtypes="float", exact=False,
         example=lambda: relay.power(relay.abs(_v(2, 3)), _c(0.5)),
         near_miss=lambda: relay.power(_v(2, 3), _c(0.5))),        # sqrt(-0.0) is -0.0, pow gives +0.0
    rule("rsqrt-as-power",       ops.power(x, -0.5),                               ops.rsqrt(x),
         when=lambda m: _keeps_shape(m) and nonnegative(m, "x"), dtypes="float", exact=False,
         example=lambda: relay.power(relay.exp(_v(2, 3)), _c(-0.5)),
         near_miss=lambda: relay.power(relay.exp(_v(2, 3)), _c(-1.5))),
    rule("reciprocal-sqrt",      1.0 / ops.sqrt(x),                                ops.rsqrt(x),
         when=_keeps_shape, dtypes="float", exact=False,
         example=lambda: relay.divide(_c(1.0), relay.sqrt(relay.exp(_v(2, 3)))),
         near_miss=lambda: relay.divide(_c(2.0), relay.sqrt(relay.exp(_v(2, 3))))),
    rule("times-rsqrt",          a * ops.rsqrt(b),                                 a / ops.sqrt(b), dtypes="float",
         exact=False,
         example=lambda: relay.multiply(_v(2, 3, name="a"), relay.rsqrt(relay.exp(_v(2, 3, name="b")))),
         near_miss=lambda: relay.multiply(_v(2, 3, name="a"), relay.sqrt(_v(2, 3, name="b")))),
    rule("times-reciprocal",     a * (const_pat("c", 1.0) / b),                    a / b,
         when=lambda m: m.const("c").ndim <= m.ndim("b"), dtypes="float", exact=False,
         example=lambda: relay.multiply(_v(2, 3, name="a"), relay.divide(_c(1.0), relay.exp(_v(2, 3, name="b")))),
         near_miss=lambda: relay.multiply(_v(2, 3, name="a"), relay.divide(_c(2.0), relay.exp(_v(2, 3, name="b"))))),
    rule("sigmoid-from-exp",     a / (ops.exp(-x) + const_pat("c", 1.0)),          a * ops.sigmoid(x),
         when=lambda m: m.const("c").ndim <= m.ndim("x"), dtypes="float", exact=False,
         example=lambda: _logistic(_v(2, 3), 1.0), near_miss=lambda: _logistic(_v(2, 3), 2.0)),
    # -- distributing a common factor ------------------------------------------------------------
    rule("regroup-difference",   a + (b - x),                                      (a - x) + b,
         dtypes="float", exact=False,
         example=lambda: relay.add(_v(2, 3, name="a"), relay.subtract(_v(3, name="b"), _v(2, 3))),
         near_miss=lambda: relay.add(_v(2, 3, name="a"), relay.add(_v(3, name="b"), _v(2, 3)))),
    rule("factor-difference",    a * x - b * x,                                    (a - b) * x,
         dtypes="float", exact=False,
         example=lambda: _difference_of_products(_v(3)),
         near_miss=lambda: _difference_of_products(_v(3), _v(3, name="y"))),
    rule("group-constant-factor", a * (b * const_pat("w")),                        (a * b) * const_pat("w"),
         when=_moderate_factors("w", scalar=False), dtypes="float", exact=False,
         example=lambda: relay.multiply(_v(2, 3, name="a"), relay.multiply(_v(2, 3, name="b"), _c([0.5, 1.0, 2.0]))),
         near_miss=lambda: relay.multiply(_v(2, 3, name="a"), relay.add(_v(2, 3, name="b"), _c([0.5, 1.0, 2.0])))),
    rule("expand-constant",      ops.expand_dims(const_pat("c")),                  _expanded_constant,
         example=lambda: relay.add(_v(2, 3, 4), relay.expand_dims(_c([1.0, 2.0, 3.0]), 1, 1)),
         near_miss=lambda: relay.add(_v(2, 3, 4), relay.expand_dims(_v(3, name="b"), 1, 1))),
    rule("distribute-constant-scale", (a + const_pat("c1")) * const_pat("c2"),     _distributed,
         dtypes="float", exact=False,
         example=lambda: relay.multiply(relay.add(_v(2, 3, 4), _c(np.ones((3, 1)))), _c(np.full((3, 1), 0.5))),
         near_miss=lambda: relay.multiply(relay.add(_v(2, 3, 4), _v(3, 1, name="b")), _c(np.full((3, 1), 0.5)))),
    rule("fold-constant-addends", (a + const_pat("c1")) + const_pat("c2"),         _constant_sum,
         dtypes="float", exact=False,
         example=lambda: relay.add(relay.add(_v(2, 3, 4), _c(np.ones((3, 1)))), _c(np.full((3, 1), 0.5))),
         near_miss=lambda: relay.add(relay.add(_v(2, 3, 4), _v(3, 1, name="b")), _c(np.full((3, 1), 0.5)))),
    # -- the variance two ways: to the form that does not cancel ----------------------------------
    rule("variance-centered",
         ops.mean(x * x, bind_attrs="m1") - ops.mean(x, bind_attrs="m2") * ops.mean(x, bind_attrs="m3"),
         ops.mean((x - ops.mean(x, attrs_from="m2")) * (x - ops.mean(x, attrs_from="m2")), attrs_from="m1"),
         when=_same_means, dtypes="float", exact=False,
         example=_moments_variance, near_miss=lambda: _moments_variance(keepdims=False)),
    # -- signs ---------------------------------------------------------------------------------
    rule("add-negative",         a + -b,                                           a - b,
         example=lambda: relay.add(_v(2, 3, name="a"), relay.negative(_v(3, name="b"))),
         near_miss=lambda: relay.add(_v(2, 3, name="a"), relay.abs(_v(3, name="b")))),
    # -- max, min and clip ---------------------------------------------------------------------
    # exact for integers; for floats up to the sign of a zero result, which max / min / relu / clip
    # kernels choose differently (ONNX Runtime's float32 Max(-0, +0) is +0, its Relu(-0) and numpy's
    # maximum(-0, +0) are -0), so these are exact=False
    rule("max-zero-as-relu",     ops.maximum(x, 0.0),                              nn.relu(x),
         when=_relu_of, exact=False,
         example=lambda: relay.maximum(_v(2, 3), _c(0.0)),
         near_miss=[lambda: relay.maximum(_v(2, 3), _c(0.5)),
                    lambda: relay.maximum(_v(2, 3, dtype="uint8"), _c(0, "uint8"))]),  # ONNX has no unsigned Relu
    rule("min-of-max-as-clip",   ops.minimum(ops.maximum(x, const_pat("lo")), const_pat("hi")),
         ops.clip(x, a_min=_bound_of("lo"), a_max=_bound_of("hi")), when=_bounds("lo", "hi"), exact=False,
         example=lambda: relay.minimum(relay.maximum(_v(2, 3), _c(0.0)), _c(6.0)),
         near_miss=lambda: relay.minimum(relay.maximum(_v(2, 3), _c(6.0)), _c(0.0))),
    rule("max-of-min-as-clip",   ops.maximum(ops.minimum(x, const_pat("hi")), const_pat("lo")),
         ops.clip(x, a_min=_bound_of("lo"), a_max=_bound_of("hi")), when=_bounds("lo", "hi"), exact=False,
         example=lambda: relay.maximum(relay.minimum(_v(2, 3), _c(6.0)), _c(0.0)),
         near_miss=lambda: relay.maximum(relay.minimum(_v(2, 3), _c([6.0, 5.0, 4.0])), _c(0.0))),
    rule("min-of-relu-as-clip",  ops.minimum(nn.relu(x), const_pat("hi")), ops.clip(x, a_min=0, a_max=_bound_of("hi")),
         when=_bounds(None, "hi"), exact=False,
         example=lambda: relay.minimum(relay.nn.relu(_v(2, 3)), _c(6.0)),
         near_miss=lambda: relay.minimum(relay.nn.relu(_v(2, 3)), _c(-1.0))),
    # -- products with a scalar constant -------------------------------------------------------
    rule("float-scalar-factor",  (a * const_pat("k")) * b,                         (a * b) * const_pat("k"),
         when=_scalar_operand, dtypes="float", exact=False,
         example=lambda: relay.multiply(relay.multiply(_v(2, 3, name="a"), _c(0.5)), _v(2, 3, name="b")),
         near_miss=lambda: relay.multiply(relay.multiply(_v(2, 3, name="a"), _c([0.5, 1.0, 2.0])),
                                          _v(2, 3, name="b"))),
    rule("sink-scalar-factor",   (a * b) * const_pat("k"),                         a * (b * const_pat("k")),
         when=_scalar_operand, dtypes="float", exact=False,
         example=lambda: relay.multiply(relay.multiply(_v(2, 3, name="a"), _v(2, 3, name="b")), _c(1 / 6)),
         near_miss=lambda: relay.multiply(relay.multiply(_v(2, 3, name="a"), _v(2, 3, name="b")),
                                          _c([0.5, 1.0, 2.0]))),
    rule("fold-scalar-factors",  (x * const_pat("k1")) * const_pat("k2"),          _scalar_product,
         dtypes="float", exact=False,
         example=lambda: relay.multiply(relay.multiply(_v(2, 3), _c(0.35355339)), _c(0.35355339)),
         near_miss=lambda: relay.multiply(relay.multiply(_v(2, 3), _c(1e30)), _c(1e-30))),
    # -- scale placement in products (attention scales Q, K, both, or the scores) -----------------
    rule("scalar-out-of-transpose", ops.transpose(x * const_pat("k")), ops.transpose(x) * const_pat("k"),
         when=_scalar_factor_of("x"),
         example=lambda: relay.transpose(relay.multiply(_v(2, 3, 4), _c(0.5)), (0, 2, 1)),
         near_miss=lambda: relay.transpose(relay.multiply(_v(3, 4), _c(np.full((1, 1, 1), 0.5))), (0, 2, 1))),
    rule("scalar-out-of-matmul-a", nn.matmul(a * const_pat("k"), b), nn.matmul(a, b) * const_pat("k"),
         when=_scalar_factor_of("a", moderate=True), dtypes="float", exact=False,
         example=lambda: relay.nn.matmul(relay.multiply(_v(2, 3, 4, name="a"), _c(0.25)), _v(2, 4, 5, name="b")),
         near_miss=lambda: relay.nn.matmul(relay.multiply(_v(3, 4, name="a"), _c(np.full((1, 1, 1), 0.25))),
                                           _v(2, 4, 5, name="b"))),
    rule("scalar-out-of-matmul-b", nn.matmul(a, b * const_pat("k")), nn.matmul(a, b) * const_pat("k"),
         when=_scalar_factor_of("b", moderate=True), dtypes="float", exact=False,
         example=lambda: relay.nn.matmul(_v(2, 3, 4, name="a"), relay.multiply(_v(2, 4, 5, name="b"), _c(0.25))),
         near_miss=lambda: relay.nn.matmul(_v(2, 3, 4, name="a"),
                                           relay.multiply(_v(4, 5, name="b"), _c(np.full((1, 1, 1), 0.25))))),
])
