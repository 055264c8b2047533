"""ResNet-50 and ResNeXt-50 (32x4d), as in torchvision (stride on the 3x3 convolution, "v1.5")."""

from __future__ import annotations

import numpy as np

from .. import relay
from ..expr import Expr
from ..module import IRModule
from .builder import ModelBuilder, require_positive, scale_channels
from .layers import classifier, conv_bn_act

__all__ = ["resnet50", "resnext50"]

#: bottleneck blocks per stage for the 50-layer networks
RESNET50_BLOCKS = (3, 4, 6, 3)


def _bottleneck(net: ModelBuilder, x: Expr, name: str, in_channels: int, inner: int, out_channels: int,
                stride: int, groups: int) -> Expr:
    """1x1 reduce, 3x3 (strided, grouped), 1x1 expand, plus the shortcut (projected when shapes change)."""
    y = conv_bn_act(net, x, f"{name}_conv1", in_channels, inner, 1)
    y = conv_bn_act(net, y, f"{name}_conv2", inner, inner, 3, strides=stride, padding=1, groups=groups)
    y = conv_bn_act(net, y, f"{name}_conv3", inner, out_channels, 1, act=None)
    if stride != 1 or in_channels != out_channels:
        x = conv_bn_act(net, x, f"{name}_downsample", in_channels, out_channels, 1, strides=stride, act=None)
    return relay.nn.relu(y + x)


def _resnet(model: str, *, groups: int, width_per_group: int, batch: int, image: int, width: float,
            num_classes: int | None, seed: int, weights: bool) -> tuple[IRModule, dict[str, np.ndarray]]:
    require_positive(model, batch=batch, image=image, num_classes=num_classes)
    net = ModelBuilder(model, seed=seed, weights=weights)
    data = relay.var("data", shape=(batch, 3, image, image))
    channels = scale_channels(64, width)
    x = conv_bn_act(net, data, "conv1", 3, channels, 7, strides=2, padding=3)
    x = relay.nn.max_pool2d(x, pool_size=3, strides=2, padding=1)
    for stage, blocks in enumerate(RESNET50_BLOCKS):
        planes = scale_channels(64 * 2 ** stage, width)
        inner = max(1, planes * width_per_group // 64) * groups
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            x = _bottleneck(net, x, f"layer{stage + 1}_{block}", channels, inner, 4 * planes, stride, groups)
            channels = 4 * planes
    return net.finish([data], classifier(net, x, channels, num_classes))


def resnet50(*, batch: int = 1, image: int = 224, width: float = 1.0, num_classes: int | None = 1000,
             seed: int = 0, weights: bool = True) -> tuple[IRModule, dict[str, np.ndarray]]:
    """ResNet-50: 16 bottleneck blocks (3, 4, 6, 3), 25,557,032 parameters at the defaults.

    Input `data` is `[batch, 3, image, image]`; the output is logits `[batch, num_classes]`, or the
    last stage's feature map `[batch, 2048 * width, ceil(image / 32), ceil(image / 32)]` when
    `num_classes=None`. `width` scales every channel count.
    """
    return _resnet("resnet50", groups=1, width_per_group=64, batch=batch, image=image, width=width,
                   num_classes=num_classes, seed=seed, weights=weights)


def resnext50(*, batch: int = 1, image: int = 224, width: float = 1.0, num_classes: int | None = 1000,
              seed: int = 0, weights: bool = True) -> tuple[IRModule, dict[str, np.ndarray]]:
    """ResNeXt-50 32x4d: ResNet-50 with 32-group 3x3 convolutions, 25,028,904 parameters at the defaults.

    The grouped convolution of stage s has `32 * 4 * 2**s` channels at width 1 (at least 32 at
    any width); inputs and outputs are as for `resnet50`.
    """
    return _resnet("resnext50", groups=32, width_per_group=4, batch=batch, image=image, width=width,
                   num_classes=num_classes, seed=seed, weights=weights)
