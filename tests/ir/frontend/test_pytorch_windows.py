"""PyTorch-exported convolution and pooling models from onnx's backend test data (1-D, 2-D, 3-D, grouped,
dilated, strided, transposed), imported and run on the executor against their recorded outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import strategies
from ir.frontend import from_onnx

_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
MODELS = sorted(d for d in (_DATA / "pytorch-converted").glob("test_*") if "Conv" in d.name or "Pool" in d.name)
MODELS += [_DATA / "pytorch-operator" / f"test_operator_{name}" for name in ("conv", "convtranspose", "maxpool")]


def _tensors(folder: Path, kind: str) -> list[np.ndarray]:
    return [numpy_helper.to_array(onnx.load_tensor(str(f))) for f in sorted(folder.glob(f"{kind}_*.pb"))]


@pytest.mark.parametrize("folder", MODELS, ids=lambda d: d.name)
def test_pytorch_model(folder):
    model = onnx.load(str(folder / "model.onnx"))
    data = folder / "test_data_set_0"
    weights = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in weights]
    mod, params = from_onnx(model)
    out = strategies.build(mod, "cpu", params).run(**dict(zip(names, _tensors(data, "input"))))
    for actual, expected in zip(out if isinstance(out, tuple) else (out,), _tensors(data, "output")):
        assert actual.shape == expected.shape
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(expected).max()))


def test_the_models_are_found():
    assert len(MODELS) > 40 and all((d / "model.onnx").exists() for d in MODELS)
