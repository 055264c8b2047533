"""The light model zoo shipped in the onnx wheel: import, type-check, export, same outputs in ONNX Runtime.

These opset-9 models build their weights with `ConstantOfShape` (every weight 0.02), which makes all
channels alike. The `perturbed` variant replaces each such weight by a random one of the same scale,
so a mixed-up channel, transpose or group shows in the outputs too.
"""

from __future__ import annotations

import glob
import os

import numpy as np
import onnx
import pytest

import ir
from ir.frontend import from_onnx, to_onnx
from tests.ir.frontend.ort_helpers import assert_outputs_close, run_ort

LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MODELS = sorted(os.path.basename(p)[len("light_"):-len(".onnx")] for p in glob.glob(f"{LIGHT_DIR}/light_*.onnx"))
HEAVY = {"vgg19", "bvlc_alexnet", "zfnet512"}  # 60M+ weights: random ones would take long, so unperturbed only


def _load(name: str) -> onnx.ModelProto:
    return onnx.load(os.path.join(LIGHT_DIR, f"light_{name}.onnx"))


def _perturbed(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """The model with every ConstantOfShape weight replaced by a Constant of random values near it."""
    rng = np.random.default_rng(seed)
    shapes = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    nodes = []
    for node in model.graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in shapes:
            fill = onnx.numpy_helper.to_array(node.attribute[0].t).reshape(-1)[0]
            value = (fill * rng.uniform(0.5, 1.5, shapes[node.input[0]])).astype(np.float32)
            node = onnx.helper.make_node("Constant", [], list(node.output),
                                         value=onnx.numpy_helper.from_array(value))
        nodes.append(node)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out


def test_every_light_model_is_found():
    assert len(MODELS) == 9, MODELS


def _roundtrip(model: onnx.ModelProto, name: str) -> float:
    """Import, type-check, export; ONNX Runtime on both must agree. Returns the max abs difference."""
    mod, params = from_onnx(model, max_folded_bytes=2**30)  # vgg19's ConstantOfShape weights pass 256 MiB
    main = mod["main"]
    assert params == {}
    assert isinstance(main.checked_type, ir.FuncType)
    (graph_input,) = main.params
    initialized = {t.name for t in model.graph.initializer}
    assert [graph_input.name_hint] == [v.name for v in model.graph.input if v.name not in initialized]
    exported = to_onnx(mod, params)
    data = np.random.default_rng(0).standard_normal(graph_input.checked_type.concrete_shape).astype(np.float32)
    expected = run_ort(model, {graph_input.name_hint: data})
    actual = run_ort(exported, {graph_input.name_hint: data})
    diff = assert_outputs_close(expected, actual)
    print(f"{name}: max abs diff {diff:.3g} (output range {expected[0].min():.4g}..{expected[0].max():.4g})")
    return diff


@pytest.mark.parametrize("name", MODELS)
def test_light_model_roundtrip(name, record_property):
    record_property("max_abs_diff", _roundtrip(_load(name), name))


@pytest.mark.parametrize("name", [m for m in MODELS if m not in HEAVY])
def test_light_model_with_random_weights_roundtrip(name, record_property):
    model = _perturbed(_load(name))
    record_property("max_abs_diff", _roundtrip(model, f"{name} (random weights)"))
    data_name = to_onnx(from_onnx(model)[0]).graph.input[0].name
    probabilities = run_ort(model, {data_name: np.ones((1, 3, 224, 224), np.float32)})[0]
    assert np.ptp(probabilities) > 1e-6  # the outputs tell classes apart, so the comparison means something


def test_unfrozen_initializers_become_parameters():
    model = _perturbed(_load("squeezenet"))
    mod, params = from_onnx(model, freeze_params=False)
    names = [p.name_hint for p in mod["main"].params]
    weights = {t.name for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT}
    assert names[0] == "data_0" and set(names[1:]) == set(params) == weights
    for p in mod["main"].params[1:]:
        assert p.checked_type == ir.TensorType(params[p.name_hint].shape, "float32")
    data = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    assert_outputs_close(run_ort(model, {"data_0": data}), run_ort(to_onnx(mod, params), {"data_0": data}))
