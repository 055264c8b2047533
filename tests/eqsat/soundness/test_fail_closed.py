"""Verification fails closed: local tolerance, several sizes of symbolic dimensions, rewritten
regions checked where the outputs cannot show them, and no unverified program without verify=False.

The property test plants an unsound rule (a wrong constant, a wrong activation, a wrong reduction
size) whose wrong value sits in a small slice beside large values, behind a symbolic dimension, or
in a region whose effect an all-zero output hides; every seed must be caught.
"""

from __future__ import annotations

import numpy as np
import pytest

import eqsat
import ir
from ir import relay
from ir.types import SizeVar

from eqsat import call, pvars, rule, ruleset

X, = pvars("x")


def _mod(body: ir.Expr) -> ir.IRModule:
    return ir.IRModule.from_expr(body)


class Prefers:
    """A cost model under which the planted rule's op is free and the op it replaces dear, so the
    planted form is extracted."""

    def __init__(self, op: str, avoid: str = ""):
        self.op, self.avoid = op, avoid

    def node_cost(self, op_name, attrs, in_types, out_type):
        return 0.0 if op_name == self.op else 10.0 if op_name == self.avoid else 1.0


def test_float16_scaling_that_underflows_is_caught():
    # ((tanh(x) * 3e4) * 1e-4) * 1e-4 in float16 is about 3e-4 * tanh(x); a fold that underflows gives 0
    x = relay.var("x", shape=(4, 8), dtype="float16")
    y = relay.var("y", shape=(4, 8), dtype="float16")
    h = lambda v: relay.const(np.float16(v))  # noqa: E731
    scaled = relay.multiply(relay.multiply(relay.multiply(relay.tanh(x), h(3e4)), h(1e-4)), h(1e-4))
    original = _mod(relay.concatenate([scaled, relay.multiply(y, h(100.0))], axis=1))
    wrong = _mod(relay.concatenate([relay.multiply(relay.tanh(x), h(0.0)), relay.multiply(y, h(100.0))], axis=1))
    with pytest.raises(eqsat.VerificationError, match="output 0"):
        eqsat.verify(original, None, wrong, None, trials=3)
    assert eqsat.verify(original, None, original, None, trials=3).passed


def test_a_wrong_slice_beside_a_large_one_is_caught():
    # sigmoid -> hard sigmoid is wrong; beside 1000 * x the old tolerance (scaled by the tensor's max) passed it
    x, y = relay.var("x", shape=(2, 16)), relay.var("y", shape=(2, 16))
    mod = _mod(relay.concatenate([relay.sigmoid(y), relay.multiply(x, relay.const(np.float32(1000)))], axis=1))
    planted = ruleset("planted", [rule("sigmoid-is-hard", call("sigmoid", X), call("nn.hard_sigmoid", X))])
    with pytest.raises(eqsat.VerificationError, match="sigmoid-is-hard"):
        eqsat.optimize(mod, target=Prefers("nn.hard_sigmoid"), rules=planted)


def test_symbolic_dimensions_are_verified_at_several_sizes():
    # mean(x, 0) * 4 == sum(x, 0) only where the symbolic axis has length 4
    n = SizeVar("n")
    x = relay.var("x", shape=(n, 8))
    mean4 = _mod(relay.multiply(relay.mean(x, axis=0), relay.const(np.float32(4))))
    summed = _mod(relay.sum(x, axis=0))
    with pytest.raises(eqsat.VerificationError, match="size variables = "):
        eqsat.verify(mean4, None, summed, None, trials=3)
    commuted = _mod(relay.multiply(relay.const(np.float32(4)), relay.mean(x, axis=0)))
    v = eqsat.verify(mean4, None, commuted, None, trials=3)
    assert v.passed and "size variables tried at 3, 1, 11" in v.summary()


def test_a_region_an_all_zero_output_hides_is_still_checked():
    # a zero-initialised head (as in torchvision's ViT) makes every output 0 whatever the body computes
    x = relay.var("x", shape=(4, 8))
    head = relay.var("head", shape=(3, 8))
    mod = _mod(relay.nn.dense(relay.sigmoid(relay.tanh(x)), head))
    params = {"head": np.zeros((3, 8), np.float32)}
    planted = ruleset("planted", [rule("sigmoid-is-hard", call("sigmoid", X), call("nn.hard_sigmoid", X))])
    with pytest.raises(eqsat.VerificationError, match="e-class"):
        eqsat.optimize(mod, params, target=Prefers("nn.hard_sigmoid"), rules=planted)


def test_outputs_that_do_not_depend_on_the_inputs_are_not_a_pass_by_themselves():
    x = relay.var("x", shape=(4,))
    zero = _mod(relay.multiply(relay.const(np.zeros(4, np.float32)), relay.const(np.float32(2))) + x * relay.const(
        np.float32(0)) * relay.const(np.float32(0)))
    other = _mod(relay.multiply(x, relay.const(np.float32(0))))
    v = eqsat.verify(zero, None, other, None, trials=2)
    assert v.status == "inconclusive" and "do not depend on the inputs" in v.summary()


@pytest.mark.parametrize("verify", [-3, 0, 2.5, "3", None])
def test_verify_takes_true_false_or_a_positive_count(verify):
    x = relay.var("x", shape=(4,))
    with pytest.raises(ValueError, match="verify"):
        eqsat.optimize(_mod(relay.nn.relu(x)), verify=verify)


def test_an_inconclusive_check_raises_and_only_verify_false_returns_unverified():
    x = relay.var("x", shape=(40000, 40000))  # 6 GiB of tensors: verification cannot run it
    mod = _mod(relay.nn.relu(relay.nn.relu(x)))
    with pytest.raises(eqsat.VerificationError, match="could not be verified"):
        eqsat.optimize(mod, target="ops", rules="simplify")
    res = eqsat.optimize(mod, target="ops", rules="simplify", verify=False)
    assert res.verification is None and "not verified" in res.summary()


def test_the_cli_exits_3_and_writes_nothing_when_verification_fails(tmp_path, capsys, monkeypatch):
    from eqsat.cli import main
    from eqsat.rules.library import RULESETS
    planted = RULESETS["default"] + ruleset("planted", [rule("relu-drop", call("nn.relu", X), X)])
    monkeypatch.setitem(RULESETS, "planted", planted)
    out = tmp_path / "report.json"
    assert main(["optimize", "vgg19", "--small", "--rules", "planted", "--quiet", "--json", str(out)]) == 3
    assert not out.exists() and capsys.readouterr().err.startswith("eqsat: not verified: ")


def test_the_ort_target_is_verified_in_onnx_runtime():
    pytest.importorskip("onnxruntime")
    mod, params = ir.models.get("bert", small=True)
    res = eqsat.optimize(mod, params, target="ort", limits=eqsat.Limits(iterations=4))
    assert res.verification.passed and res.verification.runner == "onnxruntime (optimizer off)"
    assert res.verification.boundaries > 0


# -- property: planted unsound rules, wrong values where a global tolerance does not look ----------

Y, = pvars("y")
_PLANTS = {  # name -> (the unsound rule, the op it makes, the op it removes)
    "constant": (rule("half-as-divide", call("multiply", X, Y),
                      lambda m: relay.divide(m.expr("x"), relay.const(np.float32(1.98)))), "divide", "multiply"),
    "activation": (rule("sigmoid-is-hard", call("sigmoid", X), call("nn.hard_sigmoid", X)), "nn.hard_sigmoid",
                   "sigmoid"),
    "reduction": (rule("mean-as-quarter-sum", call("mean", X),
                       lambda m: relay.multiply(relay.sum(m.expr("x"), axis=0), relay.const(np.float32(0.25)))),
                  "sum", "mean"),
}


def _planted_program(seed: int) -> tuple[str, ir.IRModule, dict]:
    rng = np.random.default_rng(seed)
    plant = ("constant", "activation", "reduction")[seed % 3]
    where = ("slice", "symbolic", "hidden")[(seed // 3) % 3]
    rows = SizeVar("n") if where == "symbolic" or plant == "reduction" else int(rng.integers(1, 4))
    width = int(rng.integers(2, 9))
    x = relay.var("x", shape=(rows, width))
    inner = {"constant": lambda v: relay.multiply(v, relay.const(np.float32(0.5))), "activation": relay.sigmoid,
             "reduction": lambda v: relay.expand_dims(relay.mean(v, axis=0), 0)}[plant](x)
    params: dict = {}
    if where == "hidden":
        head = relay.var("head", shape=(3, width))
        params["head"] = np.zeros((3, width), np.float32)
        return plant, _mod(relay.nn.dense(relay.add(inner, relay.const(np.float32(0.5))), head)), params
    big = relay.add(relay.var("big", shape=(1, 64)), relay.const(np.float32(10.0 ** rng.integers(3, 7))))
    if isinstance(rows, int) or plant == "reduction":
        flat = inner if plant == "reduction" else relay.reshape(inner, (1, -1))
        return plant, _mod(relay.concatenate([flat, big], axis=1)), params
    return plant, _mod(relay.Tuple([inner, big])), params


@pytest.mark.parametrize("seed", range(9))
def test_planted_unsound_rules_are_caught(seed):
    _check_planted(seed)


@pytest.mark.parametrize("seed", [6, 7, 8])
def test_a_wrong_value_inside_is_named_with_the_rules_that_made_it(seed):
    """The outputs hide the planted region (a dense by zeros reads it): its boundary value differs, and
    the report names it with its rule chain, found when the report is written."""
    plant, mod, params = _planted_program(seed)
    wrong, op, avoid = _PLANTS[plant]
    with pytest.raises(eqsat.VerificationError, match=rf"the value of e-class \d+ \([\w.]+, made by {wrong.name}"):
        eqsat.optimize(mod, params, target=Prefers(op, avoid), rules=ruleset("planted", [wrong]))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(9, 100))
def test_planted_unsound_rules_are_caught_on_100_seeds(seed):
    _check_planted(seed)


def _check_planted(seed: int) -> None:
    plant, mod, params = _planted_program(seed)
    wrong, op, avoid = _PLANTS[plant]
    with pytest.raises(eqsat.VerificationError, match=wrong.name):
        eqsat.optimize(mod, params, target=Prefers(op, avoid), rules=ruleset("planted", [wrong]))


@pytest.mark.parametrize("where", ["cpu", "ort"])
def test_the_noise_runs_happen_only_when_a_value_needs_them(monkeypatch, where):
    import eqsat.soundness.inputs as inputs_module
    if where == "ort":
        pytest.importorskip("onnxruntime")
    moved = []
    real = inputs_module.perturb_array
    def counted(value, *args, **kwargs):
        moved.append(np.size(value))
        return real(value, *args, **kwargs)
    monkeypatch.setattr(inputs_module, "perturb_array", counted)
    x = relay.var("x", shape=(4, 8))
    original = ir.IRModule.from_expr(relay.Function([x], relay.multiply(relay.add(x, x), relay.const(np.float32(3)))))
    scaled = ir.IRModule.from_expr(relay.Function([x], relay.multiply(x, relay.const(np.float32(6)))))
    assert eqsat.verify(original, {}, scaled, {}, where=where).passed and moved == []  # agrees to the last bit
    up, down = (relay.const(np.full(8, 1e8, np.float32)) for _ in range(2))  # tensor constants: perturbed apart
    cancel = ir.IRModule.from_expr(relay.Function([x], relay.subtract(relay.add(x, up), down)))
    assert eqsat.verify(cancel, {}, ir.IRModule.from_expr(relay.Function([x], x)), {}, where=where).passed
    assert moved.count(8) == 2  # both constants, one way: (x + 1e8) - 1e8 rounds x away, the noise tells why
    moved.clear()
    kinked = ir.IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.subtract(relay.add(x, up), down))))
    assert eqsat.verify(kinked, {}, ir.IRModule.from_expr(relay.Function([x], relay.nn.relu(x))), {},
                        where=where).passed
    assert moved.count(8) == 4  # relu hides the constants moved one way where they sum below 0: the other way too
