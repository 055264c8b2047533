"""Emitter of `nn.feed_forward`: Gemm, Gelu, Gemm, in column chunks whose hidden values fit a core's cache.

    nn.feed_forward(x, w1, b1, w2, b2) -> Gemm(x, w1_i, b1_i) -> Gelu -> Gemm(., w2_i, C=previous chunk's sum)

The hidden activations of a transformer's feed-forward block (rows x 4 * hidden: 1.5 MiB for
BERT-base's 128 tokens) outgrow a core's L2 cache between the two Gemms; measured in ONNX Runtime
on a 2-core AMD EPYC (1 MiB of L2 per core), twelve such blocks ran 1.13-1.18x faster in two
chunks. Chunk i takes rows i of `w1` and `b1` and columns i of `w2` (sliced at export time from
the initializers) and the second Gemm of each chunk adds the previous chunks' sum as its `C`, so
the chunks need no Add or Concat; the sum's order differs from one Gemm's only in rounding.
A block whose weights are not initializers, or whose row count is symbolic, is one chunk. Below
opset 20, which has `Gelu`, the GELU is ONNX Runtime's contrib `Gelu` with `to_onnx(contrib=True)`
and its erf formula otherwise.

Over rows known only when the model runs (`rows_known_at_run_time`), a 2-D Gemm would need Shape,
Slice, Concat and two Reshapes around the block; with initializer weights it is MatMul on the
weights transposed here, the first bias and the GELU one contrib `BiasGelu` (float32 and float16,
`to_onnx(contrib=True)`) or `Add` and `Gelu`, and MatMul and `Add` of the second bias:

    MatMul(x, w1ᵀ) -> BiasGelu(., b1) -> MatMul(., w2ᵀ) -> Add(., b2)
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ..expr import Call
from ..op.shapes import known
from .export_context import CONTRIB_DOMAIN, EmitContext, Value, emits
from .export_contrib import CONTRIB_EMITTERS, KERNEL_DTYPES
from .export_elemwise import GELU_OPSET, gelu_node
from .export_nn import gemm_over_rows, matmul_by_transposed, rows_known_at_run_time

__all__ = ["CHUNK_BYTES", "MIN_CHUNK_UNITS", "chunk_count"]

#: the most bytes of hidden activations one chunk holds: three quarters of a 1 MiB L2 cache, the rest
#: for the Gemm's own panels of the data and the weight. Half of it made BERT-base's 128 x 3072 block
#: 3 chunks, which ran the whole model (ONNX Runtime, optimizer on, interleaved, 3 runs) at 1.005-1.009x
#: the original against 1.026-1.048x as 2 chunks or one (Gemm kernel time 3-6% above 2 chunks)
CHUNK_BYTES = 3 << 18
#: the fewest hidden units a chunk may have: narrower Gemms lose more than the cache saves (measured in
#: ONNX Runtime, optimizer on: ConvNeXt-T's 3136 x 384 block ran 1.10x faster as one chunk than as 12
#: of 32 units, its 784 x 768 block 1.04x faster than as 6 of 128, and its 196 x 1536 blocks as 2
#: chunks of 768 took the whole model's Gemm kernel time from 59 to 73 ms; a 128 x 3072 block alone
#: ran 1.07x faster as 3 chunks of 1024 than as one)
MIN_CHUNK_UNITS = 1024


def chunk_count(rows: int, units: int, itemsize: int) -> int:
    """The fewest chunks, dividing `units` evenly, whose hidden values (rows x units / chunks) fit
    `CHUNK_BYTES`; one where those would be narrower than `MIN_CHUNK_UNITS`."""
    least = math.ceil(rows * units * itemsize / CHUNK_BYTES)
    count = next(c for c in range(max(least, 1), units + 1) if units % c == 0)
    return count if units // count >= MIN_CHUNK_UNITS else 1


def _chunks(ctx: EmitContext, call: Call, args: Sequence[Value]) -> int:
    data, weight1 = ctx.type_of(call.args[0]), ctx.type_of(call.args[1])
    units = weight1.shape[0]
    if not (all(known(d) for d in data.shape[:-1]) and known(units)):
        return 1
    if any(ctx.value_of(a) is None for a in args[1:4]):
        return 1
    return chunk_count(math.prod(data.shape[:-1]), units, np.dtype(data.dtype).itemsize)


Gelu = Callable[[EmitContext, str, str], str]
BiasGelu = Callable[[EmitContext, str, str, str], str]


def _standard_gelu(ctx: EmitContext, data: str, dtype: str) -> str:
    return gelu_node(ctx, data, "none", dtype)


def _contrib_gelu(ctx: EmitContext, data: str, dtype: str) -> str:
    if ctx.opset < GELU_OPSET and dtype == "float32":
        return ctx.node("Gelu", [data], domain=CONTRIB_DOMAIN)
    return _standard_gelu(ctx, data, dtype)


def _standard_bias_gelu(ctx: EmitContext, data: str, bias: str, dtype: str) -> str:
    return _standard_gelu(ctx, ctx.node("Add", [data, bias]), dtype)


def _contrib_bias_gelu(ctx: EmitContext, data: str, bias: str, dtype: str) -> str:
    if dtype in KERNEL_DTYPES:
        return ctx.node("BiasGelu", [data, bias], domain=CONTRIB_DOMAIN)
    return _standard_bias_gelu(ctx, data, bias, dtype)


@emits("nn.feed_forward")
def emit_feed_forward(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return _feed_forward(ctx, call, args, _standard_gelu, _standard_bias_gelu)


def _over_tokens(ctx: EmitContext, call: Call, args: Sequence[Value], bias_gelu: BiasGelu) -> Value | None:
    """The block as MatMuls over data whose rows are known only when the model runs (see the module's
    docstring); None where they are not, or a weight is no initializer."""
    data, weight1, bias1, weight2, bias2 = args
    weights = [ctx.value_of(weight1), ctx.value_of(weight2)]
    if not rows_known_at_run_time(ctx, call) or any(w is None for w in weights):
        return None
    hidden = bias_gelu(ctx, matmul_by_transposed(ctx, data, weights[0]), bias1, ctx.type_of(call).dtype)
    return ctx.node("Add", [matmul_by_transposed(ctx, hidden, weights[1]), bias2])


def _feed_forward(ctx: EmitContext, call: Call, args: Sequence[Value], gelu: Gelu, bias_gelu: BiasGelu) -> Value:
    over_tokens = _over_tokens(ctx, call, args, bias_gelu)
    if over_tokens is not None:
        return over_tokens
    data, weight1, bias1, weight2, bias2 = args
    dtype = ctx.type_of(call).dtype
    count = _chunks(ctx, call, args)
    if count == 1:
        parts = [(weight1, bias1, weight2)]
    else:
        sliced = zip(*(np.split(ctx.value_of(a), count, axis=axis) for a, axis in zip(args[1:4], (0, 0, 1))))
        parts = [tuple(ctx.const(np.ascontiguousarray(p)) for p in part) for part in sliced]
    parts = [(ctx.gemm_weight(w1), b1, ctx.gemm_weight(w2)) for w1, b1, w2 in parts]

    def block(rows: Value) -> Value:
        total = bias2
        for (w1, t1), b1, (w2, t2) in parts:
            hidden = gelu(ctx, ctx.node("Gemm", [rows, w1, b1], transB=t1), dtype)
            total = ctx.node("Gemm", [hidden, w2, total], transB=t2)
        return total
    return gemm_over_rows(ctx, call, data, block)


CONTRIB_EMITTERS["nn.feed_forward"] = lambda ctx, call, args: _feed_forward(ctx, call, args, _contrib_gelu,
                                                                            _contrib_bias_gelu)
