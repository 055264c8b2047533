"""Rotary position embedding (RoPE): `nn.rotary_embedding(data, cos, sin; interleaved)`.

`data` is (batch, heads, sequence, head size) and `cos`, `sin` hold one angle's cosine and sine
per token and rotated pair: (batch or 1, sequence, r / 2), where r <= head size is the rotary
dimension (the first r features rotate, the rest pass through). With h = r / 2 and c, s the
token's row:

    half-rotation (GPT-NeoX, Llama):  out[i]     = x[i] * c[i] + (-x[i + h]) * s[i]      i < h
                                      out[i + h] = x[i + h] * c[i] + x[i] * s[i]
    interleaved (GPT-J):              out[2i]     = x[2i] * c[i] + (-x[2i + 1]) * s[i]
                                      out[2i + 1] = x[2i + 1] * c[i] + x[2i] * s[i]

which is `x * cat(c, c) + rotate_half(x) * cat(s, s)` as PyTorch models write it. ONNX Runtime's
`com.microsoft.RotaryEmbedding` computes the same from a cos/sin cache indexed by position ids;
the exporter hands it `cos`/`sin` as that cache, one row per token, or the constant cache a gather
read them from.
"""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import TensorType, Type
from .registry import AttrField, OpPattern, register_op
from .shapes import dims_match, known, same_dtype, tensor

__all__ = ["rotary_embedding_rel", "rotary_dim"]


def rotary_dim(cos: TensorType) -> int | None:
    """The rotary dimension r of a cos/sin table (twice its last axis), None if symbolic."""
    half = cos.shape[-1]
    return 2 * half if known(half) else None


def rotary_embedding_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    """data (B, N, S, H) float; cos, sin (B or 1, S, r / 2) of its dtype with r even and <= H -> data's type."""
    names = ["data", "cos", "sin"]
    data, cos, sin = (tensor(t, n) for t, n in zip(args, names))
    same_dtype([data, cos, sin], names)
    if not data.dtype.startswith(("float", "bfloat")):
        raise ShapeError(f"rotary embedding takes float data, got {data}")
    if data.ndim != 4 or cos.ndim != 3 or not all(dims_match(a, b) for a, b in zip(cos.shape, sin.shape)):
        raise ShapeError(f"rotary embedding takes data (B, N, S, H) and cos, sin (B or 1, S, r/2) alike, "
                         f"got {data}, {cos}, {sin}")
    batch, _, seq, head = data.shape
    if not (cos.shape[0] == 1 or dims_match(cos.shape[0], batch)) or not dims_match(cos.shape[1], seq):
        raise ShapeError(f"rotary embedding: cos/sin {cos} must be (1 or {batch}, {seq}, r/2) for data {data}")
    r = rotary_dim(cos)
    if r is None or not known(head) or r > head:
        raise ShapeError(f"rotary embedding: the rotary dimension (2 x {cos.shape[-1]}) must be static and at most "
                         f"the head size {head}")
    return data


register_op("nn.rotary_embedding", ["data", "cos", "sin"], rotary_embedding_rel, OpPattern.OPAQUE,
            attrs=[AttrField("interleaved", "bool", False)],
            doc="rotary position embedding of (B, N, S, H) data by per-token cos/sin tables (B or 1, S, r/2); "
                "half-rotation or interleaved pairs (ORT RotaryEmbedding).")
