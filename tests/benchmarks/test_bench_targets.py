"""The whole-model benchmark: one checked row per zoo model, and bad arguments refused."""

from __future__ import annotations

import json

import pytest

from benchmarks import bench_targets, report


def test_benchmark_writes_a_checked_row_per_model(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    bench_targets.main(["--small", "--repeat", "1", "--seconds", "0", "--models", "squeezenet,bert"])
    rows = json.loads((tmp_path / "targets_small.json").read_text())["rows"]
    assert [r["model"] for r in rows] == ["squeezenet", "bert"]
    for row in rows:
        assert set(bench_targets.COLUMNS) <= set(row)
        assert min(row["ours_off"], row["ours_on"], row["written_on"], row["plain_off"], row["plain_on"],
                   row["original_off"], row["control"]) > 0
        assert row["kept"] == "input" or row["kept"].startswith("ours") and row["speed_check_s"] > 0
        assert row["max_rel_error"] < 1e-4
        assert row["ops_after"] <= row["ops_before"] and row["rules"] != "none"
    assert rows[1]["tensat_gpu"] == "9.2%"
    assert "| squeezenet |" in (tmp_path / "targets_small.md").read_text()


def test_unknown_models_are_refused():
    with pytest.raises(SystemExit):
        bench_targets.main(["--models", "resnet50,bogus"])
