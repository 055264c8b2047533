"""The blocked-layout benchmark: one checked row per program, and the per-layer section."""

from __future__ import annotations

import json

import pytest

from benchmarks import bench_nchwc, report

pytest.importorskip("onnxruntime")


def test_benchmark_writes_checked_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    bench_nchwc.main(["--small", "--rounds", "1", "--runs", "1", "--tune-rounds", "1", "--threads", "1"])
    data = json.loads((tmp_path / "nchwc_small.json").read_text())
    rows = {row["program"]: row for row in data["rows"]}
    assert rows["original, ORT all"]["ratio_vs_original_all"] == 1
    after = rows["after (default+layout), ORT off"]
    assert after["nchwc_convs"] >= 50 and after["median_ms"] > 0
    assert rows["before (default), ORT off"]["nchwc_convs"] == 0
    assert len(data["sections"]["Layers: ONNX Runtime's FusedConv against its NCHWc Conv"]) == 2
