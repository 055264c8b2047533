"""The real-export benchmark end to end at small sizes: every model, through each of torch's
exporters, exports, imports, optimizes (without the speed check, whose choice depends on the
machine's speed), and runs in ONNX Runtime with the original's outputs.
Skipped without torch (and torchvision / transformers, per model); exports written to a folder are
read back without it."""

from __future__ import annotations

import importlib.util

import onnx
import pytest
from onnx import helper

from benchmarks.bench_exports import measure_export
from benchmarks.torch_models import EXPORTERS, EXPORTS, Unavailable, export, saved_path


def test_an_export_written_to_a_folder_is_read_back_from_it(tmp_path):
    """`--saved`: the export another environment wrote (torchvision's wheels pin their own torch) is
    read, not made; a model missing there is made (here: refused without torch, or made with it)."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 3, 8, 8])])
    onnx.save(helper.make_model(graph), saved_path(str(tmp_path), "resnet18", False, "dynamo"))
    assert [n.op_type for n in export("resnet18", False, "dynamo", saved=str(tmp_path)).graph.node] == ["Relu"]
    assert saved_path(str(tmp_path), "resnet18", True, "dynamo").endswith("resnet18_dynamo_small.onnx")


needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")


@needs_torch
@pytest.mark.parametrize("exporter", sorted(EXPORTERS))
@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_export_optimizes_and_keeps_the_outputs(name, exporter):
    try:
        row = measure_export(name, small=True, repeat=1, min_seconds=0.0, exporter=exporter, speed=False)
    except Unavailable as err:
        pytest.skip(str(err))
    assert row["max_rel_error"] < 1e-4
    assert row["ours_nodes"] < row["onnx_nodes"]  # something fused
    assert row["ours_off"] > 0 and row["ours_on"] > 0


@needs_torch
def test_ours_for_a_session_with_the_optimizer_off_is_timed_in_one():
    try:
        row = measure_export("distilbert", small=True, repeat=1, min_seconds=0.0, exporter="dynamo", speed=False,
                             off_session=True)
    except Unavailable as err:
        pytest.skip(str(err))
    assert row["ours_for_off"] > 0 and row["for_off_kept_input"] is False
