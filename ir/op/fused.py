"""Fused forms that rewrites produce and that some targets run as one kernel.

Each has a plain decomposition into the portable ops (see `decompose` in the exporter and the
reference kernels); they mirror ONNX Runtime's contrib kernels (`FusedConv`, `FusedMatMul`,
`BiasGelu`, `SkipLayerNormalization`) and ONNX's `Attention` (opset 23) so a target that has them
can pick them at extraction. `nn.feed_forward` is the transformer's dense-GELU-dense block, which
an exporter may write in column chunks that keep each chunk's hidden activations in cache.
"""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import AnyDim, TensorType, TupleType, Type
from .nn import CONV_ATTRS, conv2d_rel, dense_rel, layer_norm_rel, matmul_rel
from .registry import AttrField, OpPattern, register_op
from .shapes import dims_match, known, same_dtype, tensor
from .tensor import broadcast_rel
from .transform import concatenate_rel

#: the fused forms' activations: leaky relu's slope is `alpha`, hard sigmoid's `alpha` and `beta`, clip's bounds
#: `a_min` and `a_max` (ONNX Runtime's FusedConv takes each, its FusedGemm all but clip)
ACTIVATIONS = ("none", "relu", "sigmoid", "tanh", "leaky_relu", "clip", "hard_sigmoid")


def _check_bias(out: Type, bias: Type, axis: int) -> Type:
    b = tensor(bias, "bias")
    same_dtype([tensor(out, "output"), b], ["output", "bias"])
    if b.ndim != 1 or not dims_match(b.shape[0], out.shape[axis]):
        raise ShapeError(f"bias {b} must be 1-D of length {out.shape[axis]}")
    return out


def conv2d_bias_act_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    out = conv2d_rel(args[:2], attrs)
    return _check_bias(out, args[2], 1 if attrs.data_layout == "NCHW" else 3)


def dense_bias_act_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    return _check_bias(dense_rel(args[:2], attrs), args[2], -1)


def bias_gelu_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    return _check_bias(data, args[1], -1)


def skip_layer_norm_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    summed, data = broadcast_rel(args[:2], attrs), tensor(args[0], "data")
    if summed.ndim != data.ndim or not all(s == d or isinstance(s, AnyDim) for s, d in zip(summed.shape, data.shape)):
        raise ShapeError(f"skip {args[1]} must broadcast to data {args[0]} without growing it")
    return layer_norm_rel([data, *args[2:]], attrs)  # a run-time (`Any`) length of skip is data's


_PLAIN_DENSE = Attrs({"units": None, "out_dtype": ""})


def feed_forward_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    """data (..., K), weight1 (H, K), bias1 (H), weight2 (N, H), bias2 (N) -> (..., N)."""
    hidden = _check_bias(dense_rel(args[:2], _PLAIN_DENSE), args[2], -1)
    return _check_bias(dense_rel([hidden, args[3]], _PLAIN_DENSE), args[4], -1)


def _fits_scores(mask: Sequence, scores: Sequence) -> bool:
    """Whether a mask broadcasts to the scores without growing them: each of its axes is 1 or the
    scores' length, or symbolic against a scores' axis not known to be 1. An exporter's mask built
    from run-time shapes is typed (?, ?, ?, ?); the op is defined only where such a mask has the
    scores' lengths (or 1) when it runs, the condition ONNX's `Attention` states for `attn_mask`."""
    lead = (1,) * (len(scores) - len(mask))
    for m, s in zip(lead + tuple(mask), scores):
        if not (m == 1 or m == s or (s != 1 and not (known(m) and known(s)))):
            return False
    return True


def _groups(q_heads, kv_heads) -> bool:
    """Whether K/V with `kv_heads` heads serve a query of `q_heads` (each KV head a group of query
    heads: grouped- or multi-query attention); a symbolic count is taken to fit (the kernels read
    the counts when they run)."""
    if known(q_heads) and known(kv_heads):
        return kv_heads > 0 and q_heads % kv_heads == 0
    return True


def attention_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    """query (..., Hq, Sq, D), key (..., Hkv, Sk, D), value (..., Hkv, Sk, Dv) with equal leading axes
    -> (..., Hq, Sq, Dv); Hkv divides Hq, KV head j serving query heads j*Hq/Hkv ... (j+1)*Hq/Hkv - 1
    (grouped-query attention; `repeat_kv` order); a mask, when given, broadcasts to the scores
    (..., Hq, Sq, Sk) without growing them."""
    names = ["query", "key", "value"]
    q, k, v = (tensor(t, n) for t, n in zip(args[:3], names))
    dtype = same_dtype([q, k, v], names)
    if q.ndim < 3 or not q.ndim == k.ndim == v.ndim:
        raise ShapeError(f"attention takes query, key and value of one rank >= 3, got {q}, {k}, {v}")
    lead = q.shape[:-2]
    if not all(dims_match(a, b) for t in (k, v) for a, b in zip(lead[:-1], t.shape[:-3])) \
            or not dims_match(k.shape[-3], v.shape[-3]) or not _groups(lead[-1], k.shape[-3]):
        raise ShapeError(f"attention: query {q}, key {k} and value {v} must share their leading axes "
                         "(key and value may have fewer heads, the third-to-last axis, dividing the query's)")
    if not dims_match(q.shape[-1], k.shape[-1]):
        raise ShapeError(f"attention: query {q} and key {k} must have one head size (last axis)")
    if not dims_match(k.shape[-2], v.shape[-2]):
        raise ShapeError(f"attention: key {k} and value {v} must have one length (second-to-last axis)")
    if len(args) > 3:
        scores = (*lead, q.shape[-2], k.shape[-2])
        mask = tensor(args[3], "mask")
        same_dtype([q, mask], ["query", "mask"])
        if mask.ndim > len(scores) or not _fits_scores(mask.shape, scores):
            raise ShapeError(f"attention mask {mask} must broadcast to the scores {scores} without growing them")
    return TensorType((*lead, q.shape[-2], v.shape[-1]), dtype)


_SEQUENCE_AXIS = Attrs({"axis": -2})


def cached_attention_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    """query, key, value (the new tokens'), past_key, past_value, mask -> (attention of the query over
    the present keys and values, present_key, present_value), each present one the past's and the new
    tokens' concatenated on the sequence axis (second-to-last); the mask covers the present length."""
    present = [concatenate_rel([TupleType([tensor(past, name), tensor(new, name[5:])])], _SEQUENCE_AXIS)
               for past, new, name in ((args[3], args[1], "past_key"), (args[4], args[2], "past_value"))]
    return TupleType([attention_rel([args[0], *present, args[5]], attrs), *present])


ACT = [AttrField("activation", "str", "none", choices=ACTIVATIONS),
       AttrField("alpha", "float", 0.01, doc="leaky relu's slope, hard sigmoid's scale"),
       AttrField("beta", "float", 0.5, doc="hard sigmoid's offset"),
       AttrField("a_min", "float", 0.0, doc="clip's lower bound"),
       AttrField("a_max", "float", 6.0, doc="clip's upper bound")]
OUT_EW = OpPattern.OUT_ELEMWISE_FUSABLE
register_op("nn.conv2d_bias_act", ["data", "weight", "bias"], conv2d_bias_act_rel, OUT_EW,
            attrs=CONV_ATTRS + ACT, doc="activation(conv2d(data, weight) + bias[channel]) (ORT FusedConv).")
register_op("nn.dense_bias_act", ["data", "weight", "bias"], dense_bias_act_rel, OUT_EW,
            attrs=[AttrField("units", "int?", None), AttrField("out_dtype", "str", "")] + ACT,
            doc="activation(dense(data, weight) + bias).")
register_op("nn.fused_matmul", ["tensor_a", "tensor_b"], matmul_rel, OUT_EW,
            attrs=[AttrField("out_dtype", "str", ""), AttrField("transpose_a", "bool", False),
                   AttrField("transpose_b", "bool", False), AttrField("alpha", "float", 1.0)],
            doc="alpha * matmul(a, b) with optional transposes (ORT FusedMatMul).")
register_op("nn.bias_gelu", ["data", "bias"], bias_gelu_rel, OpPattern.ELEMWISE,
            attrs=[AttrField("approximate", "str", "none", choices=("none", "tanh"))],
            doc="gelu(data + bias, approximate), bias over the last axis (ORT BiasGelu; FastGelu with its bias "
                "for the tanh form).")
register_op("nn.skip_layer_norm", ["data", "skip", "gamma", "beta"], skip_layer_norm_rel, OpPattern.OPAQUE,
            attrs=[AttrField("axis", "int", -1), AttrField("epsilon", "float", 1e-5),
                   AttrField("center", "bool", True), AttrField("scale", "bool", True)],
            doc="layer_norm(data + skip) over the last axis (ORT SkipLayerNormalization).")
register_op("nn.feed_forward", ["data", "weight1", "bias1", "weight2", "bias2"], feed_forward_rel,
            OpPattern.OPAQUE, doc="dense(gelu(dense(data, weight1) + bias1), weight2) + bias2, exact GELU (a transformer's feed-forward).")
_SCALE = [AttrField("scale", "float", 1.0),
          AttrField("nan_rows", "str", "keep", choices=("keep", "zero"),
                    doc="a row of probabilities that is NaN (a row the mask hides with -inf throughout, or NaN "
                        "scores) stays NaN (`keep`, the plain formula) or is 0 (`zero`: torch SDPA's export guard "
                        "`where(isnan(p), 0, p)`, and ONNX Runtime's kernel on a hidden row)"),
          AttrField("softcap", "float", 0.0,
                    doc="where positive, the scaled scores s are soft-capped to tanh(s / softcap) * softcap "
                        "before the mask is added (Gemma-2's logit soft-capping, ONNX Attention's `softcap`)")]
register_op("nn.attention", ["query", "key", "value"], attention_rel, OpPattern.OPAQUE, attrs=_SCALE,
            doc="softmax(query @ key^T * scale, last axis) @ value (ONNX Attention without a mask); "
                "`nan_rows` says what a NaN row of the softmax is.")
register_op("nn.masked_attention", ["query", "key", "value", "mask"], attention_rel, OpPattern.OPAQUE,
            attrs=_SCALE,
            doc="softmax(query @ key^T * scale + mask, last axis) @ value, an additive mask (ONNX Attention); "
                "`nan_rows` says what a NaN row of the softmax is.")
register_op("nn.cached_attention", ["query", "key", "value", "past_key", "past_value", "mask"], cached_attention_rel,
            OpPattern.OPAQUE, attrs=_SCALE,
            doc="(masked_attention(query, K, V, mask), K, V) with K = concatenate((past_key, key), -2) and V "
                "likewise: a decode step's attention over its key/value cache, returning the grown cache (ONNX "
                "Attention with past_key/past_value and present_key/present_value).")
