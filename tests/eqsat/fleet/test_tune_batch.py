"""`eqsat batch --tune`: each distinct workload of many models measured once into one database; a killed
worker loses no record; `eqsat tune --db` skips what the database holds."""

from __future__ import annotations

import threading

import onnx

import ir
from eqsat.cli import main
from eqsat.fleet import ProcessPool, TuneOptions, tune_batch
from strategies.ort_timing import default_threads
from strategies.tuning import program_workloads
from strategies.tuning_db import TuningDatabase, this_device

from .conftest import blocking_model, onnx_bytes, wait_for

CPU = TuneOptions(target="cpu", trials=1, repeat=1)


def _workloads(*names: str) -> list[set[str]]:
    """Each zoo model's static workloads (a name ending in .onnx: the model as ONNX, imported back)."""
    found = []
    for name in names:
        if name.endswith(".onnx"):
            mod, params = ir.frontend.from_onnx(onnx.load_from_string(onnx_bytes(name.removesuffix(".onnx"))))
        else:
            mod, params = ir.models.get(name, small=True)
        found.append({w.key for w in program_workloads(mod, params) if w.static})
    return found


def _rows(path) -> list[tuple]:
    with TuningDatabase(path) as db:
        return db._db.execute("SELECT id, workload, implementation, config, record FROM records ORDER BY id").fetchall()


def test_each_distinct_workload_is_measured_once(engine, tmp_path):
    resnet, resnext = _workloads("resnet50", "resnext50")
    summary = tune_batch(["resnet50", "resnext50"], tmp_path / "t.db", options=CPU, small=True, engine=engine())
    assert (summary.total, summary.unique) == (len(resnet) + len(resnext), len(resnet | resnext))
    assert summary.dedupe_ratio > 1 and summary.measured == summary.unique and not summary.lost
    rows = _rows(tmp_path / "t.db")
    assert {r[1] for r in rows} == resnet | resnext
    assert len(rows) == len({r[1:4] for r in rows}), "a record was stored twice"
    again = tune_batch(["resnext50", "resnet50"], tmp_path / "t.db", options=CPU, small=True, engine=ProcessPool(1))
    assert (again.measured, again.in_database, again.records) == (0, again.unique, 0)
    assert _rows(tmp_path / "t.db") == rows
    assert "dedupe ratio" in summary.summary()


def test_a_killed_worker_loses_no_tuning_record(engine, tmp_path):
    db = tmp_path / "t.db"
    resnet, mobilenet = _workloads("resnet50", "mobilenet_v2.onnx")
    done: dict[str, object] = {}
    with blocking_model(tmp_path / "late.onnx", onnx_bytes("mobilenet_v2")) as kill:
        run = threading.Thread(target=lambda: done.update(summary=tune_batch(
            ["resnet50", str(tmp_path / "late.onnx")], db, options=CPU, small=True, engine=engine())))
        run.start()
        wait_for(lambda: db.exists() and {r[1] for r in _rows(db)} == resnet, "resnet50's records")
        finished = _rows(db)
        kill()
    run.join()
    summary = done["summary"]
    assert [r["status"] for r in summary.rows] == ["ok", "ok"] and not summary.lost
    rows = _rows(db)
    assert rows[:len(finished)] == finished, "a finished record changed"
    assert {r[1] for r in rows} == resnet | mobilenet
    assert len(rows) == len({r[1:4] for r in rows})


def test_a_model_that_does_not_import_is_a_failed_row(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"junk")
    summary = tune_batch([str(bad), "squeezenet"], tmp_path / "t.db", options=CPU, small=True, engine=ProcessPool(2))
    assert [r["status"] for r in summary.rows] == ["failed", "ok"] and "could not be parsed" in summary.rows[0]["error"]


def test_tune_db_on_the_command_line_skips_measured_workloads(tmp_path, capsys):
    db = str(tmp_path / "t.db")
    args = ["tune", "squeezenet", "--small", "--db", db, "--trials", "1", "--repeat", "1", "--quiet"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    second = capsys.readouterr().out
    (squeezenet,) = _workloads("squeezenet")
    assert f"tuned {len(squeezenet)} workload(s)" in first and "0 measurement(s)" in second
    with TuningDatabase(db) as opened:
        assert opened.measured("cpu", this_device().key, squeezenet) == squeezenet
    assert main(["batch", "squeezenet", "--small", "--tune", "--db", db, "--target", "cpu", "--workers", "1",
                 "--trials", "1", "--repeat", "1", "--threads", str(default_threads())]) == 0
    assert "0 measured now" in capsys.readouterr().out


def test_a_file_that_is_not_a_database_is_one_line_and_exit_2(tmp_path, capsys):
    log = tmp_path / "tuning.jsonl"
    log.write_text("{}\n")
    for args in (["tune", "squeezenet", "--small", "--db", str(log)],
                 ["batch", "squeezenet", "--small", "--db", str(log), "--out", str(tmp_path / "out")],
                 ["batch", "squeezenet", "--small", "--db", str(log), "--tune"]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err == f"eqsat: error: {log} is not a tuning database: file is not a database\n"
