"""BERT (Devlin et al., 2019) encoder with pooler, in the shape Relay frontends import it."""

from __future__ import annotations

import math

import numpy as np

from .. import relay
from ..expr import Expr, Tuple
from ..module import IRModule
from .builder import ModelBuilder, normal, require_positive
from .layers import dense, gelu, layer_norm

__all__ = ["bert"]

#: BERT's initializer_range: every dense weight and embedding table is N(0, 0.02)
INIT = normal(0.02)


def _split_heads(x: Expr, batch: int, seq_len: int, heads: int, head_size: int, keys_last: bool = False) -> Expr:
    """`[batch * seq_len, hidden]` -> `[batch * heads, seq_len, head_size]`, or with the last two
    axes swapped when `keys_last` (the `[batch, N, K]` operand `nn.batch_matmul` expects)."""
    x = relay.reshape(x, newshape=[batch, seq_len, heads, head_size])
    if keys_last:
        return relay.reshape(relay.transpose(x, axes=[0, 2, 3, 1]), newshape=[batch * heads, head_size, seq_len])
    return relay.reshape(relay.transpose(x, axes=[0, 2, 1, 3]), newshape=[batch * heads, seq_len, head_size])


def _self_attention(net: ModelBuilder, x: Expr, name: str, batch: int, seq_len: int, hidden: int,
                    heads: int) -> Expr:
    """Multi-head scaled dot-product self-attention over `x` of shape `[batch * seq_len, hidden]`."""
    head_size = hidden // heads
    q, k, v = (_split_heads(dense(net, x, f"{name}_{part}", hidden, hidden, init=INIT), batch, seq_len, heads,
                            head_size, keys_last=part == "value")
               for part in ("query", "key", "value"))
    scores = relay.nn.batch_matmul(q, k) / relay.const(math.sqrt(head_size))
    context = relay.nn.batch_matmul(relay.nn.softmax(scores, axis=-1), v)  # [batch * heads, seq_len, head_size]
    context = relay.reshape(context, newshape=[batch, heads, seq_len, head_size])
    return relay.reshape(relay.transpose(context, axes=[0, 2, 1, 3]), newshape=[batch * seq_len, hidden])


def _encoder_layer(net: ModelBuilder, x: Expr, name: str, batch: int, seq_len: int, hidden: int, heads: int,
                   intermediate: int) -> Expr:
    """Self-attention and a GELU feed-forward block, each with a residual add and a post layer norm."""
    attended = _self_attention(net, x, f"{name}_attention", batch, seq_len, hidden, heads)
    attended = dense(net, attended, f"{name}_attention_output", hidden, hidden, init=INIT)
    x = layer_norm(net, attended + x, f"{name}_attention_layer_norm", hidden)
    inner = gelu(dense(net, x, f"{name}_intermediate", hidden, intermediate, init=INIT))
    out = dense(net, inner, f"{name}_output", intermediate, hidden, init=INIT)
    return layer_norm(net, out + x, f"{name}_output_layer_norm", hidden)


def bert(*, batch: int = 1, seq_len: int = 128, layers: int = 12, hidden: int = 768, heads: int = 12,
         intermediate: int | None = None, vocab: int = 30522, positions: int = 512, type_vocab: int = 2,
         token_types: bool = True, seed: int = 0, weights: bool = True) -> tuple[IRModule, dict[str, np.ndarray]]:
    """BERT-base by default (12 layers, hidden 768, 12 heads, 3072 intermediate): 109,482,240 parameters.

    Inputs are int32 `input_ids` `[batch, seq_len]` and, when `token_types`, int32
    `token_type_ids` of the same shape (otherwise every token has type 0). Embeddings are looked
    up with `take`; attention uses `nn.dense` + `nn.bias_add`, `reshape`/`transpose` to split heads,
    `nn.batch_matmul` and `nn.softmax`; GELU is the erf formula. There is no attention mask (every
    position attends to every other). `intermediate` defaults to `4 * hidden`. The output is the
    tuple `(sequence_output [batch, seq_len, hidden], pooled_output [batch, hidden])`, the pooled
    output being `tanh(dense(first token))`.
    """
    require_positive("bert", batch=batch, seq_len=seq_len, layers=layers, hidden=hidden, heads=heads,
                     intermediate=intermediate, vocab=vocab, positions=positions, type_vocab=type_vocab)
    if hidden % heads:
        raise ValueError(f"bert: hidden={hidden} is not divisible by heads={heads}")
    if seq_len > positions:
        raise ValueError(f"bert: seq_len={seq_len} exceeds the {positions} position embeddings")
    intermediate = intermediate or 4 * hidden
    net = ModelBuilder("bert", seed=seed, weights=weights)
    input_ids = relay.var("input_ids", shape=(batch, seq_len), dtype="int32")
    inputs = [input_ids]
    word = net.weight("embeddings_word", (vocab, hidden), INIT)
    position = net.weight("embeddings_position", (positions, hidden), INIT)
    token_type = net.weight("embeddings_token_type", (type_vocab, hidden), INIT)
    x = relay.take(word, input_ids, axis=0)
    x = x + relay.take(position, relay.const(np.arange(seq_len, dtype=np.int32)), axis=0)
    if token_types:
        inputs.append(relay.var("token_type_ids", shape=(batch, seq_len), dtype="int32"))
        x = x + relay.take(token_type, inputs[-1], axis=0)
    else:
        x = x + relay.take(token_type, relay.const(0), axis=0)
    x = layer_norm(net, x, "embeddings_layer_norm", hidden)
    x = relay.reshape(x, newshape=[batch * seq_len, hidden])
    for layer in range(layers):
        x = _encoder_layer(net, x, f"layer{layer}", batch, seq_len, hidden, heads, intermediate)
    sequence = relay.reshape(x, newshape=[batch, seq_len, hidden])
    first = relay.reshape(relay.strided_slice(sequence, begin=[0], end=[1], axes=[1]), newshape=[batch, hidden])
    pooled = relay.tanh(dense(net, first, "pooler", hidden, hidden, init=INIT))
    return net.finish(inputs, Tuple([sequence, pooled]))
