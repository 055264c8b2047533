"""Batch norm folding: after a convolution by a constant weight it folds into the weight by one path
(`fold-batch-norm-into-conv`), not also through the affine form; elsewhere it becomes the affine form."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat
import ir
from eqsat.rules.library.folding import FOLDING, _bn, _conv
from ir import relay
from strategies.interpreter import evaluate


@pytest.mark.parametrize("weight, folded, affine", [
    (None, 1, 0),                                    # a constant weight: folded into it, one path only
    (relay.var("w", shape=(4, 3, 3, 3)), 0, 1),      # a weight known only at run time: the affine form
])
def test_a_batch_norm_after_a_conv_folds_by_one_path(weight, folded, affine):
    expr = _bn(_conv(weight), 4)
    mod = ir.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr))
    res = eqsat.optimize(mod, target="cpu", rules=FOLDING)
    applied = res.report.applied_per_rule
    assert applied.get("fold-batch-norm-into-conv", 0) == folded
    assert applied.get("batch-norm-to-affine", 0) == affine
    inputs = {p.name_hint: np.random.default_rng(0).standard_normal([int(d) for d in p.checked_type.shape])
              .astype("float32") for p in mod["main"].params}
    np.testing.assert_allclose(np.asarray(evaluate(res.mod, inputs, res.params)), np.asarray(evaluate(mod, inputs)),
                               rtol=1e-5, atol=1e-5)
