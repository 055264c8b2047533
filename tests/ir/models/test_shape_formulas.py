"""Output shapes follow each architecture's formula across batch sizes, image sizes and widths."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ir

from .conftest import output_type, shapes

QUICK = settings(max_examples=12, deadline=None, derandomize=True)
WIDTHS = st.sampled_from([0.125, 0.25, 0.5])


def _halve(size: int) -> int:
    return math.ceil(size / 2)


@QUICK
@given(batch=st.integers(1, 3), image=st.integers(1, 80), width=WIDTHS)
def test_resnet_features_are_2048w_at_ceil_image_over_32(batch, image, width):
    for builder in (ir.models.resnet50, ir.models.resnext50):
        mod, _ = builder(batch=batch, image=image, width=width, num_classes=None, weights=False)
        side = math.ceil(image / 32)
        assert shapes(output_type(mod)) == (batch, int(2048 * width), side, side)


@QUICK
@given(batch=st.integers(1, 3), image=st.integers(1, 80), width=WIDTHS)
def test_mobilenet_v2_features_are_1280_at_ceil_image_over_32(batch, image, width):
    mod, _ = ir.models.mobilenet_v2(batch=batch, image=image, width=width, num_classes=None, weights=False)
    side = math.ceil(image / 32)
    assert shapes(output_type(mod)) == (batch, 1280, side, side)


@QUICK
@given(batch=st.integers(1, 3), image=st.integers(32, 100), width=WIDTHS)
def test_vgg19_features_are_512w_at_floor_image_over_32(batch, image, width):
    mod, _ = ir.models.vgg19(batch=batch, image=image, width=width, num_classes=None, weights=False)
    assert shapes(output_type(mod)) == (batch, int(512 * width), image // 32, image // 32)


@QUICK
@given(batch=st.integers(1, 3), image=st.integers(1, 80), width=WIDTHS)
def test_nasneta_features_are_5120w_at_ceil_image_over_32(batch, image, width):
    mod, _ = ir.models.nasneta(batch=batch, image=image, width=width, layers=1, num_classes=None, weights=False)
    side = math.ceil(image / 32)
    assert shapes(output_type(mod)) == (batch, int(5120 * width), side, side)


@pytest.mark.parametrize("version, stem_kernel", [("1.0", 7), ("1.1", 3)])
@pytest.mark.parametrize("image", [64, 97, 224])
def test_squeezenet_features_follow_its_ceil_mode_pools(version, stem_kernel, image):
    mod, _ = ir.models.squeezenet(image=image, width=0.25, version=version, num_classes=None, weights=False)
    side = (image - stem_kernel) // 2 + 1
    for _ in range(3):
        side = math.ceil((side - 3) / 2) + 1
    assert shapes(output_type(mod)) == (1, 128, side, side)


@pytest.mark.parametrize("image, side", [(75, 1), (139, 3), (299, 8)])
def test_inception_v3_features(image, side):
    mod, _ = ir.models.inception_v3(image=image, width=0.25, num_classes=None, weights=False)
    assert shapes(output_type(mod)) == (1, 512, side, side)


@pytest.mark.parametrize("name", ["resnet50", "resnext50", "vgg19", "squeezenet", "inception_v3", "mobilenet_v2",
                                  "nasneta"])
@pytest.mark.parametrize("batch, num_classes", [(1, 7), (4, 1000)])
def test_cnn_logits_are_batch_by_num_classes(name, batch, num_classes):
    mod, _ = ir.models.get(name, small=True, batch=batch, num_classes=num_classes, weights=False)
    assert shapes(output_type(mod)) == (batch, num_classes)


@QUICK
@given(batch=st.integers(1, 3), seq_len=st.integers(1, 24), heads=st.sampled_from([1, 2, 4]),
       head_size=st.sampled_from([4, 8]), layers=st.integers(1, 2), token_types=st.booleans())
def test_bert_outputs_follow_batch_seq_len_and_hidden(batch, seq_len, heads, head_size, layers, token_types):
    hidden = heads * head_size
    mod, _ = ir.models.bert(batch=batch, seq_len=seq_len, hidden=hidden, heads=heads, layers=layers, vocab=50,
                            positions=32, token_types=token_types, weights=False)
    assert shapes(output_type(mod)) == ((batch, seq_len, hidden), (batch, hidden))
    assert mod["main"].attrs["data_inputs"] == (("input_ids", "token_type_ids") if token_types else ("input_ids",))


@QUICK
@given(batch=st.integers(1, 4), seq_len=st.integers(1, 6), hidden=st.integers(1, 40))
def test_nasrnn_state_and_parameter_count(batch, seq_len, hidden):
    mod, _ = ir.models.nasrnn(batch=batch, seq_len=seq_len, hidden=hidden, weights=False)
    assert shapes(output_type(mod)) == (batch, hidden)
    assert mod["main"].attrs["data_inputs"] == tuple(f"x{t}" for t in range(seq_len))
    assert ir.models.count_parameters(mod) == seq_len * 16 * hidden * hidden + hidden


@pytest.mark.parametrize("layers", [1, 3, 12])
def test_bert_parameter_count_formula(layers):
    hidden, vocab, positions, intermediate = 32, 70, 40, 48
    mod, _ = ir.models.bert(layers=layers, hidden=hidden, heads=4, intermediate=intermediate, vocab=vocab,
                            positions=positions, seq_len=8, weights=False)
    embeddings = (vocab + positions + 2) * hidden + 2 * hidden
    per_layer = 4 * (hidden * hidden + hidden) + 2 * hidden * intermediate + intermediate + hidden + 4 * hidden
    pooler = hidden * hidden + hidden
    assert ir.models.count_parameters(mod) == embeddings + layers * per_layer + pooler
