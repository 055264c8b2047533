"""The same result on every machine: default limits stop saturation by counts, so a loaded machine
extracts the program a quiet one does (the time limit is a safety net it does not reach)."""

from __future__ import annotations

import multiprocessing

import pytest

import eqsat
import ir


def _spin() -> None:
    """Busy until terminated: a CPU hog."""
    while True:
        pass


def _program(model: str, target: str) -> bytes:
    mod, params = ir.models.get(model, small=True)
    res = eqsat.optimize(mod, params, target=target)
    assert res.report.stop_reason is not eqsat.StopReason.TIME_LIMIT
    return ir.frontend.to_onnx(res.mod, res.params, contrib=target == "ort").SerializeToString()


@pytest.mark.parametrize("model, target", [("resnet50", "ort"), ("bert", "ort"), ("inception_v3", "cpu")])
def test_a_cpu_hog_does_not_change_the_program(model, target):
    pytest.importorskip("onnx")
    quiet = _program(model, target)
    hogs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(4)]
    for h in hogs:
        h.start()
    try:
        loaded = _program(model, target)
    finally:
        for h in hogs:
            h.terminate()
            h.join()
    assert loaded == quiet
