"""The spelling benchmark: ratio timing, the fused verdicts, and its report on a few small families."""

from __future__ import annotations

import json

import pytest

from benchmarks import bench_spellings, report
from benchmarks.spellings import FAMILIES


def test_ratio_medians_take_turns_and_divide_per_round():
    order = []
    runs = {"base": lambda: order.append("base"), "other": lambda: order.append("other")}
    seconds, ratios = bench_spellings.ratio_medians(runs, "base", repeat=3, min_seconds=0)
    assert order == ["base", "other"] * 4  # a warm-up each, then strictly alternating
    assert seconds >= 0 and set(ratios) == {"other"} and ratios["other"] > 0


def test_reaches_fused_needs_the_canonical_histogram_and_the_fused_op():
    family = FAMILIES["relu6"]
    assert bench_spellings.reaches_fused(family, {"clip": 1}, {"clip": 1})
    assert not bench_spellings.reaches_fused(family, {"minimum": 1, "maximum": 1}, {"clip": 1})
    assert not bench_spellings.reaches_fused(family, {"maximum": 1}, {"maximum": 1})
    conv = FAMILIES["conv_bn_relu"]  # either layout of the fused convolution will do
    blocked = {"nn.contrib_conv2d_NCHWc_bias_act": 1}
    assert bench_spellings.reaches_fused(conv, blocked, blocked)


def test_benchmark_writes_a_row_per_spelling(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    families = ("relu6", "linear")
    bench_spellings.main(["--small", "--repeat", "1", "--seconds", "0", "--families", ",".join(families)])
    rows = json.loads((tmp_path / "spellings_small.json").read_text())["rows"]
    expected = [(f, s) for f in families for s in ("canonical", *FAMILIES[f].spellings)]
    assert [(r["family"], r["spelling"]) for r in rows] == expected
    for row in rows:
        assert set(bench_spellings.COLUMNS) <= set(row)
        assert row["input_on_ms"] > 0 and row["speedup_off"] > 0 and row["speedup_on"] > 0
        assert row["max_rel_error"] < 1e-4
    assert all(r["ours_fused"] and r["ort_fused"] for r in rows if r["spelling"] == "canonical")
    text = (tmp_path / "spellings_small.md").read_text()
    assert "| " + " | ".join(bench_spellings.COLUMNS) + " |" in text and "| relu6 | minmax |" in text


def test_unknown_family_is_refused():
    with pytest.raises(SystemExit):
        bench_spellings.main(["--families", "nonsense"])
