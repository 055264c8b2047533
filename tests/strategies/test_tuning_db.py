"""The tuning database: records keyed by device, claims, import/export, bad rows, concurrent tuners."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys

import pytest

import ir
from strategies.records import TuningRecord, append_records, read_log
from strategies.tuning import program_workloads, tune
from strategies.tuning_db import Device, TuningDatabase, TuningDatabaseError, is_database, this_device


def _record(workload: str = "w1", implementation: str = "impl", device: str = "dev-a", **config) -> TuningRecord:
    return TuningRecord("cpu", workload, "nn.dense", implementation, dict(config), (3.0, 1.0, 2.0), device=device)


def test_device_key_names_cpu_vector_onnxruntime_and_threads():
    device = this_device(threads=2)
    assert device.threads == 2 and device.cpu and device.vector
    assert device.key == f"{device.cpu} | {device.vector} | onnxruntime {device.onnxruntime} | 2 thread(s)"
    assert Device("X", "avx2", "1.0", 1).key != Device("X", "avx512f", "1.0", 1).key


def test_records_are_kept_once_per_device(tmp_path):
    with TuningDatabase(tmp_path / "t.db") as db:
        assert db.add([_record(), _record(), _record(block=4)]) == 2
        assert db.add([_record()]) == 0
        assert db.add([_record(device="dev-b")]) == 1
        assert len(db.read().records) == 3
        assert [r.config for r in db.read("cpu", "dev-a").records] == [{}, {"block": 4}]
        assert db.measured("cpu", "dev-b", ["w1", "w2"]) == {"w1"}
        assert db.history("cpu", "dev-a").records[0].device == "dev-a"
    assert is_database(tmp_path / "t.db")


def test_a_record_without_device_is_refused(tmp_path):
    with TuningDatabase(tmp_path / "t.db") as db, pytest.raises(ValueError, match="names no device"):
        db.add([_record(device="")])


def test_claims_skip_measured_and_wait_for_live_owners(tmp_path):
    with TuningDatabase(tmp_path / "t.db") as db:
        db.add([_record("w1")])
        first = db.claim("cpu", "dev-a", ["w1", "w2", "w3"], "run-1")
        assert (first.mine, first.elsewhere, first.measured) == (("w2", "w3"), (), ("w1",))
        second = db.claim("cpu", "dev-a", ["w2", "w4"], "run-2")
        assert (second.mine, second.elsewhere) == (("w4",), ("w2",))
        assert db.claim("cpu", "dev-a", ["w2"], "run-1").mine == ("w2",)  # a retried task takes over its claim
        db.add([_record("w2")], owner="run-1")
        assert db.claim("cpu", "dev-a", ["w2"], "run-2").measured == ("w2",)
        db.release("run-1")
        assert db.claim("cpu", "dev-a", ["w3"], "run-2").mine == ("w3",)


def test_a_claim_of_a_dead_process_is_free(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with TuningDatabase(tmp_path / "t.db") as db:
        db.claim("cpu", "dev-a", ["w1"], "run-1")
        db._db.execute("UPDATE claims SET pid = ?", (int(dead.stdout),))
        assert db.claim("cpu", "dev-a", ["w1"], "run-2").mine == ("w1",)


def test_import_and_export_round_trip_through_json_lines(tmp_path):
    log = tmp_path / "in.jsonl"
    append_records(log, [_record("w1", device=""), _record("w2", device="dev-b")])
    with log.open("a") as f:
        f.write("not json\n")
    with TuningDatabase(tmp_path / "t.db") as db:
        added, skipped = db.import_log(log, device="dev-a")
        assert added == 2 and [s.where for s in skipped] == [f"{log}:3"]
        assert db.import_log(log, device="dev-a")[0] == 0
        assert db.export_log(tmp_path / "out.jsonl") == 2
    back = read_log(tmp_path / "out.jsonl")
    assert [(r.workload, r.device) for r in back.records] == [("w1", "dev-a"), ("w2", "dev-b")]
    assert not back.skipped
    assert json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])["device"] == "dev-a"


def test_a_corrupt_row_is_skipped_with_file_and_row(tmp_path, caplog):
    path = tmp_path / "t.db"
    with TuningDatabase(path) as db:
        db.add([_record("w1"), _record("w2")])
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE records SET record = '{\"version\": 1, \"costs_us\": [-1]' WHERE workload = 'w1'")
    with TuningDatabase(path) as db:
        read = db.read()
    assert [r.workload for r in read.records] == ["w2"]
    assert [s.where for s in read.skipped] == [f"{path}:1"] and "invalid JSON" in read.skipped[0].reason
    with TuningDatabase(path) as db:
        assert [r.workload for r in db.history("cpu", "dev-a").records] == ["w2"]
    assert f"{path}:1: tuning record skipped (invalid JSON" in caplog.text


def test_a_file_that_is_not_a_database_is_one_clear_error(tmp_path):
    bad = tmp_path / "log.db"
    bad.write_text('{"not": "sqlite"}\n')
    with pytest.raises(TuningDatabaseError, match="log.db is not a tuning database"):
        TuningDatabase(bad)
    with pytest.raises(TuningDatabaseError, match="is a directory"):
        TuningDatabase(tmp_path)
    assert not is_database(bad)


def test_tune_into_a_database_measures_each_workload_once(tmp_path):
    mod, params = ir.models.get("squeezenet", small=True)
    with TuningDatabase(tmp_path / "t.db") as db:
        first = tune(mod, "cpu", log=db, trials=1, repeat=1, params=params)
        assert first and all(r.device == this_device().key for r in first)
        assert tune(mod, "cpu", log=db, trials=1, repeat=1, params=params) == []
        assert db.measured("cpu", this_device().key, [w.key for w in program_workloads(mod, params)]) == \
            {r.workload for r in first}
        assert not db._db.execute("SELECT * FROM claims").fetchall()


def test_concurrent_eqsat_tune_runs_lose_nothing_and_measure_nothing_twice(tmp_path):
    path = str(tmp_path / "t.db")
    models = ["resnet50", "resnext50", "resnet50"]
    runs = [subprocess.Popen([sys.executable, "-m", "eqsat.cli", "tune", name, "--small", "--db", path, "--trials", "2",
                              "--repeat", "1", "--quiet"], stdout=subprocess.PIPE, text=True) for name in models]
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], outputs
    measured = sum(int(re.search(r"(\d+) measurement\(s\)", out).group(1)) for out in outputs)
    wanted = set()
    for name in set(models):
        mod, params = ir.models.get(name, small=True)
        wanted |= {w.key for w in program_workloads(mod, params) if w.static}
    with TuningDatabase(path) as db:
        rows = db._db.execute("SELECT workload, implementation, config FROM records").fetchall()
        read = db.read()
    assert len(rows) == len(set(rows)) == measured, "a record was stored twice, or measured and thrown away"
    assert {r.workload for r in read.records} == wanted, "a workload was lost"
    assert not read.skipped
