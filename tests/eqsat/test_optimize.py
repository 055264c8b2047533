"""The pipeline end to end: optimize every zoo model, compare targets and extractors, the CLI."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest

import eqsat
import ir
import strategies
from ir import relay
from eqsat.cli import main
from eqsat.soundness.verify import random_inputs


def as_list(value):
    return list(value) if isinstance(value, tuple) else [value]


@pytest.mark.parametrize("model", ir.models.list_models())
def test_optimized_model_computes_the_same_and_costs_no_more(model):
    mod, params = ir.models.get(model, small=True)
    res = eqsat.optimize(mod, params, target="cpu", limits=eqsat.Limits(iterations=8, seconds=20))
    assert res.cost_after <= res.cost_before
    assert res.report.stop_reason in eqsat.StopReason
    assert res.verification is not None and res.verification.max_abs_diff <= res.verification.tolerance
    # surviving weights are parameters again, under their names and with their values
    assert set(res.params) <= set(params)
    assert all(res.params[k] is params[k] or np.array_equal(res.params[k], params[k]) for k in res.params)
    names = [p.name_hint for p in res.mod["main"].params]
    assert set(res.params) <= set(names) and len(set(names)) == len(names)
    inputs = random_inputs(mod, skip=list(params))
    want = strategies.evaluate(mod, inputs, params)
    got = strategies.evaluate(res.mod, inputs, res.params)
    for a, b in zip(as_list(got), as_list(want)):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


def test_params_stay_parameters_so_the_result_builds_and_exports_like_the_input():
    mod, params = ir.models.get("bert", small=True)
    res = eqsat.optimize(mod, params, target="cpu", limits=eqsat.Limits(iterations=6))
    # weights a rule joined (the query, key and value projections) and the position embeddings a slice
    # reads are folded into constants: every other weight is a parameter again, under its name
    folded = set(params) - set(res.params)
    assert set(res.params) < set(params) and all(any(w in n for w in ("query", "key", "value", "position"))
                                                  for n in folded)
    inputs = random_inputs(mod, skip=list(params))
    want = as_list(strategies.build(mod, "cpu", params).run(inputs))
    got = as_list(strategies.build(res.mod, "cpu", res.params).run(inputs))
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    model = ir.frontend.to_onnx(res.mod, res.params)
    assert {init.name for init in model.graph.initializer} >= set(res.params)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for a, b in zip(session.run(None, inputs), want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_calls_on_parameters_alone_are_folded_so_no_session_computes_them():
    # the second projection reads a learned state and a weight, both parameters: its value is known
    # before any input arrives (NasRNN's first step), and every cost model prices it at zero
    x, h = relay.var("x", shape=(1, 8)), relay.var("h", shape=(1, 8))
    w, u = relay.var("w", shape=(8, 8)), relay.var("u", shape=(8, 8))
    body = relay.tanh(relay.nn.dense(x, w) + relay.reshape(relay.nn.dense(h, u), (1, 8)))
    mod = ir.IRModule.from_expr(relay.Function([x, h, w, u], body))
    rng = np.random.default_rng(0)
    params = {name: rng.normal(size=shape).astype("float32") for name, shape in (("h", (1, 8)), ("w", (8, 8)),
                                                                                  ("u", (8, 8)))}
    for target in ("cpu", "ort"):
        res = eqsat.optimize(mod, params, target=target)
        assert set(res.params) == {"w"}, target
        calls = [n for n in ir.post_order(res.mod["main"]) if isinstance(n, ir.Call)]
        assert [c.op.name for c in calls if c.op.name == "nn.dense"] == ["nn.dense"], target
        assert all(any(isinstance(a, ir.Var) for a in ir.post_order(c)) for c in calls), target
        model = ir.frontend.to_onnx(res.mod, res.params, contrib=target == "ort")
        assert sum(n.op_type in ("Gemm", "MatMul") for n in model.graph.node) == 1, target
        inputs = {"x": rng.normal(size=(1, 8)).astype("float32")}
        want = strategies.evaluate(mod, inputs, params)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(session.run(None, inputs)[0], want, rtol=1e-5, atol=1e-6)


X, = eqsat.pvars("x")


class SigmoidIsFree:
    def node_cost(self, op_name, attrs, in_types, out_type):
        return 0.0 if op_name == "sigmoid" else 1.0


def test_a_wrong_program_is_never_returned_and_the_error_names_the_rules():
    mod, params = ir.models.get("vgg19", small=True)
    rules = eqsat.ruleset("wrong", [eqsat.rule("relu-is-sigmoid", eqsat.call("nn.relu", X), eqsat.call("sigmoid", X))])
    limits = eqsat.Limits(iterations=3)
    with pytest.raises(eqsat.VerificationError) as failure:
        eqsat.optimize(mod, params, target=SigmoidIsFree(), rules=rules, limits=limits)
    assert "relu-is-sigmoid x" in str(failure.value) and "|diff|" in str(failure.value)
    res = eqsat.optimize(mod, params, target=SigmoidIsFree(), rules=rules, limits=limits, verify=False)
    assert res.verification is None and "not verified" in res.summary()
    assert res.op_counts_after.get("nn.relu", 0) == 0  # unchecked, the wrong program comes out


def test_verification_with_several_input_sets_records_the_largest_difference():
    mod, params = ir.models.get("resnet50", small=True)
    res = eqsat.optimize(mod, params, target="cpu", limits=eqsat.Limits(iterations=6), verify=3)
    v = res.verification
    assert v.trials == 3 and v.max_abs_output > 0
    assert 0 < v.max_abs_diff <= v.tolerance  # folded batch norms round differently, within tolerance
    assert "verified on 3 input sets (normal, edge, nonfinite)" in res.summary()


def test_verify_scales_its_tolerance_with_the_outputs_and_requires_nans_in_the_same_places():
    x = relay.var("x", shape=(64,))

    def program(body):
        return ir.IRModule.from_expr(body)
    big = program(x * relay.const(1000.0))
    close = program(x * relay.const(1000.01))                         # 1e-5 of each element
    off = program(x * relay.const(1000.0) + relay.const(0.5))          # small beside the largest, not locally
    assert 0 < eqsat.verify(big, None, close, None, trials=2).max_abs_diff < 0.1
    with pytest.raises(eqsat.VerificationError, match="output 0"):
        eqsat.verify(big, None, off, None, trials=1)
    roots = program(relay.sqrt(x))                                    # NaN for negative inputs
    assert eqsat.verify(roots, None, program(relay.sqrt(x) * relay.const(1.0)), None, trials=1).max_abs_diff == 0
    with pytest.raises(eqsat.VerificationError):
        eqsat.verify(roots, None, program(relay.sqrt(relay.abs(x))), None, trials=1)


def test_summary_gives_units_and_op_changes_and_explain_names_rules_and_implementations():
    mod, params = ir.models.get("resnet50", small=True)
    res = eqsat.optimize(mod, params, target="cpu", limits=eqsat.Limits(iterations=8))
    text = res.summary()
    assert " µs" in text
    assert "nn.batch_norm 53 -> 0" in text and "nn.conv2d 53 -> 0" in text and "nn.conv2d_bias_act 0 -> 53" in text
    assert res.op_counts_before["nn.conv2d"] == 53 and res.op_counts_after.get("nn.conv2d", 0) == 0
    explained = res.explain()
    first = explained.splitlines()[0]
    assert "nn.conv2d_bias_act" in first and " -> " in first and "µs" in first
    assert "plevel" in first or "tuned" in first or "fallback" in first
    rules = {c.rule for c in res.changes}
    assert rules & {"fold-batch-norm-into-conv", "conv-bias", "conv-bias-relu"}
    assert sum(c.cost_after for c in res.changes) < sum(c.cost_before for c in res.changes)
    ops_res = eqsat.optimize(mod, params, target="ops", limits=eqsat.Limits(iterations=8))
    assert " ops (" in ops_res.summary() and "[" not in ops_res.explain()  # no implementations without strategies


def test_compare_targets_and_extractors_from_one_saturation():
    mod, params = ir.models.get("resnet50", small=True)
    result = eqsat.compare(mod, params, targets=["cpu", "ops"], extractors=["tree", "greedy", "ilp"],
                           limits=eqsat.Limits(iterations=6))
    assert [(c.target, c.extractor) for c in result.candidates] == [
        (t, e) for t in ("cpu", "ops") for e in ("tree", "greedy", "ilp")]
    by = {(c.target, c.extractor): c for c in result.candidates}
    for target in ("cpu", "ops"):
        assert by[target, "ilp"].cost_after <= by[target, "greedy"].cost_after + 1e-9
        assert by[target, "greedy"].cost_after <= by[target, "greedy"].cost_before
    assert by["ops", "greedy"].op_counts.get("nn.batch_norm", 0) == 0  # folded away
    text = str(result)
    assert "cost before" in text and "nn.batch_norm" in text
    assert "+" in result.diffs() and "-" in result.diffs()


def test_compare_shows_where_cost_models_pick_different_programs():
    mod, params = ir.models.get("bert", small=True)
    result = eqsat.compare(mod, params, targets=["cpu", "cuda"], limits=eqsat.Limits(iterations=6))
    cpu, cuda = result.candidate("cpu"), result.candidate("cuda")
    # skip_layer_norm has a CUDA kernel and none on the CPU: one e-graph, two programs
    assert cpu.program != cuda.program
    assert cpu.op_counts.get("nn.skip_layer_norm", 0) == 0 < cuda.op_counts["nn.skip_layer_norm"]
    diff = result.diff("cpu", "cuda")
    removed = [line for line in diff.splitlines() if line.startswith("-  ")]
    added = [line for line in diff.splitlines() if line.startswith("+  ")]
    def ops(lines):
        return {line.split("=")[1].split("(")[0].strip() for line in lines}
    # CUDA also has the feed-forward block (dense, GELU, dense as one op) and attention (torch's
    # fused kernel), which takes V untransposed from TVM's batch_matmul layout
    assert ops(added) == {"nn.skip_layer_norm", "nn.feed_forward", "nn.attention", "transpose"}
    assert ops(removed) == {"add", "nn.layer_norm", "nn.dense_bias_act", "nn.gelu", "nn.batch_matmul", "nn.softmax",
                            "divide"}
    assert sum("nn.skip_layer_norm" in line for line in added) == cuda.op_counts["nn.skip_layer_norm"]
    assert f"program {cpu.program} (cpu/greedy) vs {cuda.program} (cuda/greedy): add" in str(result)


def test_compare_labels_equal_programs_alike():
    x, w = relay.var("x", shape=(1, 3, 6, 6)), relay.var("w", shape=(4, 3, 3, 3))
    mod = ir.IRModule.from_expr(relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w), relay.var("b", shape=(4,)))))

    class Unfused:
        def node_cost(self, op_name, attrs, in_types, out_type):
            return 100.0 if op_name.endswith("_act") else 1.0
    result = eqsat.compare(mod, targets=["ops", Unfused(), "ops"], limits=eqsat.Limits(iterations=5))
    first, unfused, again = result.candidates
    assert first.program == again.program != unfused.program
    assert first.op_counts == {"nn.conv2d_bias_act": 1} and unfused.op_counts == {
        "nn.bias_add": 1, "nn.conv2d": 1, "nn.relu": 1}
    assert result.diff(0, 2) == "" and "nn.conv2d_bias_act" in result.diff(0, 1)
    assert unfused.unit == "cost units" and first.unit == "ops"
    with pytest.raises(KeyError, match="candidates"):
        result.candidate("ops")  # two candidates are named "ops"


def test_any_cost_model_can_drive_extraction():
    class FusedIsFree:
        def node_cost(self, op_name, attrs, in_types, out_type):
            return 0.0 if op_name.endswith("_act") else 1.0
    mod, params = ir.models.get("vgg19", small=True)
    res = eqsat.optimize(mod, params, target=FusedIsFree(), limits=eqsat.Limits(iterations=6))
    ops = {n.op.name for n in ir.post_order(res.mod["main"].body) if isinstance(n, ir.Call)}
    assert "nn.conv2d_bias_act" in ops and "nn.conv2d" not in ops


def test_cli_optimize_writes_a_json_report(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["optimize", "bert", "--small", "--target", "ops", "--iterations", "5", "--json", str(out),
                 "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("stopped: ")
    data = json.loads(out.read_text())
    assert data["model"] == "bert" and data["report"]["stop_reason"] in {r.value for r in eqsat.StopReason}
    assert data["cost_after"] <= data["cost_before"]
    assert len(data["report"]["rows"]) == data["report"]["iterations"]


def test_cli_lists_rules_and_models_and_names_bad_input(capsys):
    assert main(["rules", "fusion"]) == 0
    assert "conv-bias-relu" in capsys.readouterr().out
    assert main(["models"]) == 0
    assert "resnet50" in capsys.readouterr().out
    assert main(["optimize", "no-such-model"]) == 2
    assert "no-such-model" in capsys.readouterr().err
    assert main(["rules", "no-such-set"]) == 2


def test_summary_says_which_rules_grew_the_egraph_most():
    mod, params = ir.models.get("bert", small=True)
    res = eqsat.optimize(mod, params, target="cpu", verify=False)
    growth = res.saturated.growth()
    assert sum(growth.values()) == sum(o is not None for o in res.saturated.view.origins) > 0
    top, n = growth.most_common(1)[0]
    assert f"e-graph grown most by: {top} ({n} e-nodes)" in res.summary()


@pytest.mark.parametrize("target", ["cpu", "ort"])
def test_the_input_is_priced_with_the_shapes_saturation_proved(target):
    """A run-time reshape to the data's own shape types its users `(?, ?)` at import; saturation
    proves the shape, and the input is priced with it as its rivals are, so dropping the reshape
    is seen to pay (priced with the unknown shape, the input looked cheaper and was kept)."""
    x = relay.var("x", shape=(512, 512))
    mod = ir.IRModule.from_expr(relay.Function([x], relay.exp(relay.dyn.reshape(x, relay.shape_of(x)))))
    res = eqsat.optimize(mod, target=target)
    assert not res.choice.info.get("kept_input") and dict(res.op_counts_after) == {"exp": 1}
    assert res.cost_after < res.cost_before
