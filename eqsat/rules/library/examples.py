"""A small program for every library rule, on which the rule fires: its numerical check.

`tests/eqsat/test_library.py` saturates each example with its rule and compares every program
in the root class with the original on random inputs.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ir import Expr, relay

__all__ = ["EXAMPLES"]

_rng = np.random.default_rng(7)


def _const(*shape: int, positive: bool = False) -> Expr:
    data = _rng.random(shape) + (0.5 if positive else -0.5)
    return relay.const(data.astype("float32"))


def _var(name: str, *shape: int) -> Expr:
    return relay.var(name, shape=shape)


def _bn(data: Expr, channels: int) -> Expr:
    return relay.nn.batch_norm(data, _const(channels), _const(channels), _const(channels),
                               _const(channels, positive=True))[0]


EXAMPLES: dict[str, Callable[[], Expr]] = {
    "relu-idempotent": lambda: relay.nn.relu(relay.nn.relu(_var("x", 2, 3))),
    "double-negation": lambda: relay.negative(relay.negative(_var("x", 2, 3))),
    "transpose-compose": lambda: relay.transpose(relay.transpose(_var("x", 2, 3, 4), (1, 2, 0)), (2, 0, 1)),
    "transpose-identity": lambda: relay.transpose(_var("x", 2, 3, 4), (0, 1, 2)),
    "reshape-compose": lambda: relay.reshape(relay.reshape(_var("x", 2, 3, 4), (6, 4)), (4, -1)),
    "reshape-noop": lambda: relay.reshape(_var("x", 2, 3), (2, 3)),
    "add-zero": lambda: relay.add(_var("x", 2, 3), relay.const(np.full(3, -0.0, "float32"))),
    "multiply-one": lambda: relay.multiply(_var("x", 2, 3), relay.const(np.ones((2, 3), "float32"))),
    "add-commute": lambda: relay.add(_var("x", 2, 3), _var("y", 3)),
    "multiply-commute": lambda: relay.multiply(_var("x", 2, 3), _var("y", 2, 1)),
    "add-associate": lambda: relay.add(relay.add(_var("x", 2, 3), _var("y", 3)), _var("z", 2, 1)),
    "add-associate-rev": lambda: relay.add(_var("x", 2, 3), relay.add(_var("y", 3), _var("z", 2, 1))),
    "multiply-associate": lambda: relay.multiply(relay.multiply(_var("x", 2, 3), _var("y", 3)), _var("z", 2, 3)),
    "multiply-associate-rev": lambda: relay.multiply(_var("x", 2, 3), relay.multiply(_var("y", 3), _var("z", 2, 3))),
    "batch-norm-to-affine": lambda: _bn(_var("x", 2, 4, 3), 4),
    "fold-batch-norm-into-conv": lambda: _bn(relay.nn.conv2d(_var("x", 1, 3, 6, 6), _const(4, 3, 3, 3),
                                                            padding=(1, 1)), 4),
    "conv-bias": lambda: relay.nn.bias_add(relay.nn.conv2d(_var("x", 1, 3, 6, 6), _var("w", 4, 3, 3, 3),
                                                           padding=(1, 1)), _var("b", 4)),
    "conv-bias-relu": lambda: relay.nn.relu(_fused_conv()),
    "conv-bias-sigmoid": lambda: relay.sigmoid(_fused_conv()),
    "conv-bias-tanh": lambda: relay.tanh(_fused_conv()),
    "dense-bias": lambda: relay.add(relay.nn.dense(_var("x", 2, 5), _var("w", 3, 5)), _var("b", 3)),
    "dense-bias-relu": lambda: relay.nn.relu(_fused_dense()),
    "dense-bias-sigmoid": lambda: relay.sigmoid(_fused_dense()),
    "dense-bias-tanh": lambda: relay.tanh(_fused_dense()),
    "bias-gelu": lambda: relay.nn.gelu(relay.add(_var("x", 2, 5), _var("b", 5))),
    "skip-layer-norm": lambda: relay.nn.layer_norm(relay.add(_var("x", 2, 5), _var("s", 2, 5)), _var("g", 5),
                                                   _var("be", 5)),
    "scaled-matmul": lambda: relay.multiply(relay.nn.matmul(_var("a", 2, 3), _var("b", 3, 4)),
                                            relay.const(np.float32(0.5))),
    "bias-add-as-add": lambda: relay.nn.bias_add(_var("x", 1, 4, 3, 3), _var("b", 4)),
    "merge-parallel-conv": lambda: _merge_conv(),
    "merge-parallel-dense": lambda: _merge_dense(),
}


def _fused_conv() -> Expr:
    return relay.nn.conv2d_bias_act(_var("x", 1, 3, 6, 6), _var("w", 4, 3, 3, 3), _var("b", 4), padding=(1, 1))


def _fused_dense() -> Expr:
    return relay.nn.dense_bias_act(_var("x", 2, 5), _var("w", 3, 5), _var("b", 3))


def _merge_conv() -> Expr:
    x = _var("x", 1, 3, 6, 6)
    return relay.add(relay.nn.conv2d(x, _var("w1", 4, 3, 3, 3), padding=(1, 1)),
                     relay.nn.conv2d(x, _var("w2", 4, 3, 3, 3), padding=(1, 1)))


def _merge_dense() -> Expr:
    x = _var("x", 2, 5)
    return relay.Tuple([relay.nn.dense(x, _var("w1", 3, 5)), relay.nn.dense(x, _var("w2", 4, 5))])
