"""`optimize` and `compare` share one pipeline: the same rules, extraction and verification per target."""

from __future__ import annotations

import json

import pytest

import eqsat
import ir
import strategies
from eqsat.extract import OpCount
from eqsat.target import resolve_target


@pytest.mark.parametrize("target", ["cpu", "ort"])
def test_compare_and_optimize_extract_the_same_program(target):
    mod, params = ir.models.get("bert", small=True)
    limits = eqsat.Limits(iterations=4)
    res = eqsat.optimize(mod, params, target=target, limits=limits)
    cmp = eqsat.compare(mod, params, targets=[target], limits=limits)
    (candidate,) = cmp.candidates
    assert ir.structural_equal(candidate.mod["main"], res.mod["main"])
    assert candidate.verification.passed and candidate.verification.runner == res.verification.runner


def test_compare_verifies_every_program_unless_told_not_to():
    mod, params = ir.models.get("nasrnn", small=True)
    cmp = eqsat.compare(mod, params, targets=["cpu", "ort"], limits=eqsat.Limits(iterations=2))
    assert all(c.verification.passed for c in cmp.candidates) and "verified on" in str(cmp)
    quick = eqsat.compare(mod, params, targets=["cpu"], limits=eqsat.Limits(iterations=2), verify=False)
    assert quick.candidates[0].verification is None


def test_the_cli_compare_and_optimize_write_the_same_ort_program(tmp_path):
    from eqsat.cli import main
    optimized, compared = tmp_path / "optimize.json", tmp_path / "compare.json"
    common = ["bert", "--small", "--iterations", "4", "--quiet"]
    assert main(["optimize", *common, "--target", "ort", "--json", str(optimized)]) == 0
    assert main(["compare", *common, "--targets", "ort", "--json", str(compared)]) == 0
    one, other = json.loads(optimized.read_text()), json.loads(compared.read_text())
    (candidate,) = other["candidates"]
    assert candidate["program"] == one["program"] and candidate["target"] == one["target"] == "ort"
    assert candidate["verification"]["verified"] and candidate["verification"]["runner"] == one["verification"]["runner"]
    assert other["report"]["final"] == one["report"]["final"]


def test_a_target_is_resolved_once_into_its_rules_cost_model_and_runner():
    ort = resolve_target("ort")
    assert (ort.name, ort.unit, ort.runs_in, ort.contrib) == ("ort", "µs", "ort", True)
    standard = resolve_target("ort", standard_onnx=True)
    assert standard.contrib is False and {r.name for r in standard.rules} < {r.name for r in ort.rules}
    assert resolve_target(ort) is ort
    cuda = resolve_target(strategies.CostModel("cuda"))
    assert (cuda.name, cuda.runs_in) == ("cuda", "cpu")
    ops = resolve_target(OpCount())
    assert (ops.name, ops.unit) == ("ops", "ops")
    session = resolve_target(strategies.Target("ort", optimizer="disabled", threads=2))
    assert (session.target.optimizer, session.target.threads) == ("disabled", 2)
    with pytest.raises(TypeError, match="target must be"):
        resolve_target(3)
    with pytest.raises(ValueError, match="tuning log"):
        resolve_target("ops", log=[])
    with pytest.raises(strategies.TargetError, match="ONNX Runtime session"):
        strategies.Target("cpu", threads=2)
    with pytest.raises(strategies.TargetError, match="unknown ONNX Runtime optimizer"):
        strategies.Target("ort", optimizer="off")


def test_optimize_takes_a_schedule_of_phases():
    mod, params = ir.models.get("bert", small=True)
    phases = [eqsat.Phase("simplify", eqsat.Limits(iterations=2)), eqsat.Phase("default", eqsat.Limits(iterations=3))]
    res = eqsat.optimize(mod, params, rules=phases, target="cpu")
    assert res.verification.passed and 1 < res.report.iterations <= 5
    assert [row.iteration for row in res.report.rows] == list(range(1, res.report.iterations + 1))
    assert res.report.limits == phases[-1].limits and res.report.initial_enodes < res.report.enodes
    assert res.cost_after < res.cost_before  # the default phase fused
    with pytest.raises(TypeError, match="Phase"):
        eqsat.optimize(mod, params, rules=[phases[0], "default"], verify=False)
