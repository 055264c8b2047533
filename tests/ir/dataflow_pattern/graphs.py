"""Hand-built graphs for the pattern tests: ResNet-style blocks and very deep chains."""

from __future__ import annotations

import numpy as np

from ir import relay
from ir.expr import Call, Expr, Function, Var
from ir.visitor import bind, rebuild


def conv_bn_relu(x: Expr, in_channels: int, out_channels: int, name: str, relu: bool = True) -> Expr:
    """conv2d (3x3, same padding) -> batch_norm -> [0] -> relu, with typed weight variables."""
    w = relay.var(f"{name}_weight", shape=(out_channels, in_channels, 3, 3))
    stats = [relay.var(f"{name}_bn_{k}", shape=(out_channels,)) for k in ("gamma", "beta", "mean", "var")]
    y = relay.nn.batch_norm(relay.nn.conv2d(x, w, padding=(1, 1)), *stats)[0]
    return relay.nn.relu(y) if relu else y


def resnet_like(blocks: int = 2, channels: int = 4, image: int = 8) -> tuple[Var, Expr]:
    """A stem conv-bn-relu and `blocks` basic residual blocks: relu(bn(conv(relu(bn(conv(x))))) + x)."""
    data = relay.var("data", shape=(1, 3, image, image))
    x = conv_bn_relu(data, 3, channels, "stem")
    for b in range(blocks):
        y = conv_bn_relu(x, channels, channels, f"block{b}_a")
        y = conv_bn_relu(y, channels, channels, f"block{b}_b", relu=False)
        x = relay.nn.relu(y + x)
    return data, x


def conv_bias_relu_chain(layers: int, channels: int = 2, image: int = 4) -> Expr:
    """`layers` x (conv2d -> bias_add(constant) -> relu), typed, with constant weights."""
    rng = np.random.default_rng(0)
    x = relay.var("data", shape=(1, channels, image, image))
    for _ in range(layers):
        w = relay.const(rng.standard_normal((channels, channels, 3, 3)).astype("float32"))
        b = relay.const(rng.standard_normal(channels).astype("float32"))
        x = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    return x


def deep_residual_chain(depth: int) -> Expr:
    """`depth` residual steps x = x + relu(x): a graph about 2 * depth nodes deep, full of diamonds."""
    x = relay.var("x", shape=(2, 3))
    for _ in range(depth):
        x = x + relay.nn.relu(x)
    return x


def inline(expr: Expr) -> Expr:
    """Replace every call of a function literal by its body with the arguments substituted."""
    def expand(old: Expr, new: Expr) -> Expr | None:
        if isinstance(new, Call) and isinstance(new.op, Function):
            return bind(new.op.body, dict(zip(new.op.params, new.args, strict=True)))
        return None
    return rebuild(expr, expand)
