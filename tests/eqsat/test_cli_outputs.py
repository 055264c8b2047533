"""The `eqsat` command's files: outputs written whole after a successful run, tuning logs read line by line."""

from __future__ import annotations

import json
import math
import os
import types

import pytest

import ir
from eqsat.atomic import write_files
from eqsat.cli import main
from ir.frontend.errors import FrontendError

RUN = ["optimize", "nasrnn", "--small", "--quiet", "--no-verify", "--iterations", "2"]


def test_json_and_onnx_are_written_when_the_run_succeeds(tmp_path, capsys):
    report, model = tmp_path / "report.json", tmp_path / "model.onnx"
    assert main([*RUN, "--json", str(report), "--onnx", str(model)]) == 0
    assert json.loads(report.read_text())["model"] == "nasrnn"
    assert model.stat().st_size > 0
    assert sorted(os.listdir(tmp_path)) == ["model.onnx", "report.json"]  # no temporary file left


def test_onnx_into_a_missing_directory_writes_no_json(tmp_path, capsys):
    report = tmp_path / "report.json"
    assert main([*RUN, "--json", str(report), "--onnx", str(tmp_path / "missing" / "model.onnx")]) == 2
    err = capsys.readouterr().err
    assert "--onnx" in err and "missing" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("raised, status", [(FrontendError("nn.magic cannot be exported"), 2),
                                            (RuntimeError("exporter bug"), 1)])
def test_a_failing_onnx_export_leaves_the_old_report_untouched(tmp_path, capsys, monkeypatch, raised, status):
    report = tmp_path / "report.json"
    report.write_text("the previous report\n")

    def to_onnx(*args, **kwargs):
        raise raised
    monkeypatch.setattr(ir, "frontend", types.SimpleNamespace(to_onnx=to_onnx))
    assert main([*RUN, "--json", str(report), "--onnx", str(tmp_path / "model.onnx")]) == status
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and str(raised) in err[0]
    assert report.read_text() == "the previous report\n" and os.listdir(tmp_path) == ["report.json"]


def test_write_files_writes_all_or_nothing(tmp_path):
    kept = tmp_path / "kept.txt"
    kept.write_text("old")
    with pytest.raises(FileNotFoundError):
        write_files({kept: b"new", tmp_path / "missing" / "b.txt": b"b"})
    assert kept.read_text() == "old" and os.listdir(tmp_path) == ["kept.txt"]
    write_files({kept: b"new", tmp_path / "b.txt": b"b"})
    assert kept.read_text() == "new" and (tmp_path / "b.txt").read_text() == "b"
    assert sorted(os.listdir(tmp_path)) == ["b.txt", "kept.txt"]


def test_an_interrupted_write_removes_its_temporary_file(tmp_path, monkeypatch):
    def interrupted(fd):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_files({tmp_path / "a.txt": b"a"})
    assert os.listdir(tmp_path) == []


def bad_cost_line(good: str, cost: str) -> bytes:
    data = json.loads(good)
    return json.dumps(data).replace(json.dumps(data["costs_us"]), f"[{cost}]").encode()


@pytest.fixture(scope="module")
def tuned_log(tmp_path_factory) -> list[str]:
    """The lines `eqsat tune` writes for nasrnn (one measurement per workload)."""
    log = tmp_path_factory.mktemp("tuned") / "tuning.jsonl"
    assert main(["tune", "nasrnn", "--small", "--quiet", "--trials", "1", "--repeat", "1", "--log", str(log)]) == 0
    return log.read_text().splitlines()


def cost_before(tmp_path, capsys, *extra: str) -> float:
    report = tmp_path / "report.json"
    assert main([*RUN, "--json", str(report), *extra]) == 0
    return json.loads(report.read_text())["cost_before"]


def test_optimize_uses_the_good_lines_of_a_messy_log_and_names_the_bad_ones(tmp_path, capsys, tuned_log):
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join(tuned_log) + "\n")
    bad = [bad_cost_line(tuned_log[0], "1e400"), b"[" * 50_000 + b"]" * 50_000,
           tuned_log[0].encode().replace(b'"cpu"', b'"cp\xffu"'), bad_cost_line(tuned_log[0], "NaN"),
           bad_cost_line(tuned_log[0], "-3.5")]
    messy = tmp_path / "messy.jsonl"
    messy.write_bytes(b"\n".join([*bad, *(line.encode() for line in tuned_log)]) + b"\n")

    estimated = cost_before(tmp_path, capsys)
    tuned = cost_before(tmp_path, capsys, "--log", str(clean))
    assert capsys.readouterr().err == ""
    assert cost_before(tmp_path, capsys, "--log", str(messy)) == tuned != estimated
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert err.startswith(f"eqsat: warning: 5 bad line(s) of tuning log {messy} skipped: ")
    for line, why in [(1, "number 1e400 is out of range"), (2, "JSON nested too deeply"), (3, "invalid UTF-8")]:
        assert f"{messy}:{line}: {why}" in err
    assert err.rstrip().endswith("; and 2 more")
    assert math.isfinite(tuned)


def test_a_log_with_no_usable_line_is_an_error(tmp_path, capsys):
    log = tmp_path / "model.onnx.jsonl"
    log.write_bytes(b"\x08\x07\x12\x04\xff\xfe\n")
    assert main([*RUN, "--log", str(log)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"eqsat: error: {log} has no usable tuning record: {log}:1: invalid UTF-8")
    assert len(err.splitlines()) == 1


def test_tune_does_not_append_to_a_file_that_is_not_a_tuning_log(tmp_path, capsys):
    log = tmp_path / "notes.txt"
    log.write_text("my notes\n")
    assert main(["tune", "nasrnn", "--small", "--quiet", "--log", str(log)]) == 2
    assert "no usable tuning record" in capsys.readouterr().err
    assert log.read_text() == "my notes\n"
