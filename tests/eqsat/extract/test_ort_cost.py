"""The ort target's tuning log in the pipeline: logged costs decide extraction; `eqsat tune --target ort`."""

from __future__ import annotations

import json

import numpy as np
import pytest

import eqsat
from eqsat.cli import main
from ir import relay
from strategies.ort_timing import ORT_IMPLEMENTATION
from strategies.records import TuningRecord
from strategies.tuning import program_workloads
from strategies.workload import Workload

pytest.importorskip("onnxruntime")

LIMITS = eqsat.Limits(iterations=8, nodes=5_000)


def conv_bias_relu():
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(1, 4, 8, 8))
    w, b = relay.var("w", shape=(8, 4, 3, 3)), relay.var("b", shape=(8,))
    body = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    params = {"w": rng.standard_normal((8, 4, 3, 3)).astype("float32"), "b": rng.standard_normal(8).astype("float32")}
    return relay.Function([x, w, b], body), params


def record(workload: Workload, latency_us: float) -> TuningRecord:
    return TuningRecord("ort", workload.key, workload.op, ORT_IMPLEMENTATION, {"intra_op_threads": 1}, (latency_us,))


def test_a_logged_cost_changes_what_is_extracted(tmp_path):
    func, params = conv_bias_relu()
    fused = eqsat.optimize(func, params, target="ort", rules="default", limits=LIMITS, verify=False)
    assert "nn.conv2d_bias_act" in fused.op_counts_after and fused.coverage is None  # the roofline fuses
    fused_workload = program_workloads(fused.mod, fused.params)[0]
    assert fused_workload.op == "nn.conv2d_bias_act"
    log = tmp_path / "ort.jsonl"   # the fused kernel measured slow, the three separate ones fast
    log.write_text("".join(record(w, 1.0).to_json() + "\n" for w in program_workloads(func, params))
                   + record(fused_workload, 1e6).to_json() + "\n")
    tuned = eqsat.optimize(func, params, target="ort", rules="default", limits=LIMITS, log=log, verify=False)
    assert tuned.op_counts_after == {"nn.bias_add": 1, "nn.conv2d": 1, "nn.relu": 1}
    assert tuned.cost_after == 3.0
    assert (tuned.coverage.measured, tuned.coverage.estimated) == (3, 0)
    assert "tuning log: 0 of 3 workloads estimated" in tuned.summary()


def test_a_log_needs_a_target_name():
    func, params = conv_bias_relu()
    with pytest.raises(ValueError, match="tuning log"):
        eqsat.optimize(func, params, target="ops", log=[], verify=False)


def test_cli_tunes_the_ort_target_and_reports_the_estimated_share(tmp_path, capsys):
    log = tmp_path / "ort.jsonl"
    args = ["tune", "squeezenet", "--small", "--target", "ort", "--log", str(log), "--repeat", "1", "--threads", "1",
            "--quiet"]
    assert main(args) == 0
    head, *lines, total = capsys.readouterr().out.splitlines()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert head.startswith(f"timed {len(records)} workload(s) on ort in ONNX Runtime ")
    assert "(1 intra-op thread(s), graph optimization disabled)" in head
    assert len(lines) == len(records) == len({r["workload"] for r in records})
    assert {r["target"] for r in records} == {"ort"} and all(" µs measured, roofline " in line for line in lines)
    assert total.startswith("ort: the program costs ") and f"; 0 of {len(records)} workloads estimated" in total


def test_cli_tunes_the_candidates_of_the_saturated_egraph(tmp_path, capsys):
    log = tmp_path / "ort.jsonl"
    assert main(["tune", "squeezenet", "--small", "--target", "ort", "--candidates", "--log", str(log),
                 "--repeat", "1", "--threads", "1", "--iterations", "4", "--quiet"]) == 0
    ops = {json.loads(line)["op"] for line in log.read_text().splitlines()}
    assert {"nn.conv2d", "nn.conv2d_bias_act"} <= ops
    assert main(["tune", "squeezenet", "--small", "--target", "ort", "--candidates", "--optimized",
                 "--log", str(log)]) == 2
    assert "give one of them" in capsys.readouterr().err
