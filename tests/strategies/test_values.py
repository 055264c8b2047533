"""One generator of random values: each kind's floats, integers and booleans, seeded and per dtype."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from strategies.values import VALUE_KINDS, random_tensor, random_value, special_values


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "uint8", "bool"])
@pytest.mark.parametrize("kind", VALUE_KINDS)
def test_each_kind_draws_seeded_values_of_the_dtype(kind, dtype):
    a = random_tensor(np.random.default_rng(7), (6, 50), dtype, kind)
    b = random_tensor(np.random.default_rng(7), (6, 50), dtype, kind)
    assert a.shape == (6, 50) and str(a.dtype) == dtype
    assert a.tobytes() == b.tobytes()
    assert len(np.unique(a.astype("float64"))) > 1


def test_the_kinds_differ_where_their_table_says():
    rng = np.random.default_rng(0)
    edge = random_tensor(rng, (400,), "float32", "edge")
    assert np.signbit(edge[edge == 0]).any() and (~np.signbit(edge[edge == 0])).any()
    assert (np.abs(edge[edge != 0]) < np.finfo(np.float32).tiny).any()
    nonfinite = random_tensor(rng, (400,), "float32", "nonfinite")
    assert np.isnan(nonfinite).any() and np.isposinf(nonfinite).any() and np.isneginf(nonfinite).any()
    assert np.abs(random_tensor(rng, (400,), "float32", "small")).max() < 0.01
    assert set(np.unique(random_tensor(rng, (400,), "int64", "index"))) == {0, 1}
    assert set(np.unique(random_tensor(rng, (400,), "int64", "normal"))) <= set(range(10))
    wide = random_tensor(rng, (400,), "int8", "edge")
    assert {-128, 127, 0, 1, -1} <= set(wide.tolist())
    with pytest.raises(ValueError, match="unknown value kind"):
        random_tensor(rng, (2,), "float32", "typical")


def test_a_tuple_type_gets_a_tuple_and_special_values_cover_each_dtype():
    ty = ir.TupleType([ir.TensorType((2, 3), "float32"), ir.TensorType((4,), "int32")])
    value = random_value(ty, np.random.default_rng(0))
    assert [v.shape for v in value] == [(2, 3), (4,)] and value[1].dtype == np.int32
    floats = special_values("float16", extreme=True)
    assert np.isnan(floats).any() and np.isinf(floats).any() and (floats == np.finfo(np.float16).max).any()
    assert 2 ** 53 + 1 in special_values("int64").tolist() and 255 in special_values("uint8").tolist()
