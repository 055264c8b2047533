"""Never slower, checked: an ort program that is not faster than the input gives the input back, or
ours without the op families that do not pay."""

from __future__ import annotations

import json

import numpy as np
import pytest

import eqsat
import eqsat.onnx_io
import ir
import strategies
from eqsat.cli import main
from eqsat.onnx_io import NOT_TIMED_FASTER, faster_of, optimize_to_onnx
from eqsat.regions import BLOCKED_LAYOUT, MAX_VARIANTS, families
from eqsat.speed import CONFIDENCE, MARGIN, MAX_ROUNDS, ROUNDS, decision, margin, median_interval, speed_check
from ir.frontend.export_contrib import CONTRIB_EMITTERS
from ir.frontend.export_nchwc import ort_nchwc_block_size

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402


def _model(matmuls: int) -> "onnx.ModelProto":
    """y = x, after `matmuls` chained 256x256 products whose result is multiplied by 0 and added."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [256, 256], np.full(256 * 256, 1e-3, np.float32))
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    nodes, last = [], "x"
    for k in range(matmuls):
        nodes.append(helper.make_node("MatMul", [last, "w"], [f"m{k}"]))
        last = f"m{k}"
    nodes += [helper.make_node("Mul", [last, "zero"], ["z"]), helper.make_node("Add", ["x", "z"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])], [w, zero])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


FEEDS = {"x": np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)}


def test_a_run_as_long_as_the_warm_up_is_warmed_once():
    """A large model's first run has warmed its caches and allocators: one untimed run, then the timed one."""
    import time
    from eqsat.speed import WARM_SECONDS, _warm_up
    runs = []
    _warm_up(lambda: runs.append(time.sleep(WARM_SECONDS)), time.perf_counter)
    assert len(runs) == 2


def test_a_slower_program_gives_the_input_back():
    check = speed_check(_model(1), _model(12), FEEDS, optimizer="disabled")
    assert check.kept == "input" and check.median > 2 and "the input was kept" in check.summary()


def test_a_faster_program_is_kept():
    check = speed_check(_model(12), _model(1), FEEDS, optimizer="disabled")
    assert check.kept == "ours" and check.median < 0.5 and len(check.ratios) == ROUNDS


def test_a_program_as_fast_as_the_input_gives_the_input_back():
    check = speed_check(_model(4), _model(4), FEEDS, optimizer="disabled")
    assert check.kept == "input" and len(check.ratios) in (ROUNDS, 2 * ROUNDS, MAX_ROUNDS)
    low, high = check.interval()
    assert low <= check.median <= high and "interval" in check.summary()


def test_a_check_whose_block_takes_longer_than_its_time_gets_one_block(monkeypatch):
    import eqsat.speed
    monkeypatch.setattr(eqsat.speed, "TIMED_SECONDS", 1e-6)
    check = speed_check(_model(4), _model(4), FEEDS, optimizer="disabled")
    assert check.kept == "input" and len(check.ratios) == ROUNDS


@pytest.mark.parametrize("n", [ROUNDS, 2 * ROUNDS, MAX_ROUNDS])
def test_the_median_interval_covers_the_median_as_stated(n):
    """The j-th smallest and j-th largest of n ratios miss the median with probability 2 P(B <= j - 1),
    B ~ Binomial(n, 1/2): at most 1 - CONFIDENCE, and no narrower pair of order statistics would do."""
    from scipy.stats import binom
    ratios = [1 + k / 100 for k in range(n)][::-1]
    low, high = median_interval(ratios)
    j = round((low - 1) * 100) + 1
    assert high == 1 + (n - j) / 100
    assert 2 * binom.cdf(j - 1, n, 0.5) <= 1 - CONFIDENCE < 2 * binom.cdf(j, n, 0.5)


def test_a_higher_confidence_widens_the_interval():
    ratios = [0.9 + k / 100 for k in range(MAX_ROUNDS)]
    low, high = median_interval(ratios, CONFIDENCE)
    wide_low, wide_high = median_interval(ratios, 1 - (1 - CONFIDENCE) / 3)
    assert wide_low < low < high < wide_high


def test_the_decision_needs_the_interval_wholly_below_the_margin():
    even = [1.0] * ROUNDS
    clear, slow = [0.5] * ROUNDS, [1.2] * ROUNDS
    close = [1 - MARGIN + d for d in (-0.04, -0.03, -0.02, -0.01, 0.0, 0.01, 0.02, 0.03, 0.04)]
    just_faster = [1 - MARGIN - 0.001] * ROUNDS
    assert decision(clear, even) == "ours" and decision(slow, even) == "input"
    assert decision(just_faster, even) == "ours"
    assert decision(close, even) is None, "an interval across the margin times more rounds"
    assert decision([1 - MARGIN] * ROUNDS, even) == "input", "as fast as the margin is not faster"


def test_the_margin_widens_by_the_controls_distance_from_one():
    """Two sessions of the input 3% apart in this run: ours must be 4% faster, whichever way they drifted."""
    assert margin([1.0] * ROUNDS) == MARGIN
    assert margin([1.03] * ROUNDS) == pytest.approx(MARGIN + 0.03) == margin([0.97] * ROUNDS)
    faster_by_two = [0.98] * ROUNDS
    assert decision(faster_by_two, [1.0] * ROUNDS) == "ours" and decision(faster_by_two, [0.97] * ROUNDS) == "input"


def test_the_cli_reports_the_speed_check_and_can_skip_it(tmp_path, capsys):
    import ir
    mod, params = ir.models.get("resnet50", small=True)
    src = tmp_path / "in.onnx"
    onnx.save(ir.frontend.to_onnx(mod, params), str(src))
    report = tmp_path / "r.json"
    assert main(["optimize", str(src), str(tmp_path / "out.onnx"), "--quiet", "--json", str(report)]) == 0
    assert "speed check under onnxruntime (optimizer all, 1 thread(s)" in capsys.readouterr().out
    check = json.loads(report.read_text())["speed_check"]
    assert check["kept"] == next((t["program"] for t in check["tried"] if t["faster"]), "input")
    assert len(check["ratios"]) in (ROUNDS, 2 * ROUNDS, MAX_ROUNDS) and check["tried"][0]["program"] == "ours"
    low, high = check["interval"]
    assert check["rule"] and check["margin"] >= MARGIN and low <= check["median"] <= high
    assert len(check["controls"]) == len(check["ratios"])
    if check["kept"] == "input":
        assert (tmp_path / "out.onnx").read_bytes() == src.read_bytes()
    assert main(["optimize", str(src), str(tmp_path / "out2.onnx"), "--quiet", "--no-speed-check"]) == 0
    assert "speed check" not in capsys.readouterr().out


SLOW_MATMULS = 24
"""products a slowed emitter adds: each program holding its op runs 2x+ longer than the input."""


def _slowed(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Export `op` as ONNX Runtime's contrib op, then products of its value by 256-wide matrices
    (`SLOW_MATMULS` 256x256) that only decide Where(IsNaN(sum), value, value): the same value, bit
    for bit, at a large price."""
    emit = CONTRIB_EMITTERS[op]

    def emitter(ctx, call, args):
        out = emit(ctx, call, args)
        last = ctx.node("MatMul", [out, ctx.const(np.full((ctx.type_of(call).shape[-1], 256), 1e-3, np.float32))])
        w = ctx.const(np.full((256, 256), 1e-3, np.float32))
        for _ in range(SLOW_MATMULS):
            last = ctx.node("MatMul", [last, w])
        return ctx.node("Where", [ctx.node("IsNaN", [ctx.node("ReduceSum", [last], keepdims=0)]), out, out])
    monkeypatch.setitem(CONTRIB_EMITTERS, op, emitter)


def _two_families() -> "onnx.ModelProto":
    """y = Gelu(c + c + c + b) for three copies c of a chain of four 256x256 products of x, which the
    e-graph computes once (the input, run with ONNX Runtime's optimizer off, three times), and
    z = Relu(x @ v + d): ours brings in nn.bias_gelu and nn.dense_bias_act."""
    rng = np.random.default_rng(0)

    def const(name, *shape):
        return helper.make_tensor(name, TensorProto.FLOAT, shape, rng.standard_normal(shape).astype(np.float32) * 0.05)
    nodes, chains = [], []
    for c in range(3):
        last = "x"
        for k in range(4):
            nodes.append(helper.make_node("MatMul", [last, "w"], [f"m{c}_{k}"]))
            last = f"m{c}_{k}"
        chains.append(last)
    nodes += [helper.make_node("Sum", chains, ["s"]), helper.make_node("Add", ["s", "b"], ["sb"]),
              helper.make_node("Gelu", ["sb"], ["y"]), helper.make_node("MatMul", ["x", "v"], ["xv"]),
              helper.make_node("Add", ["xv", "d"], ["xvd"]), helper.make_node("Relu", ["xvd"], ["z"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [64, 128])],
                              [const("w", 256, 256), const("b", 256), const("v", 256, 128), const("d", 128)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


SESSION = strategies.Target("ort", optimizer="disabled")


def _optimized(model: "onnx.ModelProto") -> eqsat.Optimized:
    """Ours, not verified yet: `faster_of` verifies what it keeps."""
    mod, params = ir.frontend.from_onnx(model)
    return eqsat.optimize(mod, params, target=SESSION, limits=eqsat.Limits(iterations=6), verify=False)


def test_the_families_ours_brought_in_largest_estimated_saving_first():
    res = _optimized(_two_families())
    found = families(res)
    assert sorted(f.name for f in found) == ["nn.bias_gelu", "nn.dense_bias_act"]
    assert [f.saving for f in found] == sorted((f.saving for f in found), reverse=True)
    assert all(f.saving > 0 and f.ops == (f.name,) for f in found)


@pytest.mark.skipif(ort_nchwc_block_size() is None, reason="this ONNX Runtime has no NCHWc kernels")
def test_the_blocked_layout_is_one_family():
    mod, params = ir.models.get("squeezenet", small=True)
    res = eqsat.optimize(mod, params, target="ort", limits=eqsat.Limits(iterations=8), verify=False)
    found = {f.name: f.ops for f in families(res)}
    assert {"layout_transform", "nn.contrib_conv2d_NCHWc_bias_act", "nn.max_pool3d"} <= set(found[BLOCKED_LAYOUT])
    assert found["nn.conv2d_bias_act"] == ("nn.conv2d_bias_act",)


def test_ours_without_the_family_that_does_not_pay_is_kept(monkeypatch):
    _slowed("nn.bias_gelu", monkeypatch)
    source = _two_families()
    res = _optimized(source)
    chosen, verdict = faster_of(res, source)
    assert verdict.kept == "ours without nn.bias_gelu" and verdict.ours.median > 2
    assert [t.name for t in verdict.tried if not t.faster] == [t.name for t in verdict.tried[:-1]]
    assert verdict.tried[-1].check.median < 0.5 and verdict.median == verdict.tried[-1].check.median
    kept = verdict.result
    assert "nn.bias_gelu" not in kept.op_counts_after and kept.op_counts_after.get("nn.dense_bias_act") == 1
    assert kept.verification is not None and kept.verification.passed
    written = {n.op_type for n in chosen.graph.node}
    assert "FusedGemm" in written and "BiasGelu" not in written
    assert "kept: ours without nn.bias_gelu; the regions that pay were kept" in verdict.summary()


def test_the_input_is_kept_when_no_family_left_out_pays(monkeypatch):
    _slowed("nn.bias_gelu", monkeypatch)
    _slowed("nn.dense_bias_act", monkeypatch)
    source = _two_families()
    res = _optimized(source)
    chosen, verdict = faster_of(res, source)
    assert chosen is source and verdict.kept == "input" and verdict.result is None
    variants = [f"ours without {f.name}" for f in families(res)[:MAX_VARIANTS]]
    assert [t.name for t in verdict.tried] == ["ours", *variants] and len(variants) == 2
    assert all(t.check is not None and t.check.median > 1.5 for t in verdict.tried)
    assert "no program tried is faster" in verdict.summary()


def _verifications(monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> list[eqsat.Optimized]:
    """The programs `faster_of` verifies, as it asks; each fails when `fail`."""
    asked: list[eqsat.Optimized] = []
    real = eqsat.onnx_io.verified

    def verified(res, verify=True, *args):
        if res.verification is None and verify:
            asked.append(res)
            if fail:
                raise eqsat.VerificationError("output 0 differs")
        return real(res, verify, *args)
    monkeypatch.setattr(eqsat.onnx_io, "verified", verified)
    return asked


def test_a_program_timed_slower_is_never_verified(monkeypatch):
    _slowed("nn.bias_gelu", monkeypatch)
    _slowed("nn.dense_bias_act", monkeypatch)
    asked = _verifications(monkeypatch)
    source = _two_families()
    res = _optimized(source)
    _, verdict = faster_of(res, source)
    assert verdict.kept == "input" and len(verdict.tried) == 3 and asked == []


def test_a_faster_program_that_fails_verification_is_not_kept(monkeypatch):
    _slowed("nn.bias_gelu", monkeypatch)
    asked = _verifications(monkeypatch, fail=True)
    source = _two_families()
    res = _optimized(source)
    chosen, verdict = faster_of(res, source)
    assert chosen is source and verdict.kept == "input" and verdict.result is None
    failed = next(t for t in verdict.tried if t.name == "ours without nn.bias_gelu")
    assert failed.faster and not failed.kept and failed.note.startswith("not verified: output 0 differs")
    assert len(asked) == 1 and "nn.bias_gelu" not in asked[0].op_counts_after, "the slower program is not verified"
    assert "faster, but not verified" in verdict.summary()
    assert failed.to_dict()["kept"] is False and failed.to_dict()["note"] == failed.note


def test_ours_is_verified_once_it_is_timed_faster(monkeypatch):
    asked = _verifications(monkeypatch)
    source = _two_families()
    res = _optimized(source)
    chosen, verdict = faster_of(res, source)
    assert verdict.kept == "ours" and asked == [res]
    assert verdict.result.verification is not None and verdict.result.verification.passed
    assert {"FusedGemm", "BiasGelu"} <= {n.op_type for n in chosen.graph.node}
    onnx.checker.check_model(chosen)  # the kept program is written whole, its weights inside


def test_ours_timed_faster_that_fails_verification_fails_closed(monkeypatch):
    _verifications(monkeypatch, fail=True)
    source = _two_families()
    with pytest.raises(eqsat.VerificationError, match="output 0 differs"):
        faster_of(_optimized(source), source)


def test_without_verify_no_program_is_verified(monkeypatch):
    _slowed("nn.bias_gelu", monkeypatch)
    asked = _verifications(monkeypatch)
    source = _two_families()
    mod, params = ir.frontend.from_onnx(source)
    written = optimize_to_onnx(mod, params, source, target=SESSION, limits=eqsat.Limits(iterations=6), verify=False)
    assert written.verdict.kept == "ours without nn.bias_gelu" and asked == []
    assert written.kept.verification is None and "not verified (verify=False)" in written.summary()


def test_ours_not_kept_says_why_it_was_not_verified(tmp_path, capsys, monkeypatch):
    _slowed("nn.bias_gelu", monkeypatch)
    _slowed("nn.dense_bias_act", monkeypatch)
    src, out, report = tmp_path / "in.onnx", tmp_path / "out.onnx", tmp_path / "r.json"
    onnx.save(_two_families(), str(src))
    assert main(["optimize", str(src), str(out), "--quiet", "--json", str(report), "--ort-optimizer", "disabled",
                 "--iterations", "6"]) == 0
    assert f"not verified ({NOT_TIMED_FASTER})" in capsys.readouterr().out
    data = json.loads(report.read_text())
    assert data["speed_check"]["kept"] == "input" and out.read_bytes() == src.read_bytes()
    assert data["verification"] == {"verified": False, "status": f"not verified ({NOT_TIMED_FASTER})"}


def test_programs_after_ours_are_timed_while_the_verdicts_time_lasts(monkeypatch):
    import eqsat.speed
    _slowed("nn.bias_gelu", monkeypatch)
    monkeypatch.setattr(eqsat.speed, "VERDICT_SECONDS", 1e-6)
    monkeypatch.setattr(eqsat.onnx_io, "VERDICT_SECONDS", 1e-6)
    source = _two_families()
    res = _optimized(source)
    chosen, verdict = faster_of(res, source)
    assert chosen is source and verdict.kept == "input" and len(verdict.ours.ratios) == ROUNDS
    assert [t.check for t in verdict.tried[1:]] == [None, None]
    assert all("seconds of timing one verdict may take are spent" in t.note for t in verdict.tried[1:])


def test_the_report_shows_every_program_tried(tmp_path, capsys, monkeypatch):
    _slowed("nn.bias_gelu", monkeypatch)
    src, out, report = tmp_path / "in.onnx", tmp_path / "out.onnx", tmp_path / "r.json"
    onnx.save(_two_families(), str(src))
    assert main(["optimize", str(src), str(out), "--quiet", "--json", str(report), "--ort-optimizer", "disabled",
                 "--iterations", "6"]) == 0
    printed = capsys.readouterr().out
    assert "so programs with part of it were timed" in printed and "ours without nn.bias_gelu / input" in printed
    assert "ours without nn.bias_gelu: verified on 3 input sets" in printed
    assert json.loads(report.read_text())["verification"]["verified"] is True
    check = json.loads(report.read_text())["speed_check"]
    assert check["kept"] == "ours without nn.bias_gelu" and check["tried"][-1]["ops"] == ["nn.bias_gelu"]
    assert check["tried"][0]["program"] == "ours" and not check["tried"][0]["faster"] and check["rule"]
    assert check["confidence"] == pytest.approx(1 - (1 - CONFIDENCE) / 3), "three programs may be timed"
    assert all(len(t["ratios"]) in (ROUNDS, 2 * ROUNDS, MAX_ROUNDS) for t in check["tried"])
    for t in check["tried"]:  # each decision can be redone from the report
        assert (decision(t["ratios"], t["controls"], t["confidence"]) or "input") == ("ours" if t["faster"] else "input")
    written = onnx.load(str(out))
    assert "BiasGelu" not in {n.op_type for n in written.graph.node}
    program_ops = {n["op"] for n in json.loads(report.read_text())["program"] if "op" in n}
    assert "nn.bias_gelu" not in program_ops and "nn.dense_bias_act" in program_ops


def test_the_speed_check_times_on_the_first_input_set_the_input_model_runs_on():
    """A model that fails on some input (here a feed of the wrong width) is timed on the next set;
    one it fails on entirely cannot be timed, which is a `SpeedCheckError`, not a crash."""
    from eqsat.errors import SpeedCheckError
    wrong = {"x": np.zeros((64, 255), np.float32)}
    check = speed_check(_model(12), _model(1), [wrong, FEEDS], optimizer="disabled")
    assert check.kept == "ours"
    with pytest.raises(SpeedCheckError, match="fails on every input set"):
        speed_check(_model(1), _model(1), [wrong], optimizer="disabled")


def test_a_decode_step_is_timed_with_a_mask_as_long_as_the_past_and_new_tokens():
    """dynamo's decode step takes a mask of its own length (`Dim.AUTO`): all sizes equal do not run,
    so the speed check draws the next sizes, as verification does; the call returns a model either way,
    whose outputs have the input model's names (ours are named as the imported ones were)."""
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "llm", "llama_dynamo_sdpa_cache.onnx")
    out = eqsat.optimize_onnx(path, limits=eqsat.Limits(iterations=8, nodes=20_000))
    assert {o.name for o in out.graph.output} == {o.name for o in onnx.load(path).graph.output}
