"""Helpers shared by the frontend tests: run models in ONNX Runtime, make inputs, compare outputs."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import onnx
import onnxruntime as ort

import ir
from ir.types import TensorType


def run_ort(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Every output of `model` on `inputs`, run single-threaded on ONNX Runtime's CPU provider."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, dict(inputs))


def random_value(ty: TensorType, rng: np.random.Generator, kind: str = "normal") -> np.ndarray:
    """A random array of a static tensor type; `kind` is normal, positive, int (small, non-zero),
    index (in -3..2, valid for any axis longer than 2) or bool."""
    shape = ty.concrete_shape
    if ty.dtype == "bool" or kind == "bool":
        return rng.random(shape) < 0.5
    if kind == "index":
        return rng.integers(-3, 3, shape).astype(ty.dtype)
    if np.issubdtype(np.dtype(ty.dtype), np.integer) or kind == "int":
        values = rng.integers(1, 6, shape) * rng.choice([-1, 1], shape)
        return values.astype(ty.dtype)
    values = rng.standard_normal(shape)
    if kind == "positive":
        values = np.abs(values) + 0.5
    return values.astype(ty.dtype)


def graph_inputs(func: ir.Function, params: Mapping[str, np.ndarray], seed: int = 0) -> dict[str, np.ndarray]:
    """Random values for the parameters of `func` that `params` does not give."""
    rng = np.random.default_rng(seed)
    return {p.name_hint: random_value(p.checked_type, rng) for p in func.params if p.name_hint not in params}


def flat_outputs(value) -> list[np.ndarray]:
    """An interpreter result as the flat list of arrays an exported model returns."""
    if isinstance(value, tuple):
        return [a for v in value for a in flat_outputs(v)]
    return [np.asarray(value)]


def max_scaled_diff(expected: Sequence[np.ndarray], actual: Sequence[np.ndarray]) -> tuple[float, float]:
    """(max abs difference, largest |expected| value or 1), over all outputs; asserts matching shapes."""
    assert len(expected) == len(actual)
    diff, scale = 0.0, 1.0
    for e, a in zip(expected, actual):
        e, a = np.asarray(e), np.asarray(a)
        assert e.shape == a.shape and e.dtype == a.dtype, (e.shape, e.dtype, a.shape, a.dtype)
        if e.size:
            diff = max(diff, float(np.max(np.abs(e.astype("float64") - a.astype("float64")))))
            scale = max(scale, float(np.max(np.abs(e))))
    return diff, scale


def assert_outputs_close(expected: Sequence[np.ndarray], actual: Sequence[np.ndarray], rel: float = 1e-4) -> float:
    """Assert max |expected - actual| <= rel * output scale; returns the max abs difference."""
    diff, scale = max_scaled_diff(expected, actual)
    assert diff <= rel * scale, f"max abs diff {diff:.3g} exceeds {rel:g} x output scale {scale:.3g}"
    return diff
