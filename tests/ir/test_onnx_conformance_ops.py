"""Type relations and attribute checks of the ONNX conformance ops: each bad input raises the IR's typed
error naming the op and the culprit."""

from __future__ import annotations

import pytest

import ir
from ir import relay
from ir.errors import AttrsError, TypeInferenceError


def v(shape, dtype="float32", name="x"):
    return relay.var(name, shape=shape, dtype=dtype)


def infer(expr):
    return ir.infer_type(expr).checked_type


IMG = (1, 4, 8, 8)
I64 = "int64"

GOOD = [
    (lambda: relay.nn.prelu(v((2, 3, 5)), v((5,), name="a"), axis=-1), "Tensor[(2, 3, 5), float32]"),
    (lambda: relay.gather(v((4, 5)), v((4, 2), I64, "i"), axis=1), "Tensor[(4, 2), float32]"),
    (lambda: relay.scatter_nd(v((4, 5)), v((2,), I64, "i"), v((), name="u")), "Tensor[(4, 5), float32]"),
    (lambda: relay.one_hot(v((), I64, "i"), relay.const(1.0), relay.const(0.0), 3), "Tensor[(3,), float32]"),
    (lambda: relay.topk(v((3, 5)), 0, ret_type="values"), "Tensor[(3, 5), float32]"),
    (lambda: relay.topk(v((3, 5)), 2, axis=0, ret_type="indices"), "Tensor[(2, 5), int32]"),
    (lambda: relay.tile(v((2, 3)), (0, 2)), "Tensor[(0, 6), float32]"),
    (lambda: relay.tile(v(("n", 3)), (1, 2)), "Tensor[(n, 6), float32]"),
    (lambda: relay.cumsum(v(("n", 3)), axis=None), "Tensor[(?,), float32]"),
    (lambda: relay.argmax(v(IMG), axis=1, select_last_index=True), "Tensor[(1, 8, 8), int32]"),
]


@pytest.mark.parametrize("build, expected", GOOD, ids=[e for _, e in GOOD])
def test_type_relation(build, expected):
    assert str(infer(build())) == expected


BAD = [
    ("nn.elu", lambda: relay.nn.elu(v(IMG, "int32")), "floating-point"),
    ("nn.shrink", lambda: relay.nn.shrink(v(IMG, "bool")), "numeric"),
    ("nn.prelu", lambda: relay.nn.prelu(v(IMG), v((8,), name="a")), "length 4"),
    ("nn.prelu", lambda: relay.nn.prelu(v(IMG), v((4, 1), name="a")), "must be 1-D"),
    ("nn.prelu", lambda: relay.nn.prelu(v(IMG), v((4,), name="a"), axis=4), "axis 4 is out of range"),
    ("nn.prelu", lambda: relay.nn.prelu(v(IMG), v((4,), "float16", "a")), "one dtype"),
    ("nn.instance_norm", lambda: relay.nn.instance_norm(v((2, 3)), v((3,), name="g"), v((3,), name="b")),
     "spatial axis"),
    ("nn.instance_norm", lambda: relay.nn.instance_norm(v(IMG), v((1,), name="g"), v((1,), name="b"), axis=0),
     "batch axis"),
    ("nn.instance_norm", lambda: relay.nn.instance_norm(v(IMG), v((4,), name="g"), v((5,), name="b")), "beta"),
    ("floor_mod", lambda: relay.floor_mod(v((2, 3), I64), v((2,), I64, "y")), "dimension 1 is 3 vs 2"),
    ("gather", lambda: relay.gather(v((4, 5)), v((4,), I64, "i")), "rank"),
    ("gather", lambda: relay.gather(v((4, 5)), v((2, 6), I64, "i")), "dimension 1 of indices"),
    ("gather", lambda: relay.gather(v((4, 5)), v((2, 5), "float32", "i")), "int32 or int64"),
    ("gather", lambda: relay.gather(v((4, 5)), v((2, 5), I64, "i"), axis=2), "axis 2 is out of range"),
    ("scatter_nd", lambda: relay.scatter_nd(v((4, 5)), v((3, 2), I64, "i"), v((2,), name="u")), "index 3 axes"),
    ("scatter_nd", lambda: relay.scatter_nd(v((4, 5)), v((1, 2), I64, "i"), v((2, 4), name="u")), "(2, 5)"),
    ("scatter_nd", lambda: relay.scatter_nd(v((4, 5)), v((1, 2), I64, "i"), v((2, 5), I64, "u")), "one dtype"),
    ("one_hot", lambda: relay.one_hot(v((2,), "float32", "i"), relay.const(1.0), relay.const(0.0), 3), "int32"),
    ("one_hot", lambda: relay.one_hot(v((2,), I64, "i"), relay.const([1.0]), relay.const(0.0), 3), "scalar"),
    ("one_hot", lambda: relay.one_hot(v((2,), I64, "i"), relay.const(1.0), relay.const(0.0), 3, dtype="int8"),
     "output dtype int8"),
    ("one_hot", lambda: relay.one_hot(v((2,), I64, "i"), relay.const(1.0), relay.const(0.0), 3, axis=-3),
     "axis -3 is out of range"),
    ("cumsum", lambda: relay.cumsum(v((2, 3)), axis=2), "axis 2 is out of range"),
    ("cumsum", lambda: relay.cumsum(v((2, 3), "bool")), "numeric"),
    ("reverse", lambda: relay.reverse(v((2, 3)), axis=-3), "out of range"),
    ("topk", lambda: relay.topk(v((2, 3)), 4), "k = 4 is more than the 3 elements"),
    ("topk", lambda: relay.topk(v(()), 1), "scalar"),
    ("cumsum", lambda: relay.cumsum(v(()), axis=0), "scalar"),
    ("reverse", lambda: relay.reverse(v(()), axis=0), "scalar"),
    ("nn.prelu", lambda: relay.nn.prelu(v(()), v((1,), name="a"), axis=0), "scalar"),
    ("topk", lambda: relay.topk(v((2, 3)), 1, dtype="float32"), "int32 or int64"),
    ("trilu", lambda: relay.trilu(v((3,))), "matrix"),
    ("arange", lambda: relay.arange(v((), I64, "a"), v((), I64, "b"), v((2,), I64, "c"), dtype="int64"),
     "step Tensor[(2,), int64] must be a scalar"),
    ("arange", lambda: relay.arange(v((), I64, "a"), v((), I64, "b"), v((), I64, "c")), "dtype float32"),
    ("shape_of", lambda: relay.shape_of(v((2, 3)), dtype="float32"), "int32 or int64, not float32"),
    ("argwhere", lambda: relay.argwhere(v(())), "rank 1 or more"),
    ("dyn.reshape", lambda: relay.dyn.reshape(v((2, 3)), v((2,), name="s")), "1-D int32 or int64"),
    ("dyn.expand", lambda: relay.dyn.expand(v((2, 3)), v((relay.SizeVar("k"),), I64, "s")), "static length"),
    ("dyn.strided_slice", lambda: relay.dyn.strided_slice(v((2, 3)), *(v((2,), I64, n) for n in "bes"), axes=[0]),
     "one entry per sliced axis"),
    ("dyn.strided_slice", lambda: relay.dyn.strided_slice(v((2, 3)), *(v((2,), I64, n) for n in "bes"),
                                                          axes=[1, -1]), "distinct axes"),
]


@pytest.mark.parametrize("op, build, fragment", BAD, ids=[f"{op}:{frag}" for op, _, frag in BAD])
def test_ill_typed_call_names_op_and_culprit(op, build, fragment):
    with pytest.raises(TypeInferenceError) as err:
        infer(build())
    assert str(err.value).startswith(f"{op}:") and fragment in str(err.value), str(err.value)


BAD_ATTRS = [
    (lambda: relay.nn.celu(v(IMG), alpha=0.0), "'alpha': must not be 0"),
    (lambda: relay.nn.shrink(v(IMG), lambd=-1.0), "'lambd': must not be negative"),
    (lambda: relay.tile(v(IMG), (1, -2)), "repeats must not be negative"),
    (lambda: relay.tile(v(IMG), 2), "'reps' must be a list of ints"),
    (lambda: relay.one_hot(v((2,), I64, "i"), relay.const(1.0), relay.const(0.0), 0), "'depth': must be at least 1"),
    (lambda: relay.scatter_nd(v((4,)), v((1, 1), I64, "i"), v((1,), name="u"), mode="sum"), "'mode' must be one of"),
    (lambda: relay.topk(v((2, 3)), 1, ret_type="pairs"), "'ret_type' must be one of"),
    (lambda: relay.trilu(v((2, 3)), k=0.5), "'k' must be an int"),
    (lambda: relay.argmin(v((2, 3)), select_last_index="yes"), "'select_last_index' must be a bool"),
    (lambda: relay.dyn.strided_slice(v((2, 3)), *(v((1,), I64, n) for n in "bes"), axes=0), "'axes' must be a list"),
    (lambda: relay.dyn.reshape(v((2, 3)), v((2,), I64, "s"), allowzero="no"), "'allowzero' must be a bool"),
]


@pytest.mark.parametrize("build, fragment", BAD_ATTRS, ids=[f for _, f in BAD_ATTRS])
def test_bad_attribute_raises_attrs_error(build, fragment):
    with pytest.raises(AttrsError, match=fragment.replace("(", r"\(")):
        build()
