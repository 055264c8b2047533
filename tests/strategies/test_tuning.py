"""`tune` writes a JSON-lines log; `apply_history_best` makes selection follow it; bad logs never crash."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import ir
from ir import relay
from strategies import (ConfigSpace, OpStrategy, apply_history_best, build, evaluate, load_records,
                        register_strategy, tune)
from strategies.records import FORMAT_VERSION, ErrorCode, TuningRecord, append_records
from strategies.tuning import program_workloads

RNG = np.random.default_rng(5)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def small_resnet():
    """Stem conv, one residual block (conv-bn-relu-conv-bn + skip), global pool, dense."""
    x = relay.var("x", shape=(1, 3, 16, 16))
    params = {}

    def conv_bn(data, name, cin, cout, relu=True):
        params[f"{name}_w"] = rand(cout, cin, 3, 3) * 0.3
        for stat, value in (("g", 1 + 0.1 * rand(cout)), ("b", rand(cout)), ("m", rand(cout)),
                            ("v", 1 + np.abs(rand(cout)))):
            params[f"{name}_{stat}"] = value.astype("float32")
        y = relay.nn.conv2d(data, relay.var(f"{name}_w", shape=(cout, cin, 3, 3)), padding=1)
        y = relay.nn.batch_norm(y, *(relay.var(f"{name}_{s}", shape=(cout,)) for s in "gbmv"))[0]
        return relay.nn.relu(y) if relu else y

    stem = conv_bn(x, "stem", 3, 8)
    body = conv_bn(conv_bn(stem, "a", 8, 8), "b", 8, 8, relu=False)
    y = relay.nn.relu(relay.add(body, stem))
    y = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(y))
    params["fc_w"] = rand(10, 8)
    out = relay.nn.dense(y, relay.var("fc_w", shape=(10, 8)))
    return ir.IRModule.from_expr(out), params


def conv_choices(exe):
    return {s.workload.key: s.implementation.name for s in exe.selections if s.workload.op == "nn.conv2d"}


def test_tune_writes_one_json_record_per_measurement(tmp_path):
    mod, params = small_resnet()
    log = tmp_path / "tuning.jsonl"
    records = tune(mod, "cpu", log=log, trials=3, params=params, repeat=2)
    lines = log.read_text().splitlines()
    assert len(lines) == len(records) > 0
    first = json.loads(lines[0])
    assert set(first) >= {"target", "workload", "op", "implementation", "config", "costs_us", "error", "timestamp",
                          "version"}
    assert first["target"] == "cpu" and first["version"] == FORMAT_VERSION
    assert all(r.error == ErrorCode.NO_ERROR and len(r.costs_us) == 2 for r in records)
    workloads = {w.key for w in program_workloads(mod, params)}
    assert {r.workload for r in records} == workloads
    conv_records = [r for r in records if r.op == "nn.conv2d"]
    assert len({r.implementation for r in conv_records}) > 1  # several candidates were measured


def test_rebuilding_with_the_log_picks_the_measured_best(tmp_path):
    mod, params = small_resnet()
    log = tmp_path / "tuning.jsonl"
    records = tune(mod, "cpu", log=log, trials=4, params=params, repeat=1)
    with apply_history_best(log):
        tuned = build(mod, "cpu", params)
    for selection in tuned.selections:
        best = min((r for r in records if r.workload == selection.workload.key), key=lambda r: r.latency_us)
        assert (selection.implementation.name, selection.config) == (best.implementation, best.config)
        assert selection.reason == "tuned"
    x = rand(1, 3, 16, 16)
    np.testing.assert_allclose(tuned.run(x=x), evaluate(mod, {"x": x}, params), rtol=1e-4, atol=1e-5)


def test_a_log_that_prefers_another_implementation_changes_the_choice(tmp_path):
    mod, params = small_resnet()
    untuned = conv_choices(build(mod, "cpu", params))
    assert set(untuned.values()) == {"conv2d_im2col.cpu"}
    log = tmp_path / "direct_wins.jsonl"
    append_records(log, [TuningRecord("cpu", key, "nn.conv2d", name, config, (cost,))
                         for key in untuned
                         for name, config, cost in (("conv2d_im2col.cpu", {}, 50.0),
                                                    ("conv2d_direct.cpu", {"oc_block": None}, 10.0))])
    with apply_history_best(log):
        tuned = build(mod, "cpu", params)
    assert set(conv_choices(tuned).values()) == {"conv2d_direct.cpu"}
    assert all(s.reason == "tuned" and s.measured_us == 10.0 for s in tuned.selections if s.workload.op == "nn.conv2d")
    assert conv_choices(build(mod, "cpu", params)) == untuned  # outside the block, plevel again


def test_bad_records_are_skipped_with_warnings(tmp_path, caplog):
    mod, params = small_resnet()
    keys = list(conv_choices(build(mod, "cpu", params)))
    good = TuningRecord("cpu", keys[0], "nn.conv2d", "conv2d_direct.cpu", {"oc_block": None}, (10.0,))
    lines = [
        good.to_json(),
        "{not json",
        json.dumps({"target": "cpu"}),
        TuningRecord("cuda", keys[0], "nn.conv2d", "nn.conv2d.cuda", {}, (0.1,)).to_json(),
        TuningRecord("cpu", keys[0], "nn.conv2d", "conv2d_magic.cpu", {}, (0.1,)).to_json(),
        TuningRecord("cpu", keys[0], "nn.conv2d", "conv2d_direct.cpu", {"oc_block": 7}, (0.1,)).to_json(),
        TuningRecord("cpu", keys[0], "nn.conv2d", "conv2d_winograd.cpu", {}, (0.1,), version=99).to_json(),
        TuningRecord("cpu", keys[0], "nn.conv2d", "conv2d_im2col.cpu", {}, (), error=ErrorCode.RUNTIME_ERROR).to_json(),
    ]
    log = tmp_path / "messy.jsonl"
    log.write_text("\n".join(lines) + "\n")
    with caplog.at_level(logging.WARNING, logger="strategies"):
        assert len(load_records(log)) == 5  # the corrupt lines and the other version are dropped
        with apply_history_best(log):
            exe = build(mod, "cpu", params)
    messages = "\n".join(r.getMessage() for r in caplog.records)
    assert "messy.jsonl:2: tuning record skipped (invalid JSON" in messages
    assert "messy.jsonl:3: tuning record skipped (corrupt record: missing field(s)" in messages
    assert "messy.jsonl:7: tuning record skipped (format version 99" in messages
    assert "target(s) cuda skipped" in messages
    assert "'conv2d_magic.cpu', which target cpu does not offer" in messages
    assert "{'oc_block': 7}, which is not in conv2d_direct.cpu's space" in messages
    assert conv_choices(exe)[keys[0]] == "conv2d_direct.cpu"


@pytest.fixture
def flaky_relu():
    """nn.relu with a correct, a crashing and a wrong implementation (the original restored after)."""
    op = ir.get_op("nn.relu")
    saved = op.get_attr("FTVMStrategy")

    def crash(attrs, inputs, out_type, config):
        raise RuntimeError("kernel exploded")

    def strategy(attrs, in_types, out_type, target):
        s = OpStrategy()
        no_knobs = lambda *args: ConfigSpace()  # noqa: E731
        s.add_implementation(lambda a, xs, t, c: np.maximum(xs[0], 0), no_knobs, "relu_good", plevel=10)
        s.add_implementation(crash, no_knobs, "relu_crash", plevel=5)
        s.add_implementation(lambda a, xs, t, c: xs[0], no_knobs, "relu_wrong", plevel=1)
        return s

    register_strategy("nn.relu", strategy, override=True)
    yield
    op.set_attr("FTVMStrategy", saved)


def test_failing_candidates_are_recorded_with_an_error_code(tmp_path, flaky_relu):
    program = relay.nn.relu(relay.var("x", shape=(64,)))
    records = {r.implementation: r for r in tune(program, "cpu", log=tmp_path / "t.jsonl", trials=5)}
    assert records["relu_good"].ok
    crash = records["relu_crash"]
    assert crash.error == ErrorCode.RUNTIME_ERROR and "kernel exploded" in crash.error_msg
    assert records["relu_wrong"].error == ErrorCode.WRONG_RESULT and not records["relu_wrong"].costs_us
    with apply_history_best(tmp_path / "t.jsonl"):
        assert build(program, "cpu").selections[0].implementation.name == "relu_good"


@pytest.mark.parametrize("option", ["trials", "repeat"])
def test_tune_rejects_zero_trials_and_repeats(tmp_path, option):
    with pytest.raises(ValueError, match=f"{option} must be >= 1"):
        tune(relay.nn.relu(relay.var("x", shape=(2,))), "cpu", log=tmp_path / "t.jsonl", **{option: 0})
    assert not (tmp_path / "t.jsonl").exists()
