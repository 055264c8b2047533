"""`optimize` and `compare` share one pipeline: the same rules, extraction and verification per target."""

from __future__ import annotations

import pytest

import eqsat
import ir


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
