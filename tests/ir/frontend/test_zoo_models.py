"""Every zoo model (small configuration): export, run in ONNX Runtime, compare with the interpreter,
then import the exported model back and check it computes the same."""

from __future__ import annotations

import pytest

from ir.frontend import from_onnx, to_onnx
from tests.ir.frontend.ort_helpers import assert_outputs_close, flat_outputs, graph_inputs, run_ort

from ir import models
from strategies.interpreter import evaluate


@pytest.mark.parametrize("name", models.list_models())
def test_zoo_model_runs_the_same_in_onnx_runtime(name, record_property):
    mod, params = models.get(name, small=True)
    model = to_onnx(mod, params)
    inputs = graph_inputs(mod["main"], params)
    outputs = run_ort(model, inputs)
    diff = assert_outputs_close(flat_outputs(evaluate(mod, inputs, params)), outputs)
    print(f"{name}: max abs diff vs interpreter {diff:.3g}")
    record_property("max_abs_diff", diff)

    again, again_params = from_onnx(model, freeze_params=False)
    assert set(params) <= set(again_params)
    assert [p.name_hint for p in again["main"].params][:len(inputs)] == list(inputs)
    assert_outputs_close(outputs, run_ort(to_onnx(again, again_params), inputs), rel=1e-6)
