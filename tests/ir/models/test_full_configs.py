"""The published architectures at their default sizes (graphs only): output shapes and parameter counts."""

from __future__ import annotations

import pytest

import ir
from ir.models import count_parameters

from .conftest import output_type, shapes

# name -> (output shape(s), trainable parameters as PyTorch counts them)
PUBLISHED = {
    "resnet50": ((1, 1000), 25_557_032),          # torchvision resnet50
    "resnext50": ((1, 1000), 25_028_904),         # torchvision resnext50_32x4d
    "vgg19": ((1, 1000), 143_667_240),            # torchvision vgg19
    "squeezenet": ((1, 1000), 1_235_496),         # torchvision squeezenet1_1
    "inception_v3": ((1, 1000), 23_834_568),      # torchvision's 27,161,264 minus the 3,326,696 of AuxLogits
    "mobilenet_v2": ((1, 1000), 3_504_872),       # torchvision mobilenet_v2
    "bert": (((1, 128, 768), (1, 768)), 109_482_240),  # bert-base-uncased with pooler
    "nasrnn": ((1, 512), 5 * 16 * 512 * 512 + 512),    # TASO/TENSAT: 16 matrices per step + initial state
    "nasneta": ((1, 1000), 39_838_528 + 5120 * 1000 + 1000),  # TENSAT's graph + the classifier
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_full_size_shape_and_parameter_count(name):
    mod, params = ir.models.get(name, weights=False)
    assert params == {}
    shape, count = PUBLISHED[name]
    assert shapes(output_type(mod)) == shape
    assert count_parameters(mod) == count


def test_squeezenet_1_0_count():
    mod, _ = ir.models.squeezenet(version="1.0", weights=False)
    assert count_parameters(mod) == 1_248_424          # torchvision squeezenet1_0
    assert shapes(output_type(mod)) == (1, 1000)


def test_nasneta_without_classifier_is_the_benchmark_graph():
    mod, _ = ir.models.nasneta(num_classes=None, weights=False)
    assert shapes(output_type(mod)) == (1, 5120, 7, 7)
    assert count_parameters(mod) == 39_838_528


def test_batch_norm_buffers_are_counted_only_when_asked():
    mod, _ = ir.models.resnet50(weights=False)
    # every batch norm adds 2 buffers per channel; resnet50's batch norms cover 26,560 channels
    assert count_parameters(mod, trainable_only=False) == 25_557_032 + 2 * 26_560


@pytest.mark.parametrize("name", ["squeezenet", "mobilenet_v2"])
def test_full_size_weights_cover_every_parameter(name):
    mod, params = ir.models.get(name)
    assert sum(a.size for a in params.values()) == count_parameters(mod, trainable_only=False)
    assert count_parameters(mod) == PUBLISHED[name][1]
