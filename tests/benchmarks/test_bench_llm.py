"""The LLM fusion benchmark end to end on two fixtures with a few timing rounds: fused ops, errors and
ratios per row; each peer either ran, failed with its error recorded, or is absent (not installed)."""

from __future__ import annotations

import json

import onnx
import pytest

from benchmarks import bench_llm, report

pytest.importorskip("onnxruntime")

FIXTURES = ("llama_torchscript_sdpa", "gpt2_dynamo_eager_cache")


def test_fused_ops_counts_kinds_in_any_domain():
    nodes = [onnx.helper.make_node("RotaryEmbedding", ["x", "p", "c", "s"], ["y"], domain="com.microsoft"),
             onnx.helper.make_node("RMSNormalization", ["y", "w"], ["z"]),
             onnx.helper.make_node("MatMul", ["z", "w"], ["o"])]
    model = onnx.helper.make_model(onnx.helper.make_graph(nodes, "g", [], []))
    ops = bench_llm.fused_ops(model)
    assert ops == {"RotaryEmbedding": 1, "RMSNormalization": 1}
    assert bench_llm.histogram(ops) == "RotaryEmbedding, RMSNormalization" and bench_llm.histogram({}) == "-"


def test_interleaved_reverses_the_order_every_other_round():
    order: list[str] = []
    runs = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    base, ratios = bench_llm.interleaved(runs, "a", repeat=3, min_seconds=0)
    assert order == ["a", "b", "a", "b", "b", "a", "a", "b"]  # warm-ups, then a-b, b-a, a-b
    assert len(base) == 3 and len(ratios["b"]) == 3
    assert bench_llm.spread([1.0, 2.0, 3.0])["median"] == 2.0


def test_benchmark_writes_a_row_per_fixture(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    bench_llm.main(["--fixtures", ",".join(FIXTURES), "--repeat", "2", "--seconds", "0", "--name", "llm_test"])
    data = json.loads((tmp_path / "llm_test.json").read_text())
    rows = data["rows"]
    assert [r["model"] for r in rows] == list(FIXTURES)
    assert "Failures" in data["sections"] and "cpu" in data["meta"]
    for row in rows:
        assert set(bench_llm.COLUMNS) <= set(row)
        assert sum(row["fused"]["ours"].values()) > 0
        assert row["errors"]["ours"] < 1e-4
        assert row["ours_vs_orig"]["median"] > 0 and row["control"]["median"] > 0 and row["rounds"] >= 2
        for peer in bench_llm.PEERS:
            if not bench_llm.available(peer):
                assert row["failures"][peer] == "absent" and row[peer] == "(absent)"
            elif peer in row["errors"]:  # it ran in ONNX Runtime: correct and timed
                assert row["errors"][peer] < 1e-4 and row[f"ours_vs_{peer}"]["median"] > 0
            else:
                assert row["failures"][peer]  # what failed is recorded


def test_a_kernels_gain_is_ours_against_ours_made_without_its_rules(tmp_path, monkeypatch):
    """`--gains`: each kernel's rules left out, that kernel (and only it) is missing from the program,
    which still computes the original's outputs and is timed in the same rounds."""
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    bench_llm.main(["--fixtures", "llama_dynamo_sdpa", "--repeat", "2", "--seconds", "0", "--peers", "",
                    "--gains", "rotary,attention", "--name", "llm_gains"])
    data = json.loads((tmp_path / "llm_gains.json").read_text())
    row, = data["rows"]
    fused = row["fused"]
    assert fused["ours"]["RotaryEmbedding"] == 2 and fused["ours"]["Attention"] == 1
    assert "RotaryEmbedding" not in fused["without_rotary"] and fused["without_rotary"]["Attention"] == 1
    assert "Attention" not in fused["without_attention"] and fused["without_attention"]["RotaryEmbedding"] == 2
    assert row["errors"]["without_rotary"] < 1e-4 and row["errors"]["without_attention"] < 1e-4
    assert row["gain_rotary"]["median"] > 0 and row["gain_attention"]["median"] > 0
    assert "Gain per fused kernel" in data["sections"]
    with pytest.raises(SystemExit):
        bench_llm.main(["--gains", "softmax"])
