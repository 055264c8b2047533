"""The `eqsat tune` and `eqsat show` subcommands."""

from __future__ import annotations

import json
import re

import numpy as np
import onnx
import pytest

from eqsat import visualize
from eqsat.cli import main
from tests.ir.frontend.ort_helpers import run_ort


def test_tune_appends_records_and_prints_one_choice_per_workload(tmp_path, capsys):
    log = tmp_path / "tuning.jsonl"
    assert main(["tune", "nasrnn", "--small", "--log", str(log), "--trials", "2", "--repeat", "1", "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records and {r["target"] for r in records} == {"cpu"}
    per_workload: dict[str, int] = {}
    for r in records:
        per_workload[r["workload"]] = per_workload.get(r["workload"], 0) + 1
    assert max(per_workload.values()) <= 2
    head, *choices = out
    assert head.startswith(f"tuned {len(per_workload)} workload(s) on cpu: {len(records)} measurement(s)")
    assert len(choices) == len(per_workload)
    assert all(line.startswith("cpu: ") and " -> " in line and "tuned: " in line for line in choices)


def test_tune_optimized_measures_the_fused_calls_the_extracted_program_uses(tmp_path, capsys):
    log = tmp_path / "tuning.jsonl"
    assert main(["tune", "vgg19", "--small", "--optimized", "--log", str(log), "--trials", "1", "--repeat", "1",
                 "--iterations", "6", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("stopped: ")
    ops = {json.loads(line)["op"] for line in log.read_text().splitlines()}
    assert "nn.conv2d_bias_act" in ops and "nn.batch_norm" not in ops


def test_tune_rejects_bad_arguments_by_name(capsys):
    assert main(["tune", "nasrnn", "--small", "--trials", "0"]) == 2
    assert "--trials" in capsys.readouterr().err
    assert main(["tune", "nasrnn", "--small", "--target", "no-such-target", "--quiet"]) == 2
    assert "no-such-target" in capsys.readouterr().err


def test_show_describes_the_eclass_and_writes_a_bounded_dot_file(tmp_path, capsys):
    dot = tmp_path / "view.dot"
    assert main(["show", "resnet50", "--small", "--op", "nn.conv2d_bias_act", "--max-nodes", "12",
                 "--dot", str(dot), "--quiet"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("e-class "))
    assert "in the extracted program" in header and "not in" not in header
    assert re.search(r"^\* n\d+  nn\.conv2d_bias_act\(", out, flags=re.MULTILINE)
    text = dot.read_text()
    assert text.startswith('digraph "resnet50 e-class ')
    assert 0 < len(re.findall(r"^\s+n\d+ \[label=", text, flags=re.MULTILINE)) <= 12


@pytest.mark.parametrize("where, named", [(["--eclass", "123456"], "e-class 123456"),
                                          (["--op", "nn.no_such_op"], "nn.no_such_op")])
def test_show_names_what_it_cannot_find(capsys, where, named):
    assert main(["show", "nasrnn", "--small", "--quiet", *where]) == 2
    assert named in capsys.readouterr().err


def test_show_render_needs_the_dot_program(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(visualize.shutil, "which", lambda name: None)
    assert main(["show", "nasrnn", "--small", "--quiet", "--render", str(tmp_path / "v.svg")]) == 2
    assert "dot" in capsys.readouterr().err


def optimize_json(tmp_path, name: str, *extra: str) -> dict:
    report = tmp_path / f"{name}.json"
    assert main(["optimize", "vgg19", "--small", "--iterations", "4", "--quiet", "--json", str(report), *extra]) == 0
    return json.loads(report.read_text())


def test_optimize_log_explain_and_verify_flags(tmp_path, capsys):
    log = tmp_path / "tuning.jsonl"
    assert main(["tune", "vgg19", "--small", "--log", str(log), "--trials", "1", "--repeat", "1", "--quiet"]) == 0
    estimated = optimize_json(tmp_path, "estimated", "--no-verify")
    capsys.readouterr()
    tuned = optimize_json(tmp_path, "tuned", "--log", str(log), "--explain", "--verify", "2")
    out = capsys.readouterr().out
    assert tuned["target"] == estimated["target"] == "cpu"  # the target's name, not "CostModel"
    assert tuned["cost_before"] != estimated["cost_before"]  # measured latencies replace the estimates
    assert "cost on cpu with greedy" in out and "verified on 2 input sets (normal, edge)" in out
    # the explanation follows the summary, then the provenance; which fused forms win depends on the
    # measured latencies
    explanation, provenance = out.split("verified on 2")[1].split("\nprovenance: ")
    explanation = explanation.splitlines()[1:]
    assert re.match(r"\d+ of \d+ node\(s\) from the input", provenance)
    assert explanation == ["no rule-made node was extracted"] or (explanation and all(
        re.match(r"[\w-]+: \d+ x [\w.]+, \S+ -> \S+ µs \[", line) for line in explanation))
    assert main(["optimize", "vgg19", "--small", "--quiet", "--no-verify"]) == 0
    out = capsys.readouterr().out
    assert "not verified (verify=False)" in out and "nn.conv2d_bias_act" not in out.split("not verified")[1]


def test_optimize_rejects_bad_verify_and_missing_log(tmp_path, capsys):
    assert main(["optimize", "nasrnn", "--small", "--verify", "0"]) == 2
    assert "--verify" in capsys.readouterr().err
    assert main(["optimize", "nasrnn", "--small", "--verify", "2", "--no-verify"]) == 2
    assert "not allowed with" in capsys.readouterr().err
    missing = tmp_path / "missing.jsonl"
    assert main(["optimize", "nasrnn", "--small", "--quiet", "--log", str(missing)]) == 2
    assert "missing.jsonl" in capsys.readouterr().err


def test_optimize_writes_contrib_onnx_that_runs_like_the_standard_export(tmp_path, capsys):
    paths = {flag: tmp_path / f"{flag or 'standard'}.onnx" for flag in ("", "--onnx-contrib")}
    for flag, path in paths.items():
        args = ["optimize", "vgg19", "--small", "--iterations", "4", "--quiet", "--no-verify", "--onnx", str(path)]
        assert main(args + ([flag] if flag else [])) == 0
    standard, contrib = (onnx.load(str(p)) for p in paths.values())
    fused = {n.op_type for n in contrib.graph.node if n.domain == "com.microsoft"}
    assert fused == {"FusedConv", "FusedGemm"} and not any(n.domain for n in standard.graph.node)
    assert len(contrib.graph.node) < len(standard.graph.node)
    graph_input = standard.graph.input[0]
    shape = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
    feed = {graph_input.name: np.random.default_rng(0).standard_normal(shape).astype("float32")}
    (expected,), (actual,) = run_ort(standard, feed), run_ort(contrib, feed)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4 * float(np.abs(expected).max()))


