"""The op-strategy benchmark: it takes turns between programs, compares outputs, and writes its report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import bench_strategies, report


def test_alternate_takes_turns_and_reports_medians():
    order = []
    runs = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    medians = bench_strategies.alternate(runs, repeat=3, warmup=1)
    assert order == ["a", "b"] + ["a", "b"] * 3  # warm-up each, then strictly alternating
    assert set(medians) == {"a", "b"} and all(wall >= 0 and cpu >= 0 for wall, cpu in medians.values())


def test_relative_error_is_the_worst_output_over_its_largest_magnitude():
    reference = [np.array([1.0, -4.0]), np.array([10.0])]
    assert bench_strategies.relative_error((np.array([1.0, -3.0]), np.array([10.5])), reference) == 0.25
    assert bench_strategies.relative_error(np.array([1.0, -4.0]), reference[:1]) == 0.0


def test_benchmark_writes_a_row_and_an_op_table_per_model(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")  # the thread count asked for: no re-run in a new process
    bench_strategies.main(["--small", "--repeat", "1", "--trials", "1"])
    written = json.loads((tmp_path / "strategies_small.json").read_text())
    rows = written["rows"]
    assert [r["model"] for r in rows] == [f"{m} (small)" for m in bench_strategies.MODELS]
    for row in rows:
        assert row["ours_ms"] > 0 and row["ort_ms"] > 0 and row["tuned_ms"] > 0 and row["predicted_ms"] > 0
        assert row["max_rel_error"] < 1e-4
        assert row["ours_over_ort"] == pytest.approx(row["ours_ms"] / row["ort_ms"])
        per_op = written["sections"][f"{row['model']}: time per op type"]
        assert sum(r["ms"] for r in per_op) == pytest.approx(row["profile_kernels_ms"])
    text = (tmp_path / "strategies_small.md").read_text()
    assert text.count("time per op type") == len(rows) and "| nn.conv2d |" in text and "| nn.dense |" in text
