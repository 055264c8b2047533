"""The e-graph benchmark: its synthetic programs, one model's rows, one scaling point, its report."""

from __future__ import annotations

import json

import pytest

import eqsat
import ir
from benchmarks import bench_eqsat, report
from benchmarks.synthetic import dl_dag
from ir.visitor import count_nodes


@pytest.mark.parametrize("n_nodes", [1, 50, 400])
def test_dl_dag_has_about_the_requested_size_and_is_deterministic(n_nodes):
    mod = dl_dag(n_nodes, seed=3)
    nodes = count_nodes(mod["main"].body)
    assert n_nodes <= nodes < n_nodes + 9  # the largest block (conv, batch norm, relu) adds 9 nodes
    assert ir.structural_equal(mod, dl_dag(n_nodes, seed=3))
    assert not ir.structural_equal(mod, dl_dag(n_nodes, seed=4)) or n_nodes == 1
    assert mod["main"].checked_type.ret_type.shape == (1, 4, 4, 4)


def test_dl_dag_holds_what_the_default_rules_rewrite():
    ops = {n.op.name for n in ir.post_order(dl_dag(400)["main"]) if isinstance(n, ir.Call)}
    assert {"nn.conv2d", "nn.batch_norm", "nn.bias_add", "nn.relu", "add", "sigmoid", "tanh"} <= ops
    with pytest.raises(ValueError, match="n_nodes"):
        dl_dag(0)


def test_synthetic_point_reports_sizes_times_and_memory():
    row = bench_eqsat.synthetic_point(300, bench_eqsat.SCALING_RULES, eqsat.Limits(iterations=10),
                                      bench_eqsat.EXTRACTOR_NAMES)
    assert row["stop"] == "saturated" and row["enodes"] > row["ir_nodes"] - 5
    assert row["cost_ilp"] <= row["cost_greedy"] + 1e-6 and row["ilp_status"] == "Optimal"
    assert all(row[f"{name}_s"] >= 0 for name in bench_eqsat.EXTRACTOR_NAMES)
    assert row["peak_rss_mb"] >= row["baseline_rss_mb"] > 0


def test_model_rows_compare_extractors_and_measure_both_runtimes():
    rows, latency = bench_eqsat.measure_model("bert", small=True, repeat=1)
    assert [r["target"] for r in rows] == list(bench_eqsat.TARGETS)
    for r in rows:
        assert r["cost_ilp"] <= r["cost_greedy"] + 1e-6 <= r["cost_before"] + 2e-6
        assert r["saturate_greedy_s"] == pytest.approx(r["saturate_s"] + r["greedy_s"])
    cost = {r["target"]: r["cost_greedy"] for r in rows}
    assert cost["ort"] < cost["cpu"]  # the ort target prices SkipLayerNormalization, which bert's blocks fuse to
    assert set(bench_eqsat.LATENCY_COLUMNS) <= set(latency)
    for ratio, ours in (("ort_speedup", "ort_ours_off_ms"), ("ort_contrib_speedup", "ort_ours_contrib_off_ms"),
                        ("ort_target_speedup", "ort_ours_ort_contrib_off_ms")):
        assert latency[ratio] == pytest.approx(latency["ort_input_on_ms"] / latency[ours])
    assert max(latency["max_abs_diff"], latency["max_abs_diff_contrib"], latency["max_abs_diff_ort_target"]) < 1e-3


def test_sections_follow_the_main_table(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    extra = report.Section("Scaling", [{"size": 1000, "peak_rss_mb": 300.5}], ["size", "peak_rss_mb"], "Notes.")
    md = report.write_results("demo", [{"model": "m", "enodes": 3}], ["model", "enodes"], "Intro.", [extra])
    text = md.read_text()
    assert text.index("| m | 3 |") < text.index("## Scaling") < text.index("Notes.") < text.index("| 1000 | 300.5 |")
    data = json.loads((tmp_path / "demo.json").read_text())
    assert data["rows"] == [{"model": "m", "enodes": 3}] and data["sections"]["Scaling"][0]["size"] == 1000
    cpu = data["meta"]
    assert cpu["cpus"] >= 1 and cpu["vector_isa"] and f"Machine: {cpu['cpu']}, {cpu['cpus']} CPUs" in text
