"""The pipeline end to end: optimize every zoo model, compare targets and extractors, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

import eqsat
import ir
import strategies
from eqsat.cli import main


def random_inputs(mod: ir.IRModule, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for p in mod["main"].params:
        ty = p.type_annotation
        if ty.dtype.startswith("int"):
            out[p.name_hint] = rng.integers(0, 10, ty.concrete_shape).astype(ty.dtype)
        else:
            out[p.name_hint] = rng.standard_normal(ty.concrete_shape).astype(ty.dtype)
    return out


def as_list(value):
    return list(value) if isinstance(value, tuple) else [value]


@pytest.mark.parametrize("model", ir.models.list_models())
def test_optimized_model_computes_the_same_and_costs_no_more(model):
    mod, params = ir.models.get(model, small=True)
    res = eqsat.optimize(mod, params, target="cpu", limits=eqsat.Limits(iterations=8, seconds=20))
    assert res.cost_after <= res.cost_before
    assert res.params == {} and res.report.stop_reason in eqsat.StopReason
    inputs = {k: v for k, v in random_inputs(mod).items() if k not in params}
    want = strategies.evaluate(mod, {**inputs, **params})
    got = strategies.evaluate(res.mod, inputs)
    for a, b in zip(as_list(got), as_list(want)):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


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
