"""Tuning the ort target with ONNX Runtime's kernels: one record per workload, costs from the log,
roofline fallback counted, bad logs validated. Tiny shapes and few rounds; nothing asserts speed."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ir import relay
from ir.types import TensorType
from strategies import CostModel, tune
from strategies.executor import prepare_program
from strategies.ort_timing import GRAPH_OPTIMIZATION, MAX_COPIES, ORT_IMPLEMENTATION, copies_for, workload_program
from strategies.records import TuningRecord, read_log
from strategies.tuning import program_workloads, tune_workloads, workload_constants
from strategies.workload import Workload

pytest.importorskip("onnxruntime")


def small_program():
    """conv2d -> bias_add -> relu, concatenated with relu of the input: five workloads, one with a tuple input."""
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    b = relay.var("b", shape=(4,))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    out = relay.concatenate([y, relay.nn.relu(x)], axis=1)
    params = {"w": rng.standard_normal((4, 3, 3, 3)).astype("float32"),
              "b": rng.standard_normal(4).astype("float32")}
    return relay.Function([x, w, b], out), params


def test_tuning_writes_one_valid_ort_record_per_workload(tmp_path):
    func, params = small_program()
    log = tmp_path / "ort.jsonl"
    records = tune(func, "ort", log=log, params=params, repeat=2, threads=1)
    workloads = program_workloads(func, params)
    assert [r.workload for r in records] == [w.key for w in workloads]
    assert len({r.workload for r in records}) == len(records) == 5   # relu on two shapes is two workloads
    read = read_log(log)
    assert not read.skipped and read.records == records
    for record in records:
        assert record.target == "ort" and record.implementation == ORT_IMPLEMENTATION and record.ok
        assert len(record.costs_us) == 2 and all(c >= 0 for c in record.costs_us)
        assert record.config["intra_op_threads"] == 1 and record.config["clock"] == "thread_cpu"
        assert record.config["graph_optimization"] == GRAPH_OPTIMIZATION
        assert record.config["session_overhead_us"] >= 0 and record.config["onnxruntime"]


def test_weights_are_constants_of_the_timed_program():
    func, params = small_program()
    (conv, constant), *_ = workload_constants(func, params)
    assert conv.op == "nn.conv2d" and constant == {1}
    (unbound, constant), *_ = workload_constants(func)
    assert constant == frozenset()


def test_symbolic_workloads_are_skipped_and_a_workload_ort_cannot_run_is_a_failed_record(tmp_path):
    good = program_workloads(relay.nn.relu(relay.var("x", shape=(2, 3))))[0]
    symbolic = Workload(good.op, good.attrs, (TensorType(("n", 3)),), TensorType(("n", 3)))
    bad = Workload(good.op, good.attrs, (TensorType((2, 3), "int64"),), TensorType((2, 3), "int64"))  # no int64 Relu
    items = [(good, frozenset()), (symbolic, frozenset()), (bad, frozenset()), (good, frozenset())]
    records = tune_workloads(items, "ort", log=tmp_path / "t.jsonl", repeat=1, threads=1)
    assert [r.workload for r in records] == [good.key, bad.key]
    assert records[0].ok and not records[1].ok and records[1].costs_us == ()
    assert "Relu" in records[1].error_msg


def ort_record(workload: Workload, latency_us: float, target: str = "ort", **changes) -> TuningRecord:
    fields = dict(target=target, workload=workload.key, op=workload.op, implementation=ORT_IMPLEMENTATION,
                  config={"intra_op_threads": 1}, costs_us=(latency_us,))
    return TuningRecord(**{**fields, **changes})


def test_logged_costs_are_used_and_unlogged_workloads_fall_back_to_the_roofline_and_are_counted():
    func, params = small_program()
    program = prepare_program(func, params)
    conv, bias, relu, *_ = program_workloads(func, params)
    roofline = CostModel("ort")
    model = CostModel("ort", [ort_record(conv, 1000.0), ort_record(conv, 40.0), ort_record(relu, 3.0),
                              ort_record(bias, 0.5, error=1, costs_us=())])        # failed: not a cost
    cost = lambda m, w: m.node_cost(w.op, w.attrs, w.in_types, w.out_type)  # noqa: E731
    assert cost(model, conv) == 40.0 and cost(model, relu) == 3.0           # the fastest record
    assert cost(model, bias) == cost(roofline, bias)
    coverage = model.coverage(program)
    assert (coverage.measured, coverage.estimated) == (2, 3)
    assert coverage.measured_us == 43.0
    assert math.isclose(coverage.measured_us + coverage.estimated_us, model.program_cost(program))
    assert 0 < coverage.estimated_share < 1 and "3 of 5 workloads estimated" in coverage.summary()
    assert roofline.coverage(program).estimated == 5


def test_ort_records_are_costs_of_the_ort_target_only():
    func, params = small_program()
    conv = program_workloads(func, params)[0]
    args = (conv.op, conv.attrs, conv.in_types, conv.out_type)
    assert CostModel("cpu", [ort_record(conv, 1.0)]).node_cost(*args) == CostModel("cpu").node_cost(*args)
    assert CostModel("ort", [ort_record(conv, 1.0, target="cpu")]).node_cost(*args) == CostModel("ort").node_cost(*args)


def test_a_bad_log_is_validated_line_by_line(tmp_path, caplog):
    func, params = small_program()
    conv, bias, *_ = program_workloads(func, params)
    good = ort_record(conv, 7.0).to_json()
    negative = json.loads(ort_record(bias, 1.0).to_json()) | {"costs_us": [-1.0]}
    log = tmp_path / "bad.jsonl"
    log.write_text("\n".join([good, "{not json", json.dumps(negative), '{"version": 99}']) + "\n")
    with caplog.at_level("WARNING", logger="strategies"):
        model = CostModel("ort", log)
    assert model.node_cost(conv.op, conv.attrs, conv.in_types, conv.out_type) == 7.0
    assert model.node_cost(bias.op, bias.attrs, bias.in_types, bias.out_type) == \
        CostModel("ort").node_cost(bias.op, bias.attrs, bias.in_types, bias.out_type)
    skipped = [r.getMessage() for r in caplog.records]
    assert any("bad.jsonl:2" in m for m in skipped) and any("bad.jsonl:3" in m for m in skipped)
    assert any("bad.jsonl:4" in m for m in skipped)


def test_weights_are_timed_as_cold_as_the_programs_weights(tmp_path):
    x, w = relay.var("x", shape=(1, 16)), relay.var("w", shape=(32, 16))
    params = {"w": np.ones((32, 16), "float32")}
    (dense, constant), = workload_constants(relay.Function([x, w], relay.nn.dense(x, w)), params)
    own = 32 * 16 * 4
    assert [copies_for(dense, constant, n) for n in (0, own, 4 * own, 10**12)] == [1, 1, 4, MAX_COPIES]
    assert copies_for(dense, frozenset(), 10**12) == 1                       # no weights: one call
    func, feeds = workload_program(dense, constant, np.random.default_rng(0), copies=3)
    calls = func.body.fields
    assert len(calls) == 3 and list(feeds) == ["in0"] and all(c.args[0] is func.params[0] for c in calls)
    assert len({id(c.args[1]) for c in calls}) == 3                         # each call has its own weights
    record, = tune_workloads([(dense, constant)], "ort", log=tmp_path / "t.jsonl", repeat=1, threads=1,
                             weight_bytes=4 * own)
    assert record.ok and record.config["copies"] == 4


def test_sessions_are_timed_in_groups_that_fit_the_resident_budget():
    from strategies.ort_timing import RESIDENT_BYTES, _groups
    half = RESIDENT_BYTES // 2
    assert _groups([half, half, 1, 3 * RESIDENT_BYTES, 1]) == [[0, 1], [2], [3], [4]]
    assert _groups([]) == [[]] and _groups([1, 2, 3]) == [[0, 1, 2]]


def test_an_ort_log_selects_no_executor_kernel_and_warns_about_none(tmp_path, caplog):
    from strategies import apply_history_best, build
    func, params = small_program()
    log = tmp_path / "ort.jsonl"
    tune(func, "ort", log=log, params=params, repeat=1, threads=1)
    with caplog.at_level("WARNING", logger="strategies"), apply_history_best(log):
        build(func, "ort", params=params)
    assert not [r for r in caplog.records if "does not offer" in r.getMessage()]
