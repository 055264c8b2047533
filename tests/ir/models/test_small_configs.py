"""Every zoo model in its tiny configuration: it builds, type-checks, and its weights fit its graph."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir.models import MODELS, count_parameters, list_models

from .conftest import output_type, shapes, weight_vars

SMALL_OUTPUT_SHAPES = {
    "resnet50": (1, 10),
    "resnext50": (1, 10),
    "vgg19": (1, 10),
    "squeezenet": (1, 10),
    "inception_v3": (1, 10),
    "mobilenet_v2": (1, 10),
    "bert": ((1, 16, 64), (1, 64)),
    "nasrnn": (1, 32),
    "nasneta": (1, 10),
}


def test_every_model_has_an_expected_small_shape():
    assert sorted(SMALL_OUTPUT_SHAPES) == sorted(list_models())


@pytest.fixture(scope="module", params=list_models())
def small(request):
    mod, params = ir.models.get(request.param, small=True)
    return request.param, mod, params


def test_small_config_has_the_expected_output_shape(small):
    name, mod, _ = small
    assert shapes(output_type(mod)) == SMALL_OUTPUT_SHAPES[name]


def test_data_inputs_come_first_and_are_named(small):
    _, mod, _ = small
    main = mod["main"]
    inputs = main.attrs["data_inputs"]
    assert len(inputs) >= 1
    assert tuple(p.name_hint for p in main.params[:len(inputs)]) == inputs


def test_params_match_the_weight_vars_exactly(small):
    _, mod, params = small
    weights = weight_vars(mod)
    assert list(params) == [w.name_hint for w in weights]
    for w in weights:
        arr = params[w.name_hint]
        assert isinstance(arr, np.ndarray)
        assert arr.dtype == np.float32 and w.type_annotation.dtype == "float32"
        assert arr.shape == w.type_annotation.shape, w.name_hint
        assert np.all(np.isfinite(arr)), w.name_hint


def test_moving_variances_are_positive(small):
    _, _, params = small
    for name, arr in params.items():
        if name.endswith("moving_var"):
            assert arr.min() > 0, name


def test_count_parameters_agrees_with_the_arrays(small):
    _, mod, params = small
    assert count_parameters(mod, trainable_only=False) == sum(a.size for a in params.values())
    buffers = sum(a.size for n, a in params.items() if n.endswith(("moving_mean", "moving_var")))
    assert count_parameters(mod) == sum(a.size for a in params.values()) - buffers


@pytest.mark.parametrize("name", list_models())
def test_same_seed_same_arrays_other_seed_other_arrays(name):
    _, a = ir.models.get(name, small=True, seed=7)
    _, b = ir.models.get(name, small=True, seed=7)
    _, c = ir.models.get(name, small=True, seed=8)
    assert list(a) == list(b) == list(c)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not any(np.array_equal(a[k], c[k]) for k in a)


@pytest.mark.parametrize("name", list_models())
def test_weights_false_builds_the_same_graph_without_arrays(name):
    with_weights, _ = ir.models.get(name, small=True)
    graph_only, params = ir.models.get(name, small=True, weights=False)
    assert params == {}
    assert ir.structural_equal(with_weights["main"], graph_only["main"])


def test_small_configs_are_small():
    for name, entry in MODELS.items():
        mod, _ = entry.build(small=True, weights=False)
        assert count_parameters(mod) < 2_000_000, name
