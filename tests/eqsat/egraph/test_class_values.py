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


def test_run_time_bounds_and_targets_that_evaluate_type_slices_and_expands():
    """BERT's dynamo export: the first `seq` positions of a 512-long table are `min(seq, 512)` long,
    expanded to `(batch, seq)` they are `(batch, seq)` (where the two broadcast at all); a slice from
    the end by a run-time bound stays unknown."""
    import numpy as np

    ids = relay.var("ids", shape=(ir.SizeVar("batch"), ir.SizeVar("seq")), dtype="int64")
    shape = relay.shape_of(ids)
    length = relay.reshape(relay.take(shape, relay.const(1, "int64"), axis=0), newshape=[1])
    batch = relay.reshape(relay.take(shape, relay.const(0, "int64"), axis=0), newshape=[1])
    table = relay.const(np.arange(512, dtype=np.int64).reshape(1, 512))
    ints = lambda *v: relay.const(np.array(v, dtype=np.int64))  # noqa: E731
    first = relay.dyn.strided_slice(table, ints(0), length, ints(1), axes=[1])
    tail = relay.dyn.strided_slice(table, relay.negative(length), ints(2**62), ints(1), axes=[1])
    expanded = relay.dyn.expand(first, relay.concatenate([batch, length], axis=0))
    low = lower(ir.infer_type(relay.Tuple([relay.cast(expanded, "float32"), tail, first])))
    egraph = low.egraph
    egraph.refresh()
    types = [egraph.type_of(add_expr(egraph, ir.infer_type(e))) for e in (expanded, first, tail)]
    assert [str(t) for t in types] == ["Tensor[(batch, seq), int64]", "Tensor[(1, min(seq, 512)), int64]",
                                       "Tensor[(1, ?), int64]"]


def test_a_run_time_end_that_may_count_from_the_end_leaves_the_length_unknown():
    """`seq - 600` may be negative, which ONNX's Slice reads from the end: no length; `seq + 1` is a size."""
    import numpy as np

    ids = relay.var("ids", shape=(ir.SizeVar("batch"), ir.SizeVar("seq")), dtype="int64")
    length = relay.reshape(relay.take(relay.shape_of(ids), relay.const(1, "int64"), axis=0), newshape=[1])
    table = relay.const(np.zeros((1, 512), np.float32))
    ints = lambda *v: relay.const(np.array(v, dtype=np.int64))  # noqa: E731
    slices = [relay.dyn.strided_slice(table, ints(0), relay.add(length, ints(shift)), ints(1), axes=[1])
              for shift in (-600, 1)]
    low = lower(ir.infer_type(relay.Tuple(slices)))
    low.egraph.refresh()
    types = [str(low.egraph.type_of(add_expr(low.egraph, ir.infer_type(e)))) for e in slices]
    assert types == ["Tensor[(1, ?), float32]", "Tensor[(1, min(seq + 1, 512)), float32]"]
