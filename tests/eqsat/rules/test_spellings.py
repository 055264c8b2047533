"""Spelling invariance: every exporter's spelling of a family optimizes to its canonical spelling's program.

For each spelling of `benchmarks.spellings` (small sizes): it computes what the canonical spelling
computes in ONNX Runtime (a check of the suite itself); optimized for the ort target, its op
histogram is the canonical spelling's, fused op included; and the optimized program, exported
with ONNX Runtime's contrib ops, computes the same values there.
"""

from __future__ import annotations

from functools import cache

import onnx
import pytest

import eqsat
import ir
from benchmarks.bench_spellings import optimize_spelling, ort_session, reaches_fused
from benchmarks.bench_strategies import relative_error
from benchmarks.spellings import FAMILIES, Unavailable, builder, model_inputs, spelling_ids

#: spellings that do not reach their family's fused program yet (id -> why); when one starts to,
#: its test fails until the entry is removed
KNOWN_MISSES: dict[str, str] = {
    "softmax/unshifted": "exp(x) / sum(exp(x)) overflows where softmax does not (x = 100 gives NaN), so it is "
                         "not equal to softmax and no rule may claim it is",
}

TOLERANCE = 1e-4
SPELLINGS = spelling_ids()


@cache
def _model(spelling_id: str) -> onnx.ModelProto:
    try:
        return builder(spelling_id)("small")
    except Unavailable as why:
        pytest.skip(str(why))


@cache
def _optimized(spelling_id: str) -> eqsat.Optimized:
    return optimize_spelling(_model(spelling_id))


def _run(model: onnx.ModelProto, optimize: bool = False) -> tuple:
    return tuple(ort_session(model, optimize).run(None, model_inputs(model)))


def _canonical(spelling_id: str) -> str:
    return f"{spelling_id.split('/')[0]}/canonical"


@pytest.mark.parametrize("spelling_id", [s for s in SPELLINGS if not s.endswith("/canonical")])
def test_spelling_computes_the_canonical_function(spelling_id):
    reference = _run(_model(_canonical(spelling_id)))
    assert relative_error(_run(_model(spelling_id)), list(reference)) < TOLERANCE


@pytest.mark.parametrize("spelling_id", SPELLINGS)
def test_spelling_reaches_the_fused_program(spelling_id):
    family = FAMILIES[spelling_id.split("/")[0]]
    ops = _optimized(spelling_id).op_counts_after
    canonical = _optimized(_canonical(spelling_id)).op_counts_after
    reached = reaches_fused(family, ops, canonical)
    if spelling_id in KNOWN_MISSES:
        assert not reached, f"{spelling_id} now reaches {dict(ops)}: remove it from KNOWN_MISSES"
    else:
        assert reached, f"{spelling_id} optimizes to {dict(ops)}, the canonical spelling to {dict(canonical)}"


@pytest.mark.parametrize("spelling_id", SPELLINGS)
def test_optimized_program_runs_in_onnx_runtime(spelling_id):
    res = _optimized(spelling_id)
    exported = ir.frontend.to_onnx(res.mod, res.params, contrib=True)
    reference = _run(_model(_canonical(spelling_id)))
    assert relative_error(_run(exported), list(reference)) < TOLERANCE


def test_known_misses_name_spellings_of_the_suite():
    assert set(KNOWN_MISSES) <= set(SPELLINGS)
    assert all(reason.strip() and "\n" not in reason for reason in KNOWN_MISSES.values())
