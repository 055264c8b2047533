"""The `eqsat tune` and `eqsat show` subcommands."""

from __future__ import annotations

import json
import re

import pytest

from eqsat import visualize
from eqsat.cli import main


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
    with pytest.raises(SystemExit):
        main(["tune", "nasrnn", "--small", "--trials", "0"])
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
