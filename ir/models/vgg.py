"""VGG-19 (configuration "E" of Simonyan & Zisserman), as in torchvision without batch norm."""

from __future__ import annotations

import numpy as np

from .. import relay
from ..module import IRModule
from .builder import ModelBuilder, lecun_normal, require_positive, scale_channels
from .layers import conv2d, dense

__all__ = ["vgg19"]

#: convolution channels per stage; every stage ends in a 2x2 max pool
VGG19_STAGES = ((64, 64), (128, 128), (256, 256, 256, 256), (512, 512, 512, 512), (512, 512, 512, 512))


def vgg19(*, batch: int = 1, image: int = 224, width: float = 1.0, num_classes: int | None = 1000,
          seed: int = 0, weights: bool = True) -> tuple[IRModule, dict[str, np.ndarray]]:
    """VGG-19: 16 3x3 convolutions with bias and ReLU, then three dense layers; 143,667,240 parameters.

    The classifier flattens the last feature map (`7 x 7` at image 224, `image // 32` in general;
    there is no adaptive pooling), then applies dense 4096, ReLU, dense 4096, ReLU, dense
    `num_classes` (dropout is an identity at inference and is left out). `width` scales the
    convolution channels and the 4096-unit layers. With `num_classes=None` the output is the last
    feature map `[batch, 512 * width, image // 32, image // 32]`.
    """
    require_positive("vgg19", batch=batch, image=image, num_classes=num_classes)
    if image < 32:
        raise ValueError(f"vgg19: image must be at least 32 (it passes five 2x2 max pools), got {image}")
    net = ModelBuilder("vgg19", seed=seed, weights=weights)
    data = relay.var("data", shape=(batch, 3, image, image))
    x, channels = data, 3
    for stage, widths in enumerate(VGG19_STAGES):
        for i, base in enumerate(widths):
            out = scale_channels(base, width)
            x = relay.nn.relu(conv2d(net, x, f"conv{stage + 1}_{i + 1}", channels, out, 3, padding=1, bias=True))
            channels = out
        x = relay.nn.max_pool2d(x, pool_size=2, strides=2)
    if num_classes is None:
        return net.finish([data], x)
    side = image // 32
    hidden = scale_channels(4096, width)
    x = relay.nn.batch_flatten(x)
    x = relay.nn.relu(dense(net, x, "fc6", channels * side * side, hidden))
    x = relay.nn.relu(dense(net, x, "fc7", hidden, hidden))
    return net.finish([data], dense(net, x, "fc8", hidden, num_classes, init=lecun_normal))
