"""Verification in ONNX Runtime feeds the weights to every run (a session would copy them), and the
original's moved twins are runs of its one session fed moved weights; where a session cannot take
its weights as inputs they are handed to it, and a wrong program is caught either way."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from eqsat.errors import VerificationError
from eqsat.soundness import verify as verify_module
from ir import relay

pytest.importorskip("onnxruntime")

WEIGHT = np.random.default_rng(1).standard_normal((64, 32)).astype(np.float32)
"""8 KiB: held outside the exported model (`ir.frontend.to_onnx(external=...)`)."""


def _dense(weight: np.ndarray, spelled: bool = False) -> ir.IRModule:
    """relu(x @ weight.T) - 0.5 * x @ weight.T (`spelled`: plus -0.5 times it, the same bits)."""
    x = relay.var("x", shape=(4, 32))
    y = relay.nn.dense(x, relay.const(weight))
    half = relay.multiply(y, relay.const(np.float32(-0.5 if spelled else 0.5)))
    body = relay.add(relay.nn.relu(y), half) if spelled else relay.subtract(relay.nn.relu(y), half)
    mod = ir.IRModule.from_expr(relay.Function([x], body))
    ir.infer_type(mod)
    return mod


def _sessions(monkeypatch, refuse_fed: bool) -> list[bool]:
    """Whether each session verification makes is handed weights; with `refuse_fed`, a session whose
    weights are to be fed fails to be made (as a kernel that takes its weight at creation would)."""
    handed: list[bool] = []
    real = verify_module.ort_session

    def session(model, *args, external=None, **kwargs):
        handed.append(bool(external))
        if refuse_fed and not external:
            raise RuntimeError("this kernel takes its weight as an initializer")
        return real(model, *args, external=external, **kwargs)
    monkeypatch.setattr(verify_module, "ort_session", session)
    return handed


@pytest.mark.parametrize("refuse_fed", [False, True])
def test_weights_are_fed_or_handed_and_a_wrong_weight_is_caught(monkeypatch, refuse_fed):
    handed = _sessions(monkeypatch, refuse_fed)
    original, same = _dense(WEIGHT), _dense(WEIGHT, spelled=True)
    result = verify_module.verify(original, {}, same, {}, where="ort")
    assert result.passed and result.trials == 3
    assert handed == ([False, True] * 2 if refuse_fed else [False, False])  # one session per program
    wrong = WEIGHT.copy()
    wrong[3, 7] *= np.float32(1.05)
    with pytest.raises(VerificationError, match="output 0"):
        verify_module.verify(original, {}, _dense(wrong, spelled=True), {}, where="ort")


def test_the_moved_runs_feed_moved_weights(monkeypatch):
    fed = []
    real = verify_module.perturbed

    def perturbed(values, *args, **kwargs):
        out = real(values, *args, **kwargs)
        fed.append({name: not np.array_equal(out[name], values[name]) for name in values})
        return out
    monkeypatch.setattr(verify_module, "perturbed", perturbed)
    handed = _sessions(monkeypatch, refuse_fed=False)
    x = relay.var("x", shape=(4, 32))
    y = relay.nn.dense(x, relay.const(WEIGHT))
    cancel = ir.IRModule.from_expr(relay.Function([x], relay.subtract(relay.add(y, relay.const(np.float32(1e6))),
                                                                     relay.const(np.float32(1e6)))))
    assert verify_module.verify(cancel, {}, ir.IRModule.from_expr(relay.Function([x], y)), {}, where="ort").passed
    assert handed == [False, False]  # the moved runs made no session of their own
    weights = [moved for moved in fed if len(moved) > 1 or "x" not in moved]  # the original's, not an input set
    assert weights and all(all(moved.values()) for moved in weights)
