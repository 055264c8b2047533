"""Idioms: each standard or fused op, recognised once, from its canonical spelling.

The axioms (`algebra.py`) and bounded commutativity (`ac.COMMUTE`) bring every other spelling
to the canonical one, so a pattern here is never repeated per exporter:

| op                 | canonical spelling (after the axioms)                                  |
|--------------------|------------------------------------------------------------------------|
| `nn.layer_norm`    | `d = x - mean(x)`; `d / sqrt(mean(d * d) + eps)`, then `* g + b`       |
| `nn.rms_norm`      | `x / sqrt(mean(x * x) + eps)`, then `* g`                              |
| `nn.gelu` (exact)  | `(x * (erf(x * 0.70710678) + 1)) * 0.5`                                |
| `nn.silu`          | `x * sigmoid(x)`                                                       |
| `nn.hard_sigmoid`  | `clip(x * a + b, 0, 1)`, or `clip(x + b, 0, u) * (1 / u)`             |
| `nn.hard_swish`    | `x * hard_sigmoid(x, 1/6, 1/2)`                                        |
| `nn.softmax`       | `exp(x - max(x)) / sum(exp(x - max(x)))` (the stable form only)        |
| `nn.dense`         | `matmul(x, W)` with a constant 2-D `W`, or with `transpose(w)`         |
| conv + per-channel | `conv2d(x, W) * s` (constant `W`, `s`) folds `s` into `W`; `+ t` is a bias |
| `nn.attention`     | `matmul(softmax(matmul(q, kT) * s [+ mask]), v)`, `kT` any transpose; or with `batch_matmul` |
|                    | `where(isnan(p), 0, p)` around the softmax `p` (torch SDPA): `nan_rows="zero"` |

Reductions must be over the last axis with `keepdims`; constants must have the values the
formula needs (to float32 precision). An approximation is never equal to the exact function:
the tanh and sigmoid forms of GELU are not rewritten to `nn.gelu(approximate="none")`.
"""

from __future__ import annotations

import math

import numpy as np

from ir import Expr, relay
from ir.dtype_info import numpy_dtype
from ir.op.registry import make_call

from ..match import Match
from ..pattern import Pat, attr, call, choose, const_pat, nn, ops, pvars
from ..rule import rule, ruleset
from .exact import constant, rounded, subnormal

__all__ = ["IDIOMS"]

x, g, b, w = pvars("x g b w")
q, kt, v, mask = pvars("q kt v mask")
_SQRT_HALF = 1 / math.sqrt(2)


def _v(*shape: int, name: str = "x") -> Expr:
    return relay.var(name, shape=shape)


def _c(value) -> Expr:
    return relay.const(np.asarray(value, "float32"))


def _close(value: float | None, want: float) -> bool:
    return value is not None and abs(value - want) <= 1e-6 * abs(want)


def _last_axis(m: Match, *names: str) -> bool:
    """Every reduction bound to `names` is over the last axis of `x` only, keeping dims."""
    ndim = m.ndim("x")
    return all(m[n].keepdims and not m[n].exclude and m[n].axis is not None
               and tuple(a % ndim for a in m[n].axis) == (ndim - 1,) for n in names)


def _centered():
    return x - ops.mean(x, bind_attrs="m1")


def _ones_zeros(m: Match) -> tuple[Expr, Expr] | None:
    """Unit scale and zero shift over the last axis; None when its length is symbolic (the norm
    ops take their scale as a tensor of that length)."""
    n, dtype = m.shape("x")[-1], m.dtype("x")
    if not isinstance(n, (int, np.integer)):
        return None
    return constant(np.ones(n, numpy_dtype(dtype))), constant(np.zeros(n, numpy_dtype(dtype)))


def _layer_norm(m: Match) -> Expr | None:
    eps = m.scalar("eps")
    affine = _ones_zeros(m)
    if eps is None or eps <= 0 or not _last_axis(m, "m1", "m2") or affine is None:
        return None
    ones, zeros = affine
    return make_call("nn.layer_norm", [m.expr("x"), ones, zeros], {"axis": -1, "epsilon": eps})


def _unit(m: Match, name: str, value: float) -> bool:
    return name in m.constants and bool(np.all(m.const(name) == value))


def _vectors_over_last_axis(*names: str):
    """Guard: each constant or variable of `names` is a vector as long as the last axis of `x`."""
    def guard(m: Match) -> bool:
        types = [m.tensor_type(p) for p in names]
        return all(ty is not None and ty.shape == (m.shape("x")[-1],) for ty in types)
    return guard


def _affine_layer_norm(m: Match) -> bool:
    """A unit layer norm (its shift all zeros of either sign), then a scale and a shift over its axis."""
    return _unit(m, "zero", 0.0) and _vectors_over_last_axis("g", "b")(m)


def _rms_norm(m: Match) -> Expr | None:
    """`nn.rms_norm` with the match's epsilon, or none (0: its kernels then divide by the root
    mean square as the match does, zero, overflowing and subnormal rows alike)."""
    eps = m.scalar("eps") if "eps" in m.constants else 0.0
    affine = _ones_zeros(m)
    if eps is None or eps < 0 or not _last_axis(m, "m1") or affine is None:
        return None
    ones, _ = affine
    return make_call("nn.rms_norm", [m.expr("x"), ones], {"axis": -1, "epsilon": eps})


def _keeps_shape(m: Match) -> bool:
    return m.type("x") == m.root_type()


def _is_gelu(m: Match) -> bool:
    return _close(m.scalar("s"), _SQRT_HALF) and _keeps_shape(m)


def _scalar(name: str):
    """A template attribute: the one value of constant `name`."""
    return lambda m: m.scalar(name)


def _scalars(*names: str):
    """Guard: each constant of `names` holds one value, and the result keeps the shape of `x`."""
    return lambda m: all(m.scalar(n) is not None for n in names) and _keeps_shape(m)


def _unit_clip_scale(m: Match) -> bool:
    """clip(x + b, 0, u) * k with k * u == 1 is clip(x * k + b * k, 0, 1)."""
    scale, upper = m.scalar("k"), m["c"].a_max
    return _scalars("beta", "k")(m) and m["c"].a_min == 0.0 and upper > 0 and _close(scale * upper, 1.0)


def _is_hard_swish_gate(m: Match) -> bool:
    hs = m["hs"]
    return _close(hs.alpha, 1 / 6) and _close(hs.beta, 0.5) and m.type("x") == m.root_type()




_DENSE_DTYPES = frozenset({"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                           "uint32", "uint64"})
"""the dtypes `nn.dense` has kernels for (numpy's einsum has no bfloat16; ONNX Runtime neither)."""


def _constant_weight_dense(m: Match) -> Expr | None:
    weight = m.const("w")
    if weight.ndim != 2 or m.ndim("x") < 2 or m.dtype("x") not in _DENSE_DTYPES:
        return None
    return make_call("nn.dense", [m.expr("x"), constant(np.ascontiguousarray(weight.T))])


def _transposed_weight(m: Match) -> bool:
    """A 2-D weight `w` transposed (as `nn.dense` reads it), data of 2 axes or more, a dtype dense runs."""
    axes = m["t"].axes
    return (m.ndim("w") == 2 and m.ndim("x") >= 2 and m.dtype("x") in _DENSE_DTYPES
            and (axes is None or tuple(a % 2 for a in axes) == (1, 0)))


def _swapped(name: str):
    """A template attribute: the axes of the class bound to `name` with its last two swapped (a transpose
    the simplifier composes with the one that made it, where there is one)."""
    def axes(m: Match) -> list[int]:
        ndim = m.ndim(name)
        return [*range(ndim - 2), ndim - 1, ndim - 2]
    return axes


def _zero_fill(m: Match) -> bool:
    """The guard's fill is one +0 (a -0 would give the product with V other zeros' signs)."""
    fill = m.const("zero")
    return fill.size == 1 and fill.ndim <= m.ndim("q") and not np.any(fill) and not np.any(np.signbit(fill))


def _attends(scaled: bool, guarded: bool):
    """Guard of an attention rule: plain products (no transposed first operand, no other output dtype)
    of 3 or more axes, a softmax over the last one, a one-value scale; the guard's fill a +0."""
    def guard(m: Match) -> bool:
        qk, pv, ndim = m["qk"], m["pv"], m.ndim("q")
        return not (ndim < 3 or qk.transpose_a or qk.out_dtype or pv.transpose_a or pv.out_dtype
                    or m["sm"].axis % ndim != ndim - 1 or not m.ndim("kt") == m.ndim("v") == ndim
                    or scaled and m.scalar("s") is None or guarded and not _zero_fill(m))
    return guard


def _attention(scaled: bool, masked: bool, guarded: bool = False) -> Pat:
    """`nn.attention` / `nn.masked_attention` of `matmul(softmax(scores), v)` where scores is
    `matmul(q, kT)` (times a scalar `s`, plus a `mask`), with `nn.matmul` or TVM's `nn.batch_matmul`
    (whose second operand is transposed by default) for both products; `guarded`: the probabilities
    as torch's SDPA export guards them, `where(isnan(p), 0, p)` (a softmax row is NaN throughout or
    nowhere), which is the op with `nan_rows="zero"`."""
    key = choose(attr("qk", "transpose_b"), kt, ops.transpose(kt, axes=_swapped("kt")))
    value = choose(attr("pv", "transpose_b"), ops.transpose(v, axes=_swapped("v")), v)
    attrs = {"scale": (lambda m: m.scalar("s")) if scaled else 1.0, "nan_rows": "zero" if guarded else "keep"}
    if masked:
        return nn.masked_attention(q, key, value, mask, **attrs)
    return nn.attention(q, key, value, **attrs)


def _attention_pattern(product: str, scaled: bool, masked: bool, guarded: bool = False) -> Pat:
    def probs() -> Pat:
        scores = call(product, q, kt, bind_attrs="qk")
        if scaled:
            scores = scores * const_pat("s")
        if masked:
            scores = scores + mask
        return nn.softmax(scores, bind_attrs="sm")
    weights = ops.where(ops.isnan(probs()), const_pat("zero"), probs()) if guarded else probs()
    return call(product, weights, v, bind_attrs="pv")


def _guarded_attention_example(scaled: bool, masked: bool, fill: float = 0.0) -> Expr:
    """torch SDPA's export: `where(isnan(p), fill, p)` around the softmax `p` (its sqrt(scale) on
    q and on k^T reaches `* scale` through the algebra), a mask hiding a query row entirely."""
    query, key = _v(2, 3, 5, 4, name="q"), _v(2, 3, 6, 4, name="k")
    scores = relay.nn.matmul(query, relay.transpose(key, (0, 1, 3, 2)))
    if scaled:
        scores = relay.multiply(scores, _c(0.25))
    if masked:
        scores = relay.add(scores, _v(2, 1, 5, 6, name="mask"))
    probs = relay.nn.softmax(scores, axis=-1)
    guarded = relay.where(relay.isnan(probs), _c(fill), probs)
    return relay.nn.matmul(guarded, _v(2, 3, 6, 4, name="v"))


def _attention_example(scaled: bool, masked: bool, axis: int = -1, batched: bool = False) -> Expr:
    """5 queries over 6 keys in 3 heads of size 4, K transposed for the product; softmax over
    `axis`; `batched`: heads as the batch of TVM's `nn.batch_matmul` (V given transposed)."""
    if batched:
        query, key, value_t = _v(3, 5, 4, name="q"), _v(3, 6, 4, name="k"), _v(3, 4, 6, name="v")
        scores = relay.nn.batch_matmul(query, key)
    else:
        query, key = _v(2, 3, 5, 4, name="q"), _v(2, 3, 6, 4, name="k")
        scores = relay.nn.matmul(query, relay.transpose(key, (0, 1, 3, 2)))
    if scaled:
        scores = relay.multiply(scores, _c(0.5))
    if masked:
        scores = relay.add(scores, _v(*((1, 6) if batched else (2, 1, 1, 6)), name="mask"))
    probs = relay.nn.softmax(scores, axis=axis)
    if batched:
        return relay.nn.batch_matmul(probs, value_t)
    return relay.nn.matmul(probs, _v(2, 3, 6, 4, name="v"))


def _per_channel(m: Match, name: str) -> np.ndarray | None:
    """The constant `name` as one value per output channel of an NCHW conv, or None."""
    c, channels = m.const(name), m.shape("w")[0]
    if c.ndim > 4 or c.size != channels or m["c"].data_layout != "NCHW" or m["c"].kernel_layout != "OIHW":
        return None
    shape = (1,) * (4 - c.ndim) + c.shape
    return c.reshape(-1) if shape == (1, channels, 1, 1) else None


def _fold_scale_into_conv(m: Match) -> Expr | None:
    scale = _per_channel(m, "s")
    if scale is None:
        return None
    weight = m.const("w")
    with np.errstate(all="ignore"):
        product = weight.astype(np.float64) * scale.astype(np.float64).reshape(-1, 1, 1, 1)
    folded = rounded(product, weight.dtype.name, exempt=subnormal(weight))
    if folded is None:  # the scaled weight overflows or underflows in its dtype
        return None
    return make_call("nn.conv2d", [m.expr("x"), constant(folded)], dict(m["c"]))


def _shift_as_bias(m: Match) -> Expr | None:
    shift = _per_channel(m, "t")
    if shift is None:
        return None
    conv = make_call("nn.conv2d", [m.expr("x"), m.expr("w")], dict(m["c"]))
    return make_call("nn.bias_add", [conv, constant(shift.astype(numpy_dtype(m.dtype("x"))))], {"axis": 1})


def _layer_norm_example() -> Expr:
    v = _v(2, 8)
    d = relay.subtract(v, relay.mean(v, axis=-1, keepdims=True))
    var = relay.mean(relay.multiply(d, d), axis=-1, keepdims=True)
    return relay.divide(d, relay.sqrt(relay.add(var, _c(1e-5))))


def _layer_norm_wrong_axis() -> Expr:
    v = _v(4, 8)
    d = relay.subtract(v, relay.mean(v, axis=0, keepdims=True))
    var = relay.mean(relay.multiply(d, d), axis=0, keepdims=True)
    return relay.divide(d, relay.sqrt(relay.add(var, _c(1e-5))))


def _rms_example(axis: int = -1, eps: float | None = 1e-6) -> Expr:
    v = _v(2, 8)
    ms = relay.mean(relay.multiply(v, v), axis=axis, keepdims=True)
    return relay.divide(v, relay.sqrt(ms if eps is None else relay.add(ms, _c(eps))))


def _gated(gate) -> Expr:
    v = _v(2, 8)
    return relay.multiply(v, gate(v))


def _gelu_example(scale: float = 0.70710678) -> Expr:
    v = _v(2, 8)
    return relay.multiply(relay.multiply(v, relay.add(relay.erf(relay.multiply(v, _c(scale))), _c(1.0))), _c(0.5))


def _softmax_example(axis: int = -1) -> Expr:
    v = _v(2, 8)
    e = relay.exp(relay.subtract(v, relay.max(v, axis=axis, keepdims=True)))
    return relay.divide(e, relay.sum(e, axis=axis, keepdims=True))


def _conv(weight_shape=(4, 3, 3, 3)) -> Expr:
    rng = np.random.default_rng(3)
    return relay.nn.conv2d(_v(1, 3, 6, 6), relay.const(rng.standard_normal(weight_shape).astype("float32")),
                           padding=(1, 1))



IDIOMS = ruleset("idioms", [
    rule("layer-norm", _centered() / ops.sqrt(ops.mean(_centered() * _centered(), bind_attrs="m2") + const_pat("eps")),
         _layer_norm, dtypes="float", exact=False,
         example=_layer_norm_example, near_miss=_layer_norm_wrong_axis),
    rule("layer-norm-affine", nn.layer_norm(x, 1.0, const_pat("zero")) * g + b, nn.layer_norm(x, g, b),
         when=_affine_layer_norm, dtypes="float", exact=False,
         example=lambda: relay.add(relay.multiply(relay.nn.layer_norm(_v(2, 8), _c(np.ones(8)), _c(np.zeros(8))),
                                                  _v(8, name="g")), _v(8, name="b")),
         near_miss=lambda: relay.add(relay.multiply(relay.nn.layer_norm(_v(2, 8), _c(np.ones(8)), _c(np.zeros(8))),
                                                    _v(2, 8, name="g")), _v(8, name="b"))),
    rule("rms-norm", x / ops.sqrt(ops.mean(x * x, bind_attrs="m1") + const_pat("eps")),
         _rms_norm, dtypes="float", exact=False,
         example=_rms_example, near_miss=lambda: _rms_example(axis=0)),
    rule("rms-norm-unguarded", x / ops.sqrt(ops.mean(x * x, bind_attrs="m1")), _rms_norm, dtypes="float", exact=False,
         example=lambda: _rms_example(eps=None), near_miss=lambda: _rms_example(axis=0, eps=None)),
    rule("rms-norm-scaled", nn.rms_norm(x, 1.0) * g, nn.rms_norm(x, g), when=_vectors_over_last_axis("g"),
         dtypes="float", exact=False,
         example=lambda: relay.multiply(relay.nn.rms_norm(_v(2, 8), _c(np.ones(8))), _v(8, name="g")),
         near_miss=lambda: relay.multiply(relay.nn.rms_norm(_v(2, 8), _c(np.full(8, 2.0))), _v(8, name="g"))),
    rule("gelu-erf", (x * (ops.erf(x * const_pat("s")) + 1.0)) * 0.5, nn.gelu(x, approximate="none"), when=_is_gelu,
         dtypes="float", exact=False,
         example=_gelu_example, near_miss=lambda: _gelu_example(scale=0.8)),
    rule("silu", x * ops.sigmoid(x), nn.silu(x), dtypes="float", exact=False,
         example=lambda: _gated(relay.sigmoid),
         near_miss=lambda: _gated(lambda v: relay.sigmoid(relay.multiply(v, _c(1.702))))),
    rule("hard-sigmoid", ops.clip(x * const_pat("alpha") + const_pat("beta"), a_min=0.0, a_max=1.0),
         nn.hard_sigmoid(x, alpha=_scalar("alpha"), beta=_scalar("beta")), when=_scalars("alpha", "beta"),
         dtypes="float", exact=False,
         example=lambda: relay.clip(relay.add(relay.multiply(_v(2, 8), _c(0.2)), _c(0.5)), 0.0, 1.0),
         near_miss=lambda: relay.clip(relay.add(relay.multiply(_v(2, 8), _c(0.2)), _c(0.5)), 0.0, 6.0)),
    rule("hard-sigmoid-shifted", ops.clip(x + const_pat("beta"), bind_attrs="c") * const_pat("k"),
         nn.hard_sigmoid(x, alpha=_scalar("k"), beta=lambda m: m.scalar("beta") * m.scalar("k")),
         when=_unit_clip_scale, dtypes="float", exact=False,
         example=lambda: relay.multiply(relay.clip(relay.add(_v(2, 8), _c(3.0)), 0.0, 6.0), _c(1 / 6)),
         near_miss=lambda: relay.multiply(relay.clip(relay.add(_v(2, 8), _c(3.0)), 0.0, 6.0), _c(0.5))),
    rule("hard-swish", x * nn.hard_sigmoid(x, bind_attrs="hs"), nn.hard_swish(x),
         when=_is_hard_swish_gate, dtypes="float", exact=False,
         example=lambda: _gated(lambda v: relay.nn.hard_sigmoid(v, alpha=1 / 6, beta=0.5)),
         near_miss=lambda: _gated(relay.nn.hard_sigmoid)),
    rule("softmax", ops.exp(x - ops.max(x, bind_attrs="mx")) / ops.sum(ops.exp(x - ops.max(x, bind_attrs="mx")),
                                                                      bind_attrs="sm"),
         nn.softmax(x, axis=-1), when=lambda m: _last_axis(m, "mx", "sm"), dtypes="float", exact=False,
         example=_softmax_example, near_miss=lambda: _softmax_example(axis=0)),
    rule("matmul-constant-weight", nn.matmul(x, const_pat("w"), transpose_a=False, transpose_b=False),
         _constant_weight_dense, exact=False,
         example=lambda: relay.nn.matmul(_v(2, 4, 8), _c(np.arange(48).reshape(8, 6) / 48)),
         near_miss=lambda: relay.nn.matmul(_v(2, 4, 8), _c(np.ones((2, 8, 6))))),
    rule("matmul-transposed-weight",
         nn.matmul(x, ops.transpose(w, bind_attrs="t"), transpose_a=False, transpose_b=False),
         nn.dense(x, w), when=_transposed_weight, exact=False,
         example=lambda: relay.nn.matmul(_v(2, 4, 8), relay.transpose(_v(6, 8, name="w"), (1, 0))),
         near_miss=lambda: relay.nn.matmul(_v(2, 4, 8), relay.transpose(_v(8, 6, name="w"), (0, 1)))),
    *(rule(f"{name}{suffix}", _attention_pattern(product, scaled, masked), _attention(scaled, masked),
           when=_attends(scaled, guarded=False), dtypes="float", exact=False,
           example=lambda s=scaled, k=masked, b=bool(suffix): _attention_example(s, k, batched=b),
           near_miss=lambda s=scaled, k=masked, b=bool(suffix): _attention_example(s, k, axis=1, batched=b))
      for product, suffix in (("nn.matmul", ""), ("nn.batch_matmul", "-batched"))
      for name, scaled, masked in (("attention", False, False), ("attention-scaled", True, False),
                                   ("attention-masked", False, True), ("attention-scaled-masked", True, True))),
    *(rule(f"attention{'-scaled' if scaled else ''}{'-masked' if masked else ''}-guarded",
           _attention_pattern("nn.matmul", scaled, masked, guarded=True), _attention(scaled, masked, guarded=True),
           when=_attends(scaled, guarded=True), dtypes="float", exact=False,
           example=lambda s=scaled, k=masked: _guarded_attention_example(s, k),
           near_miss=lambda s=scaled, k=masked: _guarded_attention_example(s, k, fill=-0.0))
      for scaled in (False, True) for masked in (False, True)),
    rule("conv-channel-scale", nn.conv2d(x, const_pat("w"), bind_attrs="c") * const_pat("s"),
         _fold_scale_into_conv, dtypes="float", exact=False,
         example=lambda: relay.multiply(_conv(), _c(np.linspace(0.5, 2, 4).reshape(4, 1, 1))),
         near_miss=lambda: relay.multiply(_conv(), _c(np.linspace(0.5, 2, 6).reshape(1, 1, 6)))),
    rule("conv-channel-shift", nn.conv2d(x, w, bind_attrs="c") + const_pat("t"),
         _shift_as_bias, dtypes="float",
         example=lambda: relay.add(_conv(), _c(np.linspace(-1, 1, 4).reshape(1, 4, 1, 1))),
         near_miss=lambda: relay.add(_conv(), _c(np.linspace(-1, 1, 6).reshape(6)))),
])
