"""The registry, `get`, `count_parameters` and the builders' argument checks."""

from __future__ import annotations

import pytest

import ir
from ir import relay
from ir.models import MODELS, UnknownModelError, count_parameters, get, is_moving_statistic, list_models

EXPECTED_NAMES = ["resnet50", "resnext50", "vgg19", "squeezenet", "inception_v3", "mobilenet_v2", "bert", "nasrnn",
                  "nasneta"]


def test_list_models_is_the_registry_in_order():
    assert list_models() == EXPECTED_NAMES == list(MODELS)


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_entries_carry_builder_doc_and_small_config(name):
    entry = MODELS[name]
    assert entry.name == name
    assert entry.builder is getattr(ir.models, name)
    assert entry.summary and entry.summary in entry.doc
    assert entry.small, "a tiny configuration is required"


def test_unknown_model_lists_the_valid_names():
    with pytest.raises(UnknownModelError, match="unknown model 'resnet18'.*resnet50, resnext50.*nasneta"):
        get("resnet18")


def test_get_overrides_the_small_configuration():
    mod, params = get("resnet50", small=True, num_classes=3, batch=2, weights=False)
    assert mod["main"].body.checked_type.shape == (2, 3)
    assert params == {}


def test_unknown_keyword_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="heads"):
        get("resnet50", heads=3)


def test_moving_statistic_naming_rule():
    assert is_moving_statistic("conv1_bn_moving_mean")
    assert is_moving_statistic("layer1.0.bn1.running_var")
    assert not is_moving_statistic("conv1_bn_gamma")
    assert not is_moving_statistic("moving_mean_weight")


def _plain_module():
    x = relay.var("x", shape=(2, 4))
    w = relay.var("w", shape=(3, 4))
    mean = relay.var("bn_moving_mean", shape=(3,))
    return ir.IRModule.from_expr(relay.nn.dense(x, w) + mean)


def test_count_parameters_needs_the_data_inputs_of_foreign_modules():
    mod = _plain_module()
    with pytest.raises(ValueError, match="data_inputs"):
        count_parameters(mod)
    assert count_parameters(mod, data_inputs=["x"]) == 12
    assert count_parameters(mod, trainable_only=False, data_inputs=["x"]) == 15
    with pytest.raises(ValueError, match=r"\['y'\] are not parameters"):
        count_parameters(mod, data_inputs=["y"])


def test_count_parameters_rejects_symbolic_weights():
    x = relay.var("x", shape=(2, 4))
    w = relay.var("w", shape=("n", 4))
    mod = ir.IRModule.from_expr(relay.nn.dense(x, w))
    with pytest.raises(ValueError, match="%w needs a static tensor type"):
        count_parameters(mod, data_inputs=["x"])


@pytest.mark.parametrize("call, message", [
    (lambda: ir.models.resnet50(batch=0), "resnet50: batch must be a positive int, got 0"),
    (lambda: ir.models.nasrnn(hidden=2.5), "nasrnn: hidden must be a positive int"),
    (lambda: ir.models.mobilenet_v2(num_classes=0), "mobilenet_v2: num_classes"),
    (lambda: ir.models.resnet50(width=0), "width multiplier must be positive"),
    (lambda: ir.models.vgg19(image=31), "vgg19: image must be at least 32"),
    (lambda: ir.models.inception_v3(image=74), "inception_v3: image must be at least 75"),
    (lambda: ir.models.bert(hidden=100, heads=12), "hidden=100 is not divisible by heads=12"),
    (lambda: ir.models.bert(seq_len=513), "seq_len=513 exceeds the 512 position embeddings"),
    (lambda: ir.models.squeezenet(version="2.0"), "version must be one of"),
])
def test_bad_arguments_are_rejected_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_inception_minimum_image_is_tight():
    mod, _ = ir.models.inception_v3(image=75, width=0.125, weights=False)
    assert mod["main"].body.checked_type.shape == (1, 1000)
