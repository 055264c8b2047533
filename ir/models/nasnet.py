"""NASNet-A (Zoph et al., 2018) as benchmarked by TASO and TENSAT.

The graph follows TENSAT (uwplse/tensat, src/nasneta.rs), which extends TASO's
examples/nasnet_a.py with an image stem: a 7x7/2 convolution to 64 channels with ReLU and a 3x3/2
max pool, then three stages of 5 normal cells and one reduction cell, starting at 128 cell
channels and doubling at each reduction. Every cell first maps both of its inputs to the cell's
channel count with a 1x1 convolution + ReLU ("squeeze"; TENSAT's strided "fit" branch never
fires, because a cell's two inputs always share a resolution), then adds pairs of branches
(separable convolutions = depthwise kxk + pointwise 1x1 without activation, 3x3 pools, identities)
and concatenates the five sums. "SAME" padding is written as symmetric `kernel // 2` padding,
which gives the same output sizes for these odd kernels; average pools exclude the padding, as
TensorFlow's do. Convolutions have no bias and there is no batch norm, as in those benchmarks.

Beyond the benchmark graph, the network ends in the usual classifier (global average pooling and
a dense layer to `num_classes`); `num_classes=None` gives exactly the benchmark's output.
"""

from __future__ import annotations

import numpy as np

from .. import relay
from ..expr import Expr
from ..module import IRModule
from .builder import ModelBuilder, lecun_normal, require_positive, scale_channels
from .layers import classifier, conv2d

__all__ = ["nasneta"]

#: branches summed per cell, so a cell outputs this many times its channel count
CELL_OUTPUTS = 5


def _squeeze(net: ModelBuilder, x: Expr, name: str, in_channels: int, channels: int) -> Expr:
    return relay.nn.relu(conv2d(net, x, name, in_channels, channels, 1))


def _separable(net: ModelBuilder, x: Expr, name: str, channels: int, kernel: int, strides: int = 1) -> Expr:
    y = conv2d(net, x, f"{name}_depthwise", channels, channels, kernel, strides=strides, padding=kernel // 2,
               groups=channels, init=lecun_normal)
    return conv2d(net, y, f"{name}_pointwise", channels, channels, 1, init=lecun_normal)


def _avg_pool(x: Expr, strides: int = 1) -> Expr:
    return relay.nn.avg_pool2d(x, pool_size=3, strides=strides, padding=1, count_include_pad=False)


def _max_pool(x: Expr) -> Expr:
    return relay.nn.max_pool2d(x, pool_size=3, strides=2, padding=1)


def _normal_cell(net: ModelBuilder, prev: Expr, cur: Expr, name: str, prev_channels: int, cur_channels: int,
                 channels: int) -> Expr:
    cur = _squeeze(net, cur, f"{name}_squeeze_cur", cur_channels, channels)
    prev = _squeeze(net, prev, f"{name}_squeeze_prev", prev_channels, channels)
    pairs = [
        (_separable(net, cur, f"{name}_sep0", channels, 3), cur),
        (_separable(net, prev, f"{name}_sep1", channels, 3), _separable(net, cur, f"{name}_sep2", channels, 3)),
        (_avg_pool(cur), prev),
        (_avg_pool(prev), _avg_pool(prev)),  # two separate (equal) pools, as in the benchmark graph
        (_separable(net, prev, f"{name}_sep3", channels, 3), _separable(net, prev, f"{name}_sep4", channels, 3)),
    ]
    return relay.concatenate([a + b for a, b in pairs], axis=1)


def _reduction_cell(net: ModelBuilder, prev: Expr, cur: Expr, name: str, prev_channels: int, cur_channels: int,
                    channels: int) -> Expr:
    cur = _squeeze(net, cur, f"{name}_squeeze_cur", cur_channels, channels)
    prev = _squeeze(net, prev, f"{name}_squeeze_prev", prev_channels, channels)
    out0 = (_separable(net, prev, f"{name}_sep0", channels, 7, strides=2)
            + _separable(net, cur, f"{name}_sep1", channels, 5, strides=2))
    out1 = _max_pool(cur) + _separable(net, prev, f"{name}_sep2", channels, 7, strides=2)
    out2 = _avg_pool(cur, strides=2) + _separable(net, prev, f"{name}_sep3", channels, 5, strides=2)
    out3 = _max_pool(cur) + _separable(net, out0, f"{name}_sep4", channels, 3)
    out4 = _avg_pool(out0) + out1
    return relay.concatenate([out0, out1, out2, out3, out4], axis=1)


def nasneta(*, batch: int = 1, image: int = 224, width: float = 1.0, layers: int = 5,
            num_classes: int | None = 1000, seed: int = 0,
            weights: bool = True) -> tuple[IRModule, dict[str, np.ndarray]]:
    """NASNet-A: 3 stages of `layers` normal cells and a reduction cell; 44,959,528 parameters at the defaults.

    Input `data` is `[batch, 3, image, image]`. Cell channels are 128, 256, 512 per stage (times
    `width`), the last reduction cell outputs `5 * 1024 * width` channels at `ceil(image / 32)`
    resolution, and the classifier gives logits `[batch, num_classes]` (without it, the benchmark
    graph: 39,838,528 parameters). See the module docstring for the cell structure.
    """
    require_positive("nasneta", batch=batch, image=image, layers=layers, num_classes=num_classes)
    net = ModelBuilder("nasneta", seed=seed, weights=weights)
    data = relay.var("data", shape=(batch, 3, image, image))
    stem = scale_channels(64, width)
    x = _max_pool(relay.nn.relu(conv2d(net, data, "stem", 3, stem, 7, strides=2, padding=3)))
    x_channels, channels = stem, scale_channels(128, width)
    for stage in range(3):
        prev, cur, prev_channels, cur_channels = x, x, x_channels, x_channels
        for j in range(layers):
            out = _normal_cell(net, prev, cur, f"stage{stage}_normal{j}", prev_channels, cur_channels, channels)
            prev, prev_channels, cur, cur_channels = cur, cur_channels, out, CELL_OUTPUTS * channels
        channels *= 2
        x = _reduction_cell(net, prev, cur, f"stage{stage}_reduction", prev_channels, cur_channels, channels)
        x_channels = CELL_OUTPUTS * channels
    return net.finish([data], classifier(net, x, x_channels, num_classes))
