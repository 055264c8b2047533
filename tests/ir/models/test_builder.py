"""`ModelBuilder`, the initialisers and the channel rounding rule."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay
from ir.models.builder import ModelBuilder, he_normal, lecun_normal, normal, scale_channels, uniform
from ir.models.layers import conv2d


def test_finish_puts_inputs_first_and_types_the_module():
    net = ModelBuilder("toy", seed=0)
    x = relay.var("x", shape=(2, 4))
    w = net.weight("w", (3, 4), he_normal)
    mod, params = net.finish([x], relay.nn.dense(x, w))
    assert [p.name_hint for p in mod["main"].params] == ["x", "w"]
    assert mod["main"].attrs["data_inputs"] == ("x",)
    assert mod["main"].body.checked_type.shape == (2, 3)
    assert list(params) == ["w"] and params["w"].shape == (3, 4)


def test_weights_false_draws_nothing():
    net = ModelBuilder("toy", weights=False)
    net.weight("w", (3, 4), he_normal)
    assert net.params == {}


def test_repeated_weight_name_is_rejected():
    net = ModelBuilder("toy")
    net.weight("w", (3,), normal(1.0))
    with pytest.raises(ValueError, match="toy: the weight name 'w' is used twice"):
        net.weight("w", (3,), normal(1.0))


def test_empty_weight_shape_is_rejected():
    with pytest.raises(ValueError, match=r"toy: weight 'w' would have shape \(3, 0\)"):
        ModelBuilder("toy").weight("w", (3, 0), he_normal)


def test_unused_weight_and_undeclared_variable_are_rejected():
    x = relay.var("x", shape=(3,))
    net = ModelBuilder("toy")
    net.weight("unused", (3,), normal(1.0))
    with pytest.raises(ValueError, match=r"declared but never used: \['unused'\]"):
        net.finish([x], relay.nn.relu(x))
    stray = relay.var("stray", shape=(3,))
    with pytest.raises(ValueError, match=r"undeclared variables \['stray'\]"):
        ModelBuilder("toy").finish([x], x + stray)


def test_ill_typed_graph_names_the_model_and_op():
    net = ModelBuilder("toy")
    x = relay.var("x", shape=(2, 4))
    w = net.weight("w", (3, 5), he_normal)
    with pytest.raises(ir.TypeInferenceError, match="toy: this configuration does not type-check: nn.dense"):
        net.finish([x], relay.nn.dense(x, w))


def test_grouped_conv_channels_must_divide():
    net = ModelBuilder("toy")
    x = relay.var("x", shape=(1, 6, 4, 4))
    with pytest.raises(ValueError, match="layer 'c': 6 input and 9 output channels do not divide into 4 groups"):
        conv2d(net, x, "c", 6, 9, 3, groups=4)


def test_initialisers_have_the_documented_scales():
    rng = np.random.default_rng(0)
    he = he_normal(rng, (256, 64, 3, 3))
    lecun = lecun_normal(rng, (256, 64, 3, 3))
    assert he.dtype == lecun.dtype == np.float32
    assert he.std() == pytest.approx(np.sqrt(2 / 576), rel=0.02)
    assert lecun.std() == pytest.approx(np.sqrt(1 / 576), rel=0.02)
    u = uniform(0.8, 1.2)(rng, (1000,))
    assert u.dtype == np.float32 and 0.8 <= u.min() and u.max() < 1.2


@pytest.mark.parametrize("channels, width, divisor, expected", [
    (64, 1.0, 1, 64), (64, 0.25, 1, 16), (3, 0.1, 1, 1), (32, 0.5, 8, 16), (24, 0.35, 8, 8), (1280, 1.0, 8, 1280),
    (160, 0.75, 8, 120), (96, 0.35, 8, 32), (32, 0.35, 8, 16),
])
def test_scale_channels_follows_torchvision_make_divisible(channels, width, divisor, expected):
    assert scale_channels(channels, width, divisor) == expected
