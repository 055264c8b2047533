"""ONNX in, ONNX out: `eqsat optimize IN.onnx OUT.onnx` and `eqsat.optimize_onnx` write ONNX Runtime's program."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat
import ir
from eqsat.cli import main

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    mod, params = ir.models.get("resnet50", small=True)
    path = tmp_path_factory.mktemp("models") / "resnet.onnx"
    onnx.save(ir.frontend.to_onnx(mod, params), str(path))
    return path


def _run(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _feeds(model):
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    return {model.graph.input[0].name: np.random.default_rng(0).standard_normal(shape).astype(np.float32)}


def test_an_onnx_model_written_back_defaults_to_the_ort_target_and_its_kernels(model_path, tmp_path, capsys):
    out = tmp_path / "out.onnx"
    assert main(["optimize", str(model_path), str(out), "--quiet", "--iterations", "6", "--no-speed-check"]) == 0
    assert "onnxruntime (optimizer off)" in capsys.readouterr().out
    original, optimized = onnx.load(str(model_path)), onnx.load(str(out))
    domains = {n.domain for n in optimized.graph.node}
    assert "com.microsoft" in domains or "com.microsoft.nchwc" in domains
    feeds = _feeds(original)
    want, got = _run(original, feeds)[0], _run(optimized, feeds)[0]
    assert np.abs(want - got).max() <= 1e-4 * np.abs(want).max()


def test_standard_onnx_writes_no_contrib_op_and_no_blocked_layout(model_path, tmp_path):
    out = tmp_path / "std.onnx"
    assert main(["optimize", str(model_path), "--onnx", str(out), "--standard-onnx", "--quiet",
                 "--iterations", "6"]) == 0
    model = onnx.load(str(out))
    assert {n.domain for n in model.graph.node} <= {"", "ai.onnx"}
    assert not any(n.op_type == "Transpose" for n in model.graph.node)


@pytest.mark.parametrize("argv, message", [
    (["--onnx-contrib"], "give an output file"),
    (["--standard-onnx"], "give an output file"),
    (["OUT", "--onnx", "OUT2"], "give the output file once"),
    (["OUT", "--standard-onnx", "--onnx-contrib"], "contradict"),
])
def test_export_options_are_checked_before_any_work(model_path, tmp_path, capsys, argv, message):
    argv = [str(tmp_path / a) if a.startswith("OUT") else a for a in argv]
    assert main(["optimize", str(model_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and not list(tmp_path.iterdir())


def test_version(capsys):
    assert main(["--version"]) == 0 and capsys.readouterr().out.strip() == f"eqsat {eqsat.__version__}"


def test_optimize_onnx_is_one_call(model_path):
    model = eqsat.optimize_onnx(str(model_path), limits=eqsat.Limits(iterations=4))
    assert isinstance(model, onnx.ModelProto)
    original = onnx.load(str(model_path))
    feeds = _feeds(original)
    want, got = _run(original, feeds)[0], _run(model, feeds)[0]
    assert np.abs(want - got).max() <= 1e-4 * np.abs(want).max()
