"""Whole models through `build` on cpu: every zoo model (small configuration) against the interpreter,
and every ONNX light model of the onnx wheel against ONNX Runtime running the original file.

Agreement is measured as the largest absolute difference over the largest reference magnitude and
must stay within 1e-4 (float32).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import ir
from strategies import build, evaluate

from .model_inputs import random_inputs, relative_error

TOLERANCE = 1e-4


def zoo_models() -> list[str]:
    if importlib.util.find_spec("ir.models") is None:
        return []
    return ir.models.list_models()


@pytest.mark.parametrize("name", zoo_models())
def test_zoo_model_builds_and_matches_the_interpreter(name):
    mod, params = ir.models.get(name, small=True)
    inputs = random_inputs(mod["main"], set(params))
    out = build(mod, "cpu", params).run(inputs)
    error = relative_error(out, evaluate(mod, inputs, params))
    assert error <= TOLERANCE, f"{name}: relative error {error:.2e}"


def light_models() -> list[Path]:
    spec = importlib.util.find_spec("onnx")
    if spec is None or importlib.util.find_spec("onnxruntime") is None:
        return []
    folder = Path(spec.origin).parent / "backend" / "test" / "data" / "light"
    return sorted(folder.glob("*.onnx"))


@pytest.mark.parametrize("path", light_models(), ids=lambda p: p.stem)
def test_onnx_light_model_matches_onnx_runtime(path):
    from ir import frontend
    import onnxruntime as ort

    mod, params = frontend.from_onnx(str(path), max_folded_bytes=2**30)  # vgg19 folds 411 MB weights
    exe = build(mod, "cpu", params)
    inputs = random_inputs(exe.func, set())
    out = exe.run(inputs)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ref = tuple(session.run(None, inputs))
    error = relative_error(out if isinstance(out, tuple) else (out,), ref)
    assert error <= TOLERANCE, f"{path.stem}: relative error {error:.2e}"
