"""benchmarks/llm_models.py: its inputs fit every committed fixture, and (with torch and
transformers) it regenerates a fixture byte for byte, so the script and the fixtures stay in step."""

from __future__ import annotations

import json
import os

import onnx
import pytest

from benchmarks.llm_models import FAMILIES, FIXTURE_DIR, export, feed, sizes_to_check

MANIFEST = json.load(open(os.path.join(FIXTURE_DIR, "manifest.json")))


@pytest.mark.parametrize("entry", MANIFEST["fixtures"], ids=lambda e: e["name"])
def test_feeds_name_every_input_with_its_rank(entry):
    proto = onnx.load(os.path.join(FIXTURE_DIR, entry["file"]), load_external_data=False)
    ranks = {i.name: len(i.type.tensor_type.shape.dim) for i in proto.graph.input}
    assert entry["family"] in FAMILIES and ranks.keys() == set(entry["inputs"])
    for sizes in sizes_to_check(entry["cache"]).values():
        inputs = feed(entry["family"], entry["cache"], **sizes)
        assert {k: v.ndim for k, v in inputs.items()} == ranks


def test_regenerates_a_fixture_byte_for_byte():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    entry = next(e for e in MANIFEST["fixtures"] if e["name"] == "llama_torchscript_eager")
    proto = export("llama", "torchscript", "eager", cache=False)
    with open(os.path.join(FIXTURE_DIR, entry["file"]), "rb") as f:
        assert proto.SerializeToString() == f.read()
