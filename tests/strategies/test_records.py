"""Tuning logs: every line is checked on its own, and records are checked when built."""

from __future__ import annotations

import json
import logging
import math
import re

import pytest

from strategies.records import FORMAT_VERSION, TuningHistory, TuningRecord, load_records, read_log


def record(cost: float = 5.0, **fields) -> TuningRecord:
    return TuningRecord(**{"target": "cpu", "workload": "w", "op": "nn.relu", "implementation": "relu.cpu",
                           "config": {}, "costs_us": (cost,), **fields})


def as_dict(cost: object) -> dict:
    data = json.loads(record().to_json())
    data["costs_us"] = [cost]
    return data


#: line contents (bytes) and a word of the reason each is skipped for
BAD_LINES = {
    "utf8": (record().to_json().encode().replace(b'"w"', b'"w\xff"'), "invalid UTF-8 at byte"),
    "json": (b'{"target": "cpu",', "invalid JSON"),
    "nested": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "overflow": (json.dumps(as_dict(1.0)).replace("1.0", "1e400").encode(), "number 1e400 is out of range"),
    "nan": (json.dumps(as_dict(math.nan)).encode(), "NaN is not a number"),
    "infinity": (json.dumps(as_dict(-math.inf)).encode(), "-Infinity is not a number"),
    "big-int": (json.dumps(as_dict(10 ** 400)).encode(), "costs_us[0] must be a finite non-negative number"),
    "negative": (json.dumps(as_dict(-3.0)).encode(), "costs_us[0] must be a finite non-negative number, got -3.0"),
    "string-cost": (json.dumps(as_dict("7")).encode(), "costs_us[0] must be a finite non-negative number, got str"),
    "missing": (b'{"target": "cpu"}', "missing field(s)"),
    "not-object": (b"[1, 2]", "a record must be a JSON object"),
    "version": (json.dumps({**as_dict(1.0), "version": FORMAT_VERSION + 1}).encode(), "format version 2"),
}


def test_a_log_keeps_its_good_lines_and_names_each_bad_one(tmp_path, caplog):
    good = [record(cost=float(i + 1), workload=f"w{i}") for i in range(3)]
    lines = [good[0].to_json().encode()] + [line for line, _ in BAD_LINES.values()] + [b""]
    lines += [good[1].to_json().encode(), b"   ", good[2].to_json().encode()]
    log = tmp_path / "mixed.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")

    found = read_log(log)
    assert [r.workload for r in found.records] == ["w0", "w1", "w2"]
    assert [r.costs_us for r in found.records] == [(1.0,), (2.0,), (3.0,)]
    assert [s.line for s in found.skipped] == list(range(2, 2 + len(BAD_LINES)))
    for skipped, (name, (_, reason)) in zip(found.skipped, BAD_LINES.items()):
        assert reason in skipped.reason, name
        assert skipped.where == f"{log}:{skipped.line}"

    with caplog.at_level(logging.WARNING, logger="strategies"):
        assert load_records(log) == found.records
        history = TuningHistory.load(log)
    assert history.records == found.records
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 * len(BAD_LINES)
    assert all(m.startswith(f"{log}:") and "tuning record skipped (" in m for m in messages)


def test_a_log_with_only_bad_lines_gives_no_records(tmp_path):
    log = tmp_path / "bad.jsonl"
    log.write_bytes(b"\xff\xfe\n{\n")
    found = read_log(log)
    assert found.records == [] and [s.line for s in found.skipped] == [1, 2]


@pytest.mark.parametrize("fields, named", [
    ({"costs_us": (math.nan,)}, "costs_us[0]"),
    ({"costs_us": (1.0, -0.5)}, "costs_us[1]"),
    ({"costs_us": (math.inf,)}, "costs_us[0]"),
    ({"costs_us": (True,)}, "costs_us[0]"),
    ({"costs_us": 3.0}, "costs_us"),
    ({"timestamp": math.nan}, "timestamp"),
    ({"config": []}, "config"),
    ({"target": 1}, "target"),
    ({"error": "0"}, "error"),
])
def test_records_built_in_python_are_checked(fields, named):
    with pytest.raises(ValueError, match=re.escape(f"TuningRecord.{named} must be")):
        TuningRecord(**{"target": "cpu", "workload": "w", "op": "nn.relu", "implementation": "relu.cpu",
                        "config": {}, "costs_us": (1.0,), **fields})


def test_a_record_round_trips_with_costs_as_floats():
    built = record(cost=0, costs_us=[0, 2])
    assert built.costs_us == (0.0, 2.0) and all(type(c) is float for c in built.costs_us)
    assert TuningRecord.from_json(json.loads(built.to_json())) == built
