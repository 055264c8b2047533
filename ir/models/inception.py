"""Inception-v3 (Szegedy et al., 2016), as torchvision builds it, without the auxiliary classifier."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import relay
from ..expr import Expr
from ..module import IRModule
from .builder import ModelBuilder, require_positive, scale_channels
from .layers import classifier, conv_bn_act

__all__ = ["inception_v3"]

#: torchvision's BasicConv2d uses batch norm with epsilon 0.001
BN_EPSILON = 1e-3

#: the stem: (name, channels, kernel, strides, padding) convolutions and 3x3/2 max pools
STEM = (("Conv2d_1a_3x3", 32, 3, 2, 0), ("Conv2d_2a_3x3", 32, 3, 1, 0), ("Conv2d_2b_3x3", 64, 3, 1, 1), "pool",
        ("Conv2d_3b_1x1", 80, 1, 1, 0), ("Conv2d_4a_3x3", 192, 3, 1, 0), "pool")


class _Blocks:
    """Inception blocks over one `ModelBuilder`; channel counts are scaled by `width` when used."""

    def __init__(self, net: ModelBuilder, width: float):
        self.net = net
        self.width = width

    def conv(self, x: Expr, name: str, in_channels: int, channels: int, kernel: int | tuple[int, int],
             strides: int = 1, padding: int | tuple[int, int] = 0) -> tuple[Expr, int]:
        """torchvision's BasicConv2d (bias-free convolution, batch norm, ReLU) to `channels * width`
        channels; returns the output and its channel count."""
        out = scale_channels(channels, self.width)
        return conv_bn_act(self.net, x, name, in_channels, out, kernel, strides=strides, padding=padding,
                           epsilon=BN_EPSILON), out

    def chain(self, x: Expr, name: str, in_channels: int,
              layers: Sequence[tuple[int, int | tuple[int, int], int | tuple[int, int]]],
              strides_last: int = 1) -> tuple[Expr, int]:
        """Convolutions `(channels, kernel, padding)` in sequence, the last one with `strides_last`."""
        for i, (channels, kernel, padding) in enumerate(layers):
            strides = strides_last if i == len(layers) - 1 else 1
            x, in_channels = self.conv(x, f"{name}_{i + 1}", in_channels, channels, kernel, strides, padding)
        return x, in_channels

    def avg_pool_branch(self, x: Expr, name: str, in_channels: int, channels: int) -> tuple[Expr, int]:
        """3x3/1 average pool (padding counted, as PyTorch does) and a 1x1 convolution."""
        pooled = relay.nn.avg_pool2d(x, pool_size=3, strides=1, padding=1, count_include_pad=True)
        return self.conv(pooled, name, in_channels, channels, 1)

    @staticmethod
    def concat(branches: Sequence[tuple[Expr, int]]) -> tuple[Expr, int]:
        return relay.concatenate([b for b, _ in branches], axis=1), sum(c for _, c in branches)

    def block_a(self, x: Expr, name: str, cin: int, pool_features: int) -> tuple[Expr, int]:
        return self.concat([
            self.chain(x, f"{name}_branch1x1", cin, [(64, 1, 0)]),
            self.chain(x, f"{name}_branch5x5", cin, [(48, 1, 0), (64, 5, 2)]),
            self.chain(x, f"{name}_branch3x3dbl", cin, [(64, 1, 0), (96, 3, 1), (96, 3, 1)]),
            self.avg_pool_branch(x, f"{name}_branch_pool", cin, pool_features),
        ])

    def block_b(self, x: Expr, name: str, cin: int) -> tuple[Expr, int]:
        return self.concat([
            self.chain(x, f"{name}_branch3x3", cin, [(384, 3, 0)], strides_last=2),
            self.chain(x, f"{name}_branch3x3dbl", cin, [(64, 1, 0), (96, 3, 1), (96, 3, 0)], strides_last=2),
            (relay.nn.max_pool2d(x, pool_size=3, strides=2), cin),
        ])

    def block_c(self, x: Expr, name: str, cin: int, c7: int) -> tuple[Expr, int]:
        row, col = ((1, 7), (0, 3)), ((7, 1), (3, 0))  # (kernel, padding) of the factorized 7x7
        return self.concat([
            self.chain(x, f"{name}_branch1x1", cin, [(192, 1, 0)]),
            self.chain(x, f"{name}_branch7x7", cin, [(c7, 1, 0), (c7, *row), (192, *col)]),
            self.chain(x, f"{name}_branch7x7dbl", cin,
                       [(c7, 1, 0), (c7, *col), (c7, *row), (c7, *col), (192, *row)]),
            self.avg_pool_branch(x, f"{name}_branch_pool", cin, 192),
        ])

    def block_d(self, x: Expr, name: str, cin: int) -> tuple[Expr, int]:
        return self.concat([
            self.chain(x, f"{name}_branch3x3", cin, [(192, 1, 0), (320, 3, 0)], strides_last=2),
            self.chain(x, f"{name}_branch7x7x3", cin,
                       [(192, 1, 0), (192, (1, 7), (0, 3)), (192, (7, 1), (3, 0)), (192, 3, 0)], strides_last=2),
            (relay.nn.max_pool2d(x, pool_size=3, strides=2), cin),
        ])

    def split_1x3_3x1(self, x: Expr, name: str, cin: int) -> tuple[Expr, int]:
        """Parallel 1x3 and 3x1 convolutions of `x`, concatenated (Inception-E's expanded filter bank)."""
        return self.concat([
            self.conv(x, f"{name}a", cin, 384, (1, 3), padding=(0, 1)),
            self.conv(x, f"{name}b", cin, 384, (3, 1), padding=(1, 0)),
        ])

    def block_e(self, x: Expr, name: str, cin: int) -> tuple[Expr, int]:
        b3, c3 = self.chain(x, f"{name}_branch3x3", cin, [(384, 1, 0)])
        bd, cd = self.chain(x, f"{name}_branch3x3dbl", cin, [(448, 1, 0), (384, 3, 1)])
        return self.concat([
            self.chain(x, f"{name}_branch1x1", cin, [(320, 1, 0)]),
            self.split_1x3_3x1(b3, f"{name}_branch3x3_2", c3),
            self.split_1x3_3x1(bd, f"{name}_branch3x3dbl_3", cd),
            self.avg_pool_branch(x, f"{name}_branch_pool", cin, 192),
        ])


def inception_v3(*, batch: int = 1, image: int = 299, width: float = 1.0, num_classes: int | None = 1000,
                 seed: int = 0, weights: bool = True) -> tuple[IRModule, dict[str, np.ndarray]]:
    """Inception-v3 inference graph, 23,834,568 parameters at the defaults.

    That is torchvision's published 27,161,264 minus its auxiliary classifier (3,326,696: a 1x1
    conv 768->128 and a 5x5 conv 128->768, each with batch norm, and a dense 768->1000), which
    only training uses. Input `data` is `[batch, 3, image, image]` (image >= 75; 299 published);
    the output is logits `[batch, num_classes]`, or the 2048-channel (at width 1) last feature map
    with `num_classes=None`. `width` scales every channel count.
    """
    require_positive("inception_v3", batch=batch, image=image, num_classes=num_classes)
    if image < 75:
        raise ValueError(f"inception_v3: image must be at least 75 (its stem and grid reductions need it), "
                         f"got {image}")
    net = ModelBuilder("inception_v3", seed=seed, weights=weights)
    blocks = _Blocks(net, width)
    data = relay.var("data", shape=(batch, 3, image, image))
    x, c = data, 3
    for layer in STEM:
        if layer == "pool":
            x = relay.nn.max_pool2d(x, pool_size=3, strides=2)
            continue
        name, *conv = layer
        x, c = blocks.conv(x, name, c, *conv)
    for name, pool_features in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):
        x, c = blocks.block_a(x, name, c, pool_features)
    x, c = blocks.block_b(x, "Mixed_6a", c)
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        x, c = blocks.block_c(x, name, c, c7)
    x, c = blocks.block_d(x, "Mixed_7a", c)
    for name in ("Mixed_7b", "Mixed_7c"):
        x, c = blocks.block_e(x, name, c)
    return net.finish([data], classifier(net, x, c, num_classes))
