"""Class types refine from their e-nodes' relations (`eqsat.egraph.class_values`)."""

from __future__ import annotations

import ir
from ir import relay
from ir.types import AnyDim

from eqsat.egraph.egraph import Merge
from eqsat.egraph.lower import add_expr, lower


def test_a_class_takes_the_shape_a_new_enode_proves_and_its_users_follow():
    x = relay.var("x", shape=(3, 4))
    target = relay.var("t", shape=(2,), dtype="int64")
    runtime = relay.dyn.reshape(x, target)  # (?, ?) at import: the target is a run-time value
    low = lower(ir.infer_type(relay.transpose(relay.exp(runtime), [1, 0])))
    egraph = low.egraph
    assert all(isinstance(d, AnyDim) for d in egraph.type_of(low.root).shape)
    known = add_expr(egraph, ir.infer_type(relay.reshape(x, [2, 6])))
    egraph.union(add_expr(egraph, ir.infer_type(runtime)), known)
    egraph.refresh()
    assert tuple(egraph.type_of(low.root).shape) == (6, 2)  # two classes up from the merge


def test_a_relation_that_disagrees_never_changes_a_known_dimension():
    x = relay.var("x", shape=(3, 4))
    target = relay.var("t", shape=(2,), dtype="int64")
    runtime = relay.dyn.reshape(x, target)
    low = lower(ir.infer_type(relay.exp(runtime)))
    egraph = low.egraph
    egraph.union(add_expr(egraph, ir.infer_type(runtime)), add_expr(egraph, ir.infer_type(relay.reshape(x, [12, 1]))))
    egraph.refresh()
    assert tuple(egraph.type_of(low.root).shape) == (12, 1)
    # a form of other sizes is refused by the union's type check, and the class keeps (12, 1)
    other = add_expr(egraph, ir.infer_type(relay.exp(relay.reshape(x, [6, 2]))))
    assert egraph.union(low.root, other) is Merge.TYPE_MISMATCH
    egraph.refresh()
    assert tuple(egraph.type_of(low.root).shape) == (12, 1)
