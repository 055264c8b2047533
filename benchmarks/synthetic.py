"""Synthetic DL-like programs of a chosen size, for scaling runs of the e-graph engine.

`dl_dag(n_nodes)` stacks randomly chosen blocks over one small NCHW feature map, the shapes
every CNN in the zoo repeats: conv -> batch norm -> relu, conv -> bias -> relu, two convolutions
(1x1 and 3x3, as in Inception) sharing an input, residual adds, swish and tanh gates. Each block
reads the block before it; residual adds and gates also read an earlier block (a geometric
look-back), so the program is a chain with skip connections as in ResNet or NASNet, and the
default rule set finds batch norms to fold, biases to fuse and convolutions to merge. Weights are
small inline constants drawn from a seeded generator: the same arguments give the same program.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

import ir
from ir import relay
from ir.visitor import post_order

__all__ = ["dl_dag"]

_Block = Callable[["_Builder"], ir.Expr]
_LOOK_BACK = 32
"""how many of the latest blocks a new block may read."""


class _Builder:
    """The growing program: the blocks built so far and the random source that picks inputs."""

    def __init__(self, channels: int, spatial: int, seed: int):
        self.channels = channels
        self.rng = np.random.default_rng(seed)
        self.pool: list[ir.Expr] = [relay.var("data", shape=(1, channels, spatial, spatial))]
        self.nodes = 1
        """IR nodes reachable from the blocks built so far."""

    def add(self, block: ir.Expr) -> None:
        """Append a block, counting only its new nodes (the blocks it reads are counted already)."""
        self.nodes += sum(1 for _ in post_order(block, stop=set(self.pool[-_LOOK_BACK:])))
        self.pool.append(block)

    def last(self) -> ir.Expr:
        return self.pool[-1]

    def earlier(self) -> ir.Expr:
        """A recent block: the last one most often, older ones with geometrically falling odds."""
        back = min(int(self.rng.geometric(0.3)) - 1, len(self.pool) - 1, _LOOK_BACK - 1)
        return self.pool[len(self.pool) - 1 - back]

    def weight(self, *shape: int, scale: float = 0.3) -> ir.Constant:
        return relay.const((self.rng.standard_normal(shape) * scale).astype("float32"))

    def conv(self, data: ir.Expr, kernel: int = 3) -> ir.Expr:
        c = self.channels
        return relay.nn.conv2d(data, self.weight(c, c, kernel, kernel), padding=(kernel // 2, kernel // 2))

    def batch_norm(self, data: ir.Expr) -> ir.Expr:
        c = self.channels
        stats = [self.weight(c), self.weight(c), self.weight(c),
                 relay.const(self.rng.uniform(0.5, 1.5, c).astype("float32"))]
        return relay.TupleGetItem(relay.nn.batch_norm(data, *stats), 0)


def _conv_bn_relu(b: _Builder) -> ir.Expr:
    return relay.nn.relu(b.batch_norm(b.conv(b.last())))


def _conv_bias_relu(b: _Builder) -> ir.Expr:
    return relay.nn.relu(relay.nn.bias_add(b.conv(b.last()), b.weight(b.channels)))


def _parallel_convs(b: _Builder) -> ir.Expr:
    data = b.last()
    return relay.add(b.conv(data, kernel=1), relay.nn.relu(b.conv(data)))


def _residual(b: _Builder) -> ir.Expr:
    return relay.add(b.last(), b.earlier())


def _swish(b: _Builder) -> ir.Expr:
    data = b.last()
    return relay.multiply(data, relay.sigmoid(data))


def _tanh_gate(b: _Builder) -> ir.Expr:
    return relay.multiply(relay.tanh(b.last()), relay.sigmoid(b.earlier()))


_BLOCKS: tuple[tuple[_Block, float], ...] = (
    (_conv_bn_relu, 0.3), (_conv_bias_relu, 0.2), (_parallel_convs, 0.1),
    (_residual, 0.2), (_swish, 0.1), (_tanh_gate, 0.1),
)


def dl_dag(n_nodes: int, *, seed: int = 0, channels: int = 4, spatial: int = 4) -> ir.IRModule:
    """A type-checked program of about `n_nodes` IR nodes (at most one block more) built from DL blocks.

    The input is `data` `[1, channels, spatial, spatial]` and the output is the last block, of the
    same type. Weights are inline constants, so no params are needed.
    """
    if n_nodes < 1:
        raise ValueError(f"dl_dag: n_nodes must be positive, got {n_nodes}")
    builder = _Builder(channels, spatial, seed)
    blocks, weights = zip(*_BLOCKS)
    probabilities = np.asarray(weights) / sum(weights)
    while builder.nodes < n_nodes:
        block = blocks[int(builder.rng.choice(len(blocks), p=probabilities))]
        builder.add(block(builder))
    mod = ir.IRModule.from_expr(builder.last())
    ir.infer_type(mod)
    return mod
