"""The real-export benchmark end to end at small sizes: every model, through each of torch's
exporters, exports, imports, optimizes (without the speed check, whose choice depends on the
machine's speed), and runs in ONNX Runtime with the original's outputs.
Skipped without torch (and torchvision / transformers, per model)."""

from __future__ import annotations

import pytest

from benchmarks.bench_exports import measure_export
from benchmarks.torch_models import EXPORTERS, EXPORTS, Unavailable

pytest.importorskip("torch")


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
