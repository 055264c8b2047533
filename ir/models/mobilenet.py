"""MobileNet-v2 (Sandler et al., 2018), as in torchvision."""

from __future__ import annotations

import numpy as np

from .. import relay
from ..expr import Expr
from ..module import IRModule
from .builder import ModelBuilder, require_positive, scale_channels
from .layers import classifier, conv_bn_act

__all__ = ["mobilenet_v2"]

#: inverted residual stages: (expansion t, output channels c, repeats n, first stride s)
MOBILENET_V2_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                       (6, 160, 3, 2), (6, 320, 1, 1))


def _inverted_residual(net: ModelBuilder, x: Expr, name: str, in_channels: int, out_channels: int, stride: int,
                       expansion: int) -> Expr:
    """1x1 expansion (skipped for t=1), 3x3 depthwise, linear 1x1 projection; a residual add when shapes match."""
    hidden = in_channels * expansion
    y = x
    if expansion != 1:
        y = conv_bn_act(net, y, f"{name}_expand", in_channels, hidden, 1, act="relu6")
    y = conv_bn_act(net, y, f"{name}_depthwise", hidden, hidden, 3, strides=stride, padding=1, groups=hidden,
                    act="relu6")
    y = conv_bn_act(net, y, f"{name}_project", hidden, out_channels, 1, act=None)
    return y + x if stride == 1 and in_channels == out_channels else y


def mobilenet_v2(*, batch: int = 1, image: int = 224, width: float = 1.0, num_classes: int | None = 1000,
                 seed: int = 0, weights: bool = True) -> tuple[IRModule, dict[str, np.ndarray]]:
    """MobileNet-v2: 17 inverted residual blocks with ReLU6 (`clip(0, 6)`), 3,504,872 parameters.

    Channel counts are `width` times the published ones, rounded to multiples of 8 as torchvision
    does; the last 1x1 convolution has 1280 channels (more when width > 1). The output is logits
    `[batch, num_classes]` (dropout is left out), or the last feature map
    `[batch, 1280, ceil(image / 32), ceil(image / 32)]` with `num_classes=None`.
    """
    require_positive("mobilenet_v2", batch=batch, image=image, num_classes=num_classes)
    net = ModelBuilder("mobilenet_v2", seed=seed, weights=weights)
    data = relay.var("data", shape=(batch, 3, image, image))
    channels = scale_channels(32, width, 8)
    x = conv_bn_act(net, data, "conv_stem", 3, channels, 3, strides=2, padding=1, act="relu6")
    block = 0
    for expansion, base, repeats, first_stride in MOBILENET_V2_STAGES:
        out = scale_channels(base, width, 8)
        for i in range(repeats):
            x = _inverted_residual(net, x, f"block{block}", channels, out, first_stride if i == 0 else 1, expansion)
            channels, block = out, block + 1
    last = scale_channels(1280, max(1.0, width), 8)
    x = conv_bn_act(net, x, "conv_last", channels, last, 1, act="relu6")
    return net.finish([data], classifier(net, x, last, num_classes))
