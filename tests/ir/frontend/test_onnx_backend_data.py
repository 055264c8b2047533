"""ONNX's own backend test data, walked: every model in `onnx/backend/test/data/{pytorch-converted,
pytorch-operator,simple}` imports, runs on the executor and matches its stored outputs (within
1e-3 of the largest expected magnitude); a passing model also goes through
`eqsat.optimize(target="ort")` and `to_onnx(contrib=True)` and must match again in ONNX Runtime.

Models using sequence ops, the training domain or string tensors are left out (pytest reports them
as skipped, with the reason). The cases that do not pass yet are listed in `EXPECTED_FAILURES`
with the reason; the list is strict, so a case that starts passing fails until it is removed.
`python -m benchmarks.onnx_backend_status` runs every case and prints the list anew.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

import numpy as np
import onnx
import pytest

import eqsat
import strategies
from ir.frontend import from_onnx, to_onnx
from tests.ir.frontend.ort_helpers import flat_outputs, run_ort

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
SUITES = ("pytorch-converted", "pytorch-operator", "simple")
#: outputs match when max |actual - expected| <= TOLERANCE * max(1, max |expected|)
TOLERANCE = 1e-3

_SEQUENCE_OPS = {"SequenceConstruct", "SequenceAt", "SequenceEmpty", "SequenceErase", "SequenceInsert",
                 "SequenceLength", "SequenceMap", "SplitToSequence", "ConcatFromSequence"}
_TRAINING_DOMAIN = "ai.onnx.preview.training"


def case_dirs() -> list[str]:
    """Every case folder (one model.onnx and test_data_set_0), as 'suite/name'."""
    found = []
    for suite in SUITES:
        for path in sorted(glob.glob(os.path.join(DATA, suite, "*", "model.onnx"))):
            found.append(os.path.relpath(os.path.dirname(path), DATA))
    return found


def left_out(model: onnx.ModelProto) -> str | None:
    """Why `model` is outside this walk (sequences, training, strings), or None."""
    nodes = list(model.graph.node)
    if any(n.op_type in _SEQUENCE_OPS for n in nodes) or any(
            v.type.HasField("sequence_type") for v in (*model.graph.input, *model.graph.output)):
        return "uses sequences"
    if any(x.domain == _TRAINING_DOMAIN for x in (*nodes, *model.opset_import)):
        return "uses the training domain"
    tensors = [v.type.tensor_type.elem_type for v in (*model.graph.input, *model.graph.output)]
    tensors += [t.data_type for t in model.graph.initializer]
    if onnx.TensorProto.STRING in tensors:
        return "uses string tensors"
    return None


def _read(pattern: str) -> list[np.ndarray]:
    arrays = []
    for path in sorted(glob.glob(pattern), key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0])):
        tensor = onnx.TensorProto()
        with open(path, "rb") as file:
            tensor.ParseFromString(file.read())
        arrays.append(onnx.numpy_helper.to_array(tensor))
    return arrays


def mismatch(expected: list[np.ndarray], actual: list[np.ndarray]) -> str | None:
    """What differs between stored and computed outputs, or None when they match."""
    if len(expected) != len(actual):
        return f"{len(actual)} outputs, {len(expected)} expected"
    for i, (want, got) in enumerate(zip(expected, actual)):
        got = np.asarray(got)
        if want.shape != got.shape:
            return f"output {i} has shape {got.shape}, expected {want.shape}"
        if want.dtype.kind in "biu" or want.dtype == bool:
            if not np.array_equal(want, got):
                return f"output {i} differs"
            continue
        scale = max(1.0, float(np.nanmax(np.abs(want)))) if want.size else 1.0
        diff = float(np.nanmax(np.abs(want.astype(np.float64) - got.astype(np.float64)))) if want.size else 0.0
        if not np.array_equal(np.isnan(want), np.isnan(got)) or diff > TOLERANCE * scale:
            return f"output {i} differs by {diff:.3g} (scale {scale:.3g})"
    return None


@dataclass
class Outcome:
    """How one case went: `stage` is 'pass' or where it failed (import, run, compare, optimize, export)."""

    stage: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.stage == "pass"


def check_case(case: str) -> Outcome:
    """Import, run and compare one case; when that passes, optimize for ort, export and compare again."""
    folder = os.path.join(DATA, case)
    inputs, expected = (_read(os.path.join(folder, "test_data_set_0", f"{kind}_*.pb")) for kind in ("input", "output"))
    stage = "import"
    try:
        mod, params = from_onnx(os.path.join(folder, "model.onnx"))
        stage = "run"
        names = [p.name_hint for p in mod["main"].params if p.name_hint not in params]
        feed = dict(zip(names, inputs))
        got = flat_outputs(strategies.build(mod, "cpu", params).run(**feed))
        if (problem := mismatch(expected, got)) is not None:
            return Outcome("compare", problem)
        stage = "optimize"
        optimized = eqsat.optimize(mod, params, target="ort")
        stage = "export"
        exported = to_onnx(optimized.mod, optimized.params, contrib=True)
        if (problem := mismatch(expected, run_ort(exported, feed))) is not None:
            return Outcome("export", f"optimized in ONNX Runtime: {problem}")
    except Exception as err:  # noqa: BLE001 (the outcome records any failure with its stage)
        return Outcome(stage, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:200])
    return Outcome("pass")


#: case -> why it fails today (the stage and the first line of the error); regenerate with
#: `python -m benchmarks.onnx_backend_status`
EXPECTED_FAILURES: dict[str, str] = {}


@pytest.mark.parametrize("case", case_dirs())
def test_backend_case(case):
    model = onnx.load(os.path.join(DATA, case, "model.onnx"), load_external_data=False)
    if (reason := left_out(model)) is not None:
        pytest.skip(reason)
    outcome = check_case(case)
    if case in EXPECTED_FAILURES:
        if outcome.passed:
            pytest.fail(f"{case} passes now: remove it from EXPECTED_FAILURES")
        pytest.xfail(EXPECTED_FAILURES[case])
    assert outcome.passed, f"{case} fails at {outcome.stage}: {outcome.detail}"
