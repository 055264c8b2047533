"""Every registered op: IR -> ONNX -> ONNX Runtime, against numpy, the reference interpreter, and
the program re-imported and re-exported (`to_onnx(from_onnx(to_onnx(program)))`)."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay
from ir.frontend import from_onnx, to_onnx
from ir.frontend.export_context import EMITTERS
from tests.ir.frontend.op_cases import CASES, Case
from strategies.interpreter import evaluate
from tests.ir.frontend.ort_helpers import assert_outputs_close, flat_outputs, random_value, run_ort


def _ops_in(expr: ir.Expr) -> set[str]:
    return {n.op.name for n in ir.post_order(expr) if isinstance(n, ir.Call) and isinstance(n.op, ir.Op)}


def _program(case: Case) -> tuple[ir.IRModule, dict[str, np.ndarray]]:
    params = [relay.var(name, shape=shape, dtype=dtype) for name, (shape, dtype, _) in case.inputs.items()]
    mod = ir.infer_type(ir.IRModule({"main": relay.Function(params, case.build(*params))}))
    rng = np.random.default_rng(0)
    inputs = {p.name_hint: random_value(p.type_annotation, rng, kind) for p, (_, _, kind) in
              zip(params, case.inputs.values())}
    return mod, inputs


def test_every_registered_op_has_an_emitter_and_a_case():
    assert set(ir.list_ops()) <= set(EMITTERS)
    covered = set().union(*(_ops_in(_program(case)[0]["main"]) for case in CASES))
    assert set(ir.list_ops()) - covered == set()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op_roundtrip(case: Case):
    mod, inputs = _program(case)
    model = to_onnx(mod)
    outputs = run_ort(model, inputs)
    expected_types = mod["main"].body.checked_type
    expected_types = expected_types.fields if isinstance(expected_types, ir.TupleType) else (expected_types,)
    assert [o.dtype.name for o in outputs] == [t.dtype for t in expected_types]
    assert [o.shape for o in outputs] == [t.concrete_shape for t in expected_types]

    reimported, params = from_onnx(model)
    assert params == {}
    assert_outputs_close(outputs, run_ort(to_onnx(reimported), inputs), rel=1e-6)

    if case.ref is not None:
        expected = [np.asarray(e).astype(o.dtype) for e, o in zip(flat_outputs(case.ref(*inputs.values())), outputs)]
        assert_outputs_close(expected, outputs, rel=1e-5)
    assert_outputs_close(flat_outputs(evaluate(mod, inputs)), outputs, rel=1e-5)
