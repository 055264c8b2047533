"""The BERT-in-ONNX-Runtime benchmark: ratio rows per run and the per-op-type profile section."""

from __future__ import annotations

import json

import pytest

from benchmarks import bench_bert_ort, report

pytest.importorskip("onnxruntime")


def test_benchmark_writes_ratios_per_run_and_the_profile(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    bench_bert_ort.main(["--small", "--runs", "2", "--repeat", "1", "--seconds", "0", "--profile-runs", "2"])
    data = json.loads((tmp_path / "bert_ort_small.json").read_text())
    assert [(row["model"], row["run"]) for row in data["rows"]] == [("bert", 1), ("bert", 2)]
    assert all(row["ours_on"] > 0 and row["max_rel_error"] < 1e-4 for row in data["rows"])
    profile = {row["op_type"]: row for row in data["sections"]["BERT-base: kernel time per op type"]}
    assert profile["Gemm"]["original_calls"] > 0 and profile["Attention"]["original_calls"] == 0
    assert profile["Attention"]["ours_calls"] > 0


def test_unknown_models_are_refused():
    with pytest.raises(SystemExit):
        bench_bert_ort.main(["--models", "nosuchmodel"])
