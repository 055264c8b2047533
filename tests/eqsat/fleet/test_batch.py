"""`eqsat batch`: one task per model on a process pool or Ray; results as single runs give, resumable,
failures in their rows, a killed worker's task retried."""

from __future__ import annotations

import threading

import pytest

from eqsat.cli import main
from eqsat.cli_errors import UsageError
from eqsat.fleet import BatchOptions, ProcessPool, batch

from .conftest import blocking_model, onnx_bytes, wait_for

ZOO = ["squeezenet", "mobilenet_v2", "bert", "nasrnn"]
LIMITS = ["--iterations", "3", "--nodes", "4000"]
OPTIONS = BatchOptions(iterations=3, nodes=4000)


@pytest.fixture(scope="module")
def single_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Each zoo model optimized on its own by `eqsat optimize`, as ONNX."""
    out = tmp_path_factory.mktemp("single")
    programs = {}
    for name in ZOO:
        path = out / f"{name}.onnx"
        assert main(["optimize", name, "--small", *LIMITS, "--onnx", str(path), "--quiet"]) == 0
        programs[name] = path.read_bytes()
    return programs


def test_batch_gives_the_programs_single_runs_give(engine, single_runs, tmp_path):
    result = batch(ZOO, str(tmp_path), options=OPTIONS, small=True, engine=engine())
    assert [r["status"] for r in result.rows] == ["ok"] * len(ZOO), result.table()
    assert {name: (tmp_path / f"{name}.onnx").read_bytes() for name in ZOO} == single_runs
    row = result.rows[0]
    assert row["verified"] == "verified" and row["cost_after"] <= row["cost_before"] and row["stop_reason"]
    assert (tmp_path / "batch.json").is_file() and "4 ok, 0 failed" in result.table()


def test_a_rerun_keeps_finished_models_and_redoes_changed_ones(tmp_path):
    first = batch(ZOO[:2], str(tmp_path), options=OPTIONS, small=True, engine=ProcessPool(1))
    written = {name: (tmp_path / f"{name}.onnx").stat().st_mtime_ns for name in ZOO[:2]}
    again = batch(ZOO[:2], str(tmp_path), options=OPTIONS, small=True, engine=ProcessPool(1))
    assert again.skipped == 2 and all(r.get("resumed") for r in again.rows)
    assert {name: (tmp_path / f"{name}.onnx").stat().st_mtime_ns for name in ZOO[:2]} == written
    assert [r["cost_after"] for r in again.rows] == [r["cost_after"] for r in first.rows]
    changed = batch(ZOO[:2], str(tmp_path), options=BatchOptions(iterations=2, nodes=4000), small=True,
                    engine=ProcessPool(1))
    assert changed.skipped == 0


def test_one_bad_model_is_a_failed_row_and_the_others_finish(tmp_path):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"not a model")
    result = batch([str(bad), "squeezenet"], str(tmp_path / "out"), options=OPTIONS, small=True,
                   engine=ProcessPool(2))
    rows = {r["model"]: r for r in result.rows}
    assert rows["broken"]["status"] == "failed" and "could not be parsed" in rows["broken"]["error"]
    assert rows["squeezenet"]["status"] == "ok"
    assert not (tmp_path / "out" / "broken.onnx").exists() and (tmp_path / "out" / "broken.json").is_file()
    again = batch([str(bad), "squeezenet"], str(tmp_path / "out"), options=OPTIONS, small=True, engine=ProcessPool(1))
    assert again.skipped == 1, "a failed model is tried again, a finished one is not"


def test_directories_and_list_files_name_the_models(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "a.onnx").write_bytes(onnx_bytes("squeezenet"))
    (models / "readme.txt").write_text("not a model")
    listing = tmp_path / "list.txt"
    listing.write_text("# the fleet\nbert\nmodels/a.onnx\n")
    result = batch([str(listing)], str(tmp_path / "out"), options=BatchOptions(iterations=2, nodes=4000, target="cpu"),
                   small=True, engine=ProcessPool(2))
    assert [r["model"] for r in result.rows] == ["bert", "a"]
    assert [r["status"] for r in result.rows] == ["ok", "ok"]
    from_dir = batch([str(models)], str(tmp_path / "out"), options=BatchOptions(iterations=2, nodes=4000, target="cpu"),
                     engine=ProcessPool(1))
    assert from_dir.skipped == 1, "the directory's a.onnx is the list's, done already"


@pytest.mark.parametrize("sources, message", [
    (["no/such/dir"], "no such model, file or directory 'no/such/dir'"),
    (["list.txt"], "notes.md (listed in list.txt) is not an .onnx file or a zoo model name"),
    (["empty"], "no model found in empty"),
])
def test_bad_input_is_one_clear_line(tmp_path, monkeypatch, capsys, sources, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.md").write_text("x")
    (tmp_path / "list.txt").write_text("squeezenet\nnotes.md\n")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        batch(sources, "out", engine=ProcessPool(1))
    assert main(["batch", *sources, "--out", "out", "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_the_command_line_runs_a_batch_and_exits_1_when_a_model_failed(tmp_path, capsys):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x00")
    status = main(["batch", "squeezenet", str(bad), "--small", *LIMITS, "--out", str(tmp_path / "out"),
                   "--workers", "2"])
    out, err = capsys.readouterr()
    assert status == 1
    assert "squeezenet" in out and "1 ok, 1 failed" in out
    assert "[2/2]" in err and "broken: failed" in err
    assert main(["batch", "squeezenet", "--out", str(tmp_path / "o"), "--workers", "1", "--address", "ray://x"]) == 2
    assert main(["batch", "squeezenet", "--tune"]) == 2


def test_a_killed_worker_loses_no_finished_result_and_its_task_is_retried(engine, tmp_path):
    out = tmp_path / "out"
    options = BatchOptions(iterations=2, nodes=4000, target="cpu")
    done: dict[str, object] = {}
    with blocking_model(tmp_path / "late.onnx", onnx_bytes("squeezenet")) as kill:
        run = threading.Thread(target=lambda: done.update(result=batch(
            ["squeezenet", "bert", str(tmp_path / "late.onnx")], str(out), options=options, small=True,
            engine=engine())))
        run.start()
        wait_for(lambda: (out / "squeezenet.onnx").exists() and (out / "bert.onnx").exists(), "the other models")
        finished = {name: (out / f"{name}.onnx").stat().st_mtime_ns for name in ("squeezenet", "bert")}
        kill()
    run.join()
    rows = {r["model"]: r for r in done["result"].rows}
    assert [rows[name]["status"] for name in ("squeezenet", "bert", "late")] == ["ok", "ok", "ok"]
    assert {name: (out / f"{name}.onnx").stat().st_mtime_ns for name in ("squeezenet", "bert")} == finished
    assert (out / "late.onnx").is_file()
