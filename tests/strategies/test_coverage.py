"""Tuning coverage: a log tuned on one model covers all of it, and the right share of another."""

from __future__ import annotations

import pytest

import ir
import strategies
from strategies.coverage import tuning_coverage
from strategies.executor import prepare_program
from strategies.tuning import program_workloads


@pytest.fixture(scope="module")
def resnet_log(tmp_path_factory):
    mod, params = ir.models.get("resnet50", small=True)
    log = tmp_path_factory.mktemp("coverage") / "resnet.jsonl"
    strategies.tune(mod, "cpu", log=log, trials=1, repeat=1, params=params)
    return log


def test_a_log_tuned_on_a_model_covers_all_of_it(resnet_log):
    mod, params = ir.models.get("resnet50", small=True)
    cov = tuning_coverage(mod, "cpu", resnet_log, params)
    assert cov.rows and all(r.tuned for r in cov.rows), cov.table()
    assert cov.untuned_share == 0.0 and "0.0% of the cost" in cov.summary()
    assert all(r.reason.startswith("tuned: ") for r in cov.rows)


def test_another_model_is_covered_where_its_workloads_were_tuned(resnet_log):
    mod, params = ir.models.get("mobilenet_v2", small=True)
    cov = tuning_coverage(mod, "cpu", resnet_log, params)
    logged = {r.workload for r in strategies.records.load_records(resnet_log) if r.ok}
    assert {r.workload.key for r in cov.rows if r.tuned} == logged & {r.workload.key for r in cov.rows}
    expected = strategies.CostModel("cpu", resnet_log).coverage(prepare_program(mod, params)).estimated_share
    assert 0.5 < cov.untuned_share < 1.0
    assert cov.untuned_share == pytest.approx(expected)
    untuned = [r for r in cov.rows if not r.tuned]
    assert untuned and all(r.reason.startswith(("plevel", "fallback")) and r.implementation for r in untuned)
    assert f"{100 * cov.untuned_share:.1f}% of the cost" in cov.summary()
    assert len(cov.table().splitlines()) == len(cov.rows) + 1


def test_a_build_warns_once_about_the_workloads_a_log_does_not_cover(resnet_log, caplog):
    mod, params = ir.models.get("mobilenet_v2", small=True)
    untuned = sum(not r.tuned for r in tuning_coverage(mod, "cpu", resnet_log, params).rows)
    with caplog.at_level("WARNING", logger="strategies"), strategies.apply_history_best(resnet_log):
        strategies.build(mod, "cpu", params)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and f"no usable record for {untuned} of " in warnings[0], warnings
    caplog.clear()
    mod, params = ir.models.get("resnet50", small=True)
    with caplog.at_level("WARNING", logger="strategies"), strategies.apply_history_best(resnet_log):
        strategies.build(mod, "cpu", params)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_ort_workloads_timed_in_onnx_runtime_are_tuned():
    mod, params = ir.models.get("nasrnn", small=True)
    workloads = program_workloads(mod, params)
    records = [strategies.TuningRecord("ort", w.key, w.op, "onnxruntime", {}, (5.0,)) for w in workloads[1:]]
    cov = tuning_coverage(mod, "ort", records, params)
    untimed = {r.workload.key: r for r in cov.rows if not r.tuned}
    assert list(untimed) == [workloads[0].key] and untimed[workloads[0].key].implementation
    timed = [r for r in cov.rows if r.tuned]
    assert all(r.implementation == "onnxruntime" and r.cost_us == 5.0 * r.calls for r in timed)
    assert cov.untuned_share == pytest.approx(untimed[workloads[0].key].cost_us / cov.total_us)
