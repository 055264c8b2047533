"""The `eqsat` command's failures: options checked up front, one line on stderr, exit 2 / 1 / 130."""

from __future__ import annotations

import argparse
import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import set_external_data

from eqsat import cli
from eqsat.cli import build_parser, main
from eqsat.errors import EqsatError, VerificationError
from ir.errors import TypeInferenceError


def failed(capsys, argv: list[str], status: int) -> str:
    """Run the command, check its status and that stderr is one line without a traceback; that line."""
    assert main(argv) == status
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test (past main's handlers) if the command starts loading a model."""
    def load(*args, **kwargs):
        pytest.fail("the command started work before rejecting its options")
    monkeypatch.setattr(cli, "_load", load)


SMALL = ["nasrnn", "--small", "--quiet"]


@pytest.mark.parametrize("argv, named", [
    (["optimize", *SMALL, "--iterations", "0"], "--iterations"),
    (["optimize", *SMALL, "--iterations", "-1"], "--iterations"),
    (["optimize", *SMALL, "--iterations", "2.5"], "--iterations"),
    (["optimize", *SMALL, "--nodes", "0"], "--nodes"),
    (["optimize", *SMALL, "--seconds", "nan"], "--seconds"),
    (["optimize", *SMALL, "--seconds", "0"], "--seconds"),
    (["optimize", *SMALL, "--seconds", "inf"], "--seconds"),
    (["optimize", *SMALL, "--seconds", "-2"], "--seconds"),
    (["optimize", *SMALL, "--seconds", "soon"], "--seconds"),
    (["optimize", *SMALL, "--ilp-seconds", "-1"], "--ilp-seconds"),
    (["optimize", *SMALL, "--target", "bogus"], "bogus"),
    (["optimize", *SMALL, "--extractor", "bogus"], "--extractor"),
    (["optimize", *SMALL, "--rules", "fusion+bogus"], "bogus"),
    (["optimize", *SMALL, "--verify", "-1"], "--verify"),
    (["optimize", *SMALL, "--log", "no/such/tuning.jsonl"], "no/such/tuning.jsonl"),
    (["optimize", *SMALL, "--json", "no/such/dir/report.json"], "no/such/dir"),
    (["optimize", *SMALL, "--onnx", "."], "is a directory"),
    (["compare", *SMALL, "--targets", "cpu,bogus"], "bogus"),
    (["compare", *SMALL, "--extractors", "greedy,bogus"], "bogus"),
    (["tune", *SMALL, "--repeat", "0"], "--repeat"),
    (["tune", *SMALL, "--target", "ops"], "--target"),
    (["tune", *SMALL, "--log", "no/such/dir/tuning.jsonl"], "no/such/dir"),
    (["show", *SMALL, "--eclass", "-1"], "--eclass"),
    (["show", *SMALL, "--dot", "no/such/dir/view.dot"], "no/such/dir"),
    (["optimize", "no-such-model", "--quiet"], "unknown model 'no-such-model'"),
    (["optimize", "missing/model.onnx", "--quiet"], "no such file 'missing/model.onnx'"),
])
def test_bad_options_are_rejected_before_any_work(capsys, no_work, argv, named):
    line = failed(capsys, argv, 2)
    assert line.startswith(f"eqsat {argv[0]}: error: ") and named in line


def valid_onnx(directory, location: str | None = None) -> str:
    """A one-MatMul ONNX model in `directory`; with `location`, its weight is external data there."""
    weight = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    if location is not None:
        set_external_data(weight, location=location)
        weight.ClearField("raw_data")
        weight.data_location = TensorProto.EXTERNAL
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [weight])
    path = directory / "model.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())
    return str(path)


def test_an_onnx_file_runs(tmp_path, capsys):
    assert main(["optimize", valid_onnx(tmp_path), "--quiet", "--no-verify"]) == 0
    assert capsys.readouterr().out.startswith("stopped: ")


def test_a_malformed_onnx_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "random.onnx"
    path.write_bytes(np.random.default_rng(0).bytes(300))
    assert "random.onnx" in failed(capsys, ["optimize", str(path), "--quiet"], 2)


@pytest.mark.parametrize("location", ["missing.bin", "../outside.bin"])
def test_onnx_external_data_missing_or_outside_its_folder_is_one_line(tmp_path, capsys, location):
    (tmp_path / "outside.bin").write_bytes(np.ones(16, np.float32).tobytes())
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    path = valid_onnx(model_dir, location)
    assert failed(capsys, ["optimize", path, "--quiet"], 2).startswith("eqsat: error: ")


@pytest.mark.parametrize("raised, status, message", [
    (KeyboardInterrupt(), 130, "eqsat: interrupted"),
    (MemoryError(), 1, "eqsat: out of memory; lower --nodes or --iterations"),
    (KeyError("oops"), 1, "eqsat: internal error: KeyError: 'oops' (please report this, with the command line)"),
    (VerificationError("the result differs\nrules: fold"), 3, "eqsat: not verified: the result differs rules: fold"),
    (TypeInferenceError("nn.dense: shapes do not fit"), 2, "eqsat: error: nn.dense: shapes do not fit"),
    (PermissionError(13, "Permission denied", "out.json"), 2, "eqsat: error: [Errno 13] Permission denied"),
    (ModuleNotFoundError("No module named 'torch'", name="torch"), 2, "eqsat: error: No module named 'torch'"),
    (ImportError("cannot import name 'x' from 'ir.frontend'"), 1, "eqsat: internal error: ImportError"),
])
def test_what_a_run_raises_becomes_one_line_and_a_status(capsys, monkeypatch, raised, status, message):
    def optimize(*args, **kwargs):
        raise raised
    monkeypatch.setattr(cli, "optimize", optimize)
    assert failed(capsys, ["optimize", *SMALL], status).startswith(message)


def test_a_long_message_is_cut(capsys, monkeypatch):
    def optimize(*args, **kwargs):
        raise EqsatError("x" * 10_000)
    monkeypatch.setattr(cli, "optimize", optimize)
    line = failed(capsys, ["optimize", *SMALL], 2)
    assert len(line) < 2100 and line.endswith("(--debug shows all of it)")


def test_a_closed_stdout_stops_quietly(capsys, monkeypatch):
    def optimize(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")
    monkeypatch.setattr(cli, "optimize", optimize)
    assert main(["optimize", *SMALL]) == 141
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("how", ["flag", "env"])
def test_debug_shows_the_traceback(monkeypatch, how):
    def optimize(*args, **kwargs):
        raise KeyError("oops")
    monkeypatch.setattr(cli, "optimize", optimize)
    if how == "env":
        monkeypatch.setenv("EQSAT_DEBUG", "1")
    with pytest.raises(KeyError, match="oops"):
        main(["optimize", *SMALL, *(["--debug"] if how == "flag" else [])])


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_help_explains_every_option_and_its_default(capsys, name):
    assert main([name, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for action in subcommands()[name]._actions:
        assert action.help and action.help.strip(), action.dest
        for option in action.option_strings:
            assert option in text
        if action.option_strings and action.nargs != 0:
            default = "none" if action.default is None else action.default
            assert "(default: " in action.help or f"(default: {default})" in text, action.dest


def test_interrupt_outside_a_run_leaves_no_output_file(tmp_path, capsys, monkeypatch):
    report = tmp_path / "report.json"

    def optimize(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "optimize", optimize)
    assert failed(capsys, ["optimize", *SMALL, "--json", str(report)], 130) == "eqsat: interrupted"
    assert os.listdir(tmp_path) == []
