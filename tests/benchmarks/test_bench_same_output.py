"""The same-output benchmark: the command run quiet and loaded, its outputs' digests compared."""

from __future__ import annotations

import onnx
import pytest
from onnx import helper

from benchmarks.bench_same_output import measure
from benchmarks.torch_models import saved_path

pytest.importorskip("onnxruntime")


def test_a_row_counts_the_digests_of_quiet_and_loaded_runs(tmp_path):
    """An export whose program ours leaves as it is: the speed check's closest call, which keeps the
    input, byte for byte, on a quiet and on a loaded machine."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 16, 32, 32])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 16, 32, 32])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              saved_path(str(tmp_path), "resnet18", False, "dynamo"))
    row = measure("resnet18", "dynamo", 1, str(tmp_path))
    assert row["digests"] == 1 and row["same"] and row["kept"] == "input x2"
    assert row["runs"] == "1 quiet + 1 loaded" and len(row["rounds"].split(",")) == 2
