"""Layer helpers shared by the zoo, each emitting TVM's standard Relay form.

    conv_bn_act:  nn.conv2d -> nn.batch_norm -> TupleGetItem(0) -> nn.relu | clip(0, 6) | nothing
    conv2d:       nn.conv2d [-> nn.bias_add]
    dense:        nn.dense [-> nn.bias_add]
    classifier:   nn.global_avg_pool2d -> nn.batch_flatten -> nn.dense -> nn.bias_add (logits)

Weight names are the layer name plus a suffix: `_weight`, `_bias`, and for batch norm
`_bn_gamma`, `_bn_beta`, `_bn_moving_mean`, `_bn_moving_var`.
"""

from __future__ import annotations

from typing import Literal

from .. import relay
from ..expr import Expr
from ..op.nn import pair
from .builder import Initializer, ModelBuilder, he_normal, lecun_normal, normal, uniform

__all__ = [
    "Activation", "activation", "conv2d", "batch_norm", "conv_bn_act", "dense", "classifier", "layer_norm",
    "gelu", "BIAS_INIT",
]

#: Biases start small but non-zero, so that rewrites which move or fold them are observable.
BIAS_INIT = normal(0.02)

Activation = Literal["relu", "relu6"] | None


def activation(x: Expr, act: Activation) -> Expr:
    """`nn.relu(x)`, ReLU6 as `clip(x, 0, 6)`, or `x` itself for None."""
    if act == "relu":
        return relay.nn.relu(x)
    if act == "relu6":
        return relay.clip(x, a_min=0.0, a_max=6.0)
    if act is None:
        return x
    raise ValueError(f"unknown activation {act!r}; use 'relu', 'relu6' or None")


def conv2d(net: ModelBuilder, x: Expr, name: str, in_channels: int, channels: int, kernel: int | tuple[int, int],
           *, strides: int = 1, padding: int | tuple[int, ...] = 0, groups: int = 1, bias: bool = False,
           init: Initializer = he_normal) -> Expr:
    """A 2-D convolution (NCHW / OIHW), followed by `nn.bias_add` when `bias`.

    The default He initialisation suits a convolution that feeds a ReLU; pass `lecun_normal` otherwise.
    """
    if in_channels % groups or channels % groups:
        raise ValueError(f"{net.model}: layer {name!r}: {in_channels} input and {channels} output channels "
                         f"do not divide into {groups} groups")
    kh, kw = pair(kernel)
    weight = net.weight(f"{name}_weight", (channels, in_channels // groups, kh, kw), init)
    y = relay.nn.conv2d(x, weight, strides=strides, padding=padding, groups=groups, channels=channels,
                        kernel_size=(kh, kw))
    if bias:
        y = relay.nn.bias_add(y, net.weight(f"{name}_bias", (channels,), BIAS_INIT), axis=1)
    return y


def batch_norm(net: ModelBuilder, x: Expr, name: str, channels: int, epsilon: float = 1e-5) -> Expr:
    """Inference batch norm over axis 1; returns the normalized output (`TupleGetItem` 0).

    Scale and shift stay near identity and the moving variance is kept positive (uniform in
    [0.8, 1.2]), so stacking many of them keeps activations finite.
    """
    gamma = net.weight(f"{name}_bn_gamma", (channels,), uniform(0.8, 1.2))
    beta = net.weight(f"{name}_bn_beta", (channels,), normal(0.05))
    mean = net.weight(f"{name}_bn_moving_mean", (channels,), normal(0.05))
    var = net.weight(f"{name}_bn_moving_var", (channels,), uniform(0.8, 1.2))
    return relay.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=epsilon)[0]


def conv_bn_act(net: ModelBuilder, x: Expr, name: str, in_channels: int, channels: int,
                kernel: int | tuple[int, int], *, strides: int = 1, padding: int | tuple[int, ...] = 0,
                groups: int = 1, act: Activation = "relu", epsilon: float = 1e-5) -> Expr:
    """Bias-free convolution, batch norm, then the activation (`act=None` for none).

    The convolution is He-initialised when an activation follows, LeCun-initialised otherwise.
    """
    init = lecun_normal if act is None else he_normal
    y = conv2d(net, x, name, in_channels, channels, kernel, strides=strides, padding=padding, groups=groups,
               init=init)
    return activation(batch_norm(net, y, name, channels, epsilon), act)


def dense(net: ModelBuilder, x: Expr, name: str, in_features: int, units: int, *, bias: bool = True,
          init: Initializer = he_normal) -> Expr:
    """`nn.dense` with a `[units, in_features]` weight, then `nn.bias_add` on the last axis when `bias`.

    The default He initialisation suits a layer that feeds a ReLU; pass another `init` otherwise.
    """
    y = relay.nn.dense(x, net.weight(f"{name}_weight", (units, in_features), init), units=units)
    if bias:
        y = relay.nn.bias_add(y, net.weight(f"{name}_bias", (units,), BIAS_INIT), axis=-1)
    return y


def classifier(net: ModelBuilder, x: Expr, channels: int, num_classes: int | None) -> Expr:
    """Global average pooling, flatten and a dense layer named `fc`, giving logits `[batch, num_classes]`.

    With `num_classes=None` the feature map `x` is returned unchanged (a headless backbone).
    """
    if num_classes is None:
        return x
    pooled = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(x))
    return dense(net, pooled, "fc", channels, num_classes, init=lecun_normal)


def layer_norm(net: ModelBuilder, x: Expr, name: str, size: int, epsilon: float = 1e-12) -> Expr:
    """Layer norm over the last axis, with scale and shift near identity."""
    gamma = net.weight(f"{name}_gamma", (size,), uniform(0.8, 1.2))
    beta = net.weight(f"{name}_beta", (size,), normal(0.02))
    return relay.nn.layer_norm(x, gamma, beta, axis=-1, epsilon=epsilon)


def gelu(x: Expr) -> Expr:
    """Exact GELU spelled out as `0.5 * x * (1 + erf(x / sqrt(2)))`, the form frontends emit."""
    return relay.const(0.5) * x * (relay.const(1.0) + relay.erf(x * relay.const(2.0 ** -0.5)))
