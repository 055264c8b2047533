"""SqueezeNet 1.0 and 1.1 (Iandola et al.), as in torchvision."""

from __future__ import annotations

from typing import Literal

import numpy as np

from .. import relay
from ..expr import Expr
from ..module import IRModule
from .builder import ModelBuilder, require_positive, scale_channels
from .layers import conv2d

__all__ = ["squeezenet"]

#: per version: stem (channels, kernel), then the feature layers: "pool" or a fire module's
#: (squeeze, expand) channels, where each fire module has two expand branches of that width
SQUEEZENET_LAYERS = {
    "1.0": ((96, 7), ["pool", (16, 64), (16, 64), (32, 128), "pool", (32, 128), (48, 192), (48, 192), (64, 256),
                      "pool", (64, 256)]),
    "1.1": ((64, 3), ["pool", (16, 64), (16, 64), "pool", (32, 128), (32, 128), "pool", (48, 192), (48, 192),
                      (64, 256), (64, 256)]),
}


def _fire(net: ModelBuilder, x: Expr, name: str, in_channels: int, squeeze: int, expand: int) -> Expr:
    """1x1 squeeze with ReLU, then 1x1 and 3x3 expand branches with ReLU, concatenated on channels."""
    s = relay.nn.relu(conv2d(net, x, f"{name}_squeeze", in_channels, squeeze, 1, bias=True))
    e1 = relay.nn.relu(conv2d(net, s, f"{name}_expand1x1", squeeze, expand, 1, bias=True))
    e3 = relay.nn.relu(conv2d(net, s, f"{name}_expand3x3", squeeze, expand, 3, padding=1, bias=True))
    return relay.concatenate([e1, e3], axis=1)


def squeezenet(*, batch: int = 1, image: int = 224, width: float = 1.0, num_classes: int | None = 1000,
               version: Literal["1.0", "1.1"] = "1.1", seed: int = 0,
               weights: bool = True) -> tuple[IRModule, dict[str, np.ndarray]]:
    """SqueezeNet 1.1 by default (1,235,496 parameters; `version="1.0"`: 1,248,424).

    Fire modules between ceil-mode 3x3/2 max pools. The classifier is SqueezeNet's own: a 1x1
    convolution to `num_classes` channels with bias and ReLU, global average pooling and a flatten,
    giving `[batch, num_classes]` (dropout is left out). `num_classes=None` returns the last fire
    module's feature map. `width` scales every channel count.
    """
    if version not in SQUEEZENET_LAYERS:
        raise ValueError(f"squeezenet: version must be one of {sorted(SQUEEZENET_LAYERS)}, got {version!r}")
    require_positive("squeezenet", batch=batch, image=image, num_classes=num_classes)
    net = ModelBuilder("squeezenet", seed=seed, weights=weights)
    data = relay.var("data", shape=(batch, 3, image, image))
    (stem, kernel), layers = SQUEEZENET_LAYERS[version]
    channels = scale_channels(stem, width)
    x = relay.nn.relu(conv2d(net, data, "conv1", 3, channels, kernel, strides=2, bias=True))
    fires = 0
    for layer in layers:
        if layer == "pool":
            x = relay.nn.max_pool2d(x, pool_size=3, strides=2, ceil_mode=True)
            continue
        fires += 1
        squeeze, expand = (scale_channels(c, width) for c in layer)
        x = _fire(net, x, f"fire{fires + 1}", channels, squeeze, expand)
        channels = 2 * expand
    if num_classes is None:
        return net.finish([data], x)
    x = relay.nn.relu(conv2d(net, x, "conv10", channels, num_classes, 1, bias=True))
    return net.finish([data], relay.nn.batch_flatten(relay.nn.global_avg_pool2d(x)))
