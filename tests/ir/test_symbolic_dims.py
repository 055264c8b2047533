"""Dimension arithmetic on size variables, and the type relations of common ops over symbolic dims."""

from __future__ import annotations

import pytest

import ir
from ir import relay
from ir.types import Any, DimExpr, FloorDiv, MinDim, SizeVar, dim_min, dim_value

N, S = SizeVar("N"), SizeVar("S")


@pytest.mark.parametrize("dim, expected", [
    (N * 2048, "N*2048"),
    (N * 2048 // 2048, "N"),
    (N // 2, "N // 2"),
    (N * S * 4 // (S * 2), "N*2"),
    ((N * S + N) // N, "S + 1"),
    (N * 2 + 3 - N, "N + 3"),
    (1 - N * S, "-N*S + 1"),
    ((N - 2) // 2 + 1, "(N - 2) // 2 + 1"),
    (4 * N / 2, "N*2"),  # sizes are integers: / is floor division
])
def test_dimension_arithmetic_simplifies(dim, expected):
    assert str(dim) == expected


def test_simplified_results_are_plain_values():
    assert N - N == 0 and isinstance(N - N, int)
    assert N * 3 // 3 == N and isinstance(N * 3 // 3, SizeVar)
    assert isinstance(N * S, DimExpr) and isinstance(N // 3, FloorDiv)
    assert N * S == S * N and hash(N * S) == hash(S * N)


def test_ordering_decides_what_every_size_agrees_on():
    """A size variable is at least 1, a floor division at least 0; anything else is undecided."""
    assert N >= 1 and N > 0 and N * 2 > N and not N < 1 and max(N, 1) == N and N // 2 >= 0
    for undecided in (lambda: N > 3, lambda: N // 2 >= 1, lambda: N < S):
        with pytest.raises(TypeError, match="depends on the sizes"):
            undecided()


def infer(expr: ir.Expr) -> str:
    return str(ir.infer_type(expr).checked_type)


def v(name: str, *shape) -> ir.Var:
    return relay.var(name, shape=shape)


@pytest.mark.parametrize("build, expected", [
    (lambda: relay.add(v("a", N, S, 16), v("b", 1, S, 1)), "(N, S, 16)"),
    (lambda: relay.nn.conv2d(v("x", N * 2, 3, 8, 8), v("w", 4, 3, 3, 3), padding=1), "(N*2, 4, 8, 8)"),
    (lambda: relay.nn.conv2d(v("x", 1, 3, S, S), v("w", 4, 3, 3, 3)), "(1, 4, S - 2, S - 2)"),
    (lambda: relay.nn.max_pool2d(v("x", N, 3, S, 8), pool_size=(2, 2), strides=(2, 2)), "(N, 3, (S - 2) // 2 + 1, 4)"),
    (lambda: relay.nn.dense(v("x", N, S, 16), v("w", 32, 16)), "(N, S, 32)"),
    (lambda: relay.nn.batch_matmul(v("a", N, S, 16), v("b", N, S, 16)), "(N, S, S)"),
    (lambda: relay.reshape(v("x", N, 8, 4, 4), [0, -1]), "(N, 128)"),
    (lambda: relay.reshape(v("x", N, S, 16), [-1, 16]), "(N*S, 16)"),
    (lambda: relay.transpose(v("x", N, S, 16), [1, 0, 2]), "(S, N, 16)"),
    (lambda: relay.sum(v("x", N, S, 16), axis=[1]), "(N, 16)"),
    (lambda: relay.concatenate([v("a", N, 3), v("b", N * 2, 3)], axis=0), "(N*3, 3)"),
    (lambda: relay.nn.softmax(v("x", N, S, 16)), "(N, S, 16)"),
    (lambda: relay.nn.layer_norm(v("x", N, S, 16), v("g", 16), v("b", 16)), "(N, S, 16)"),
    (lambda: relay.strided_slice(v("x", N, 4), [1], [2**31 - 1], axes=[0]), "(N - 1, 4)"),
    (lambda: relay.strided_slice(v("x", N, 4), [-3], [2**63 - 1], axes=[0]), "(min(N, 3), 4)"),
    (lambda: relay.strided_slice(v("x", N, 4), [0], [512], axes=[0]), "(min(N, 512), 4)"),
    (lambda: relay.strided_slice(v("x", N, 4), [0], [1], axes=[0]), "(1, 4)"),
    (lambda: relay.strided_slice(v("x", N, 4), [1], [3], axes=[0]), "(?, 4)"),
    (lambda: relay.concatenate([relay.strided_slice(v("p", N, 1, S, 16), [-3], [2**63 - 1], axes=[2]),
                                v("k", N, 1, 1, 16)], axis=2), "(N, 1, min(S, 3) + 1, 16)"),
    (lambda: relay.nn.pad(v("x", N, 3, S, 8), ((0, 0), (0, 0), (1, 1), (2, 2))), "(N, 3, S + 2, 12)"),
    (lambda: relay.nn.batch_flatten(v("x", N, 3, S, 8)), "(N, S*24)"),
])
def test_relations_keep_symbolic_dims(build, expected):
    assert infer(build()) == f"Tensor[{expected}, float32]"


def test_a_minimum_is_a_dimension_only_where_the_sizes_decide_which():
    """`dim_min` is the smaller where every size agrees, a `MinDim` otherwise; it is at least the least
    its arguments take, and sized as the smaller of theirs."""
    assert dim_min(N, N + 2) == N and dim_min(N, 1) == 1 and dim_min(3, 5) == 3 and dim_min(N, N) == N
    clipped = dim_min(S, 512)
    assert isinstance(clipped, MinDim) and str(clipped) == "min(S, 512)" and dim_min(512, S) == clipped
    assert clipped >= 1 and clipped + N > N and str(clipped + N) == "N + min(S, 512)"
    with pytest.raises(TypeError, match="depends on the sizes"):
        _ = clipped > 3
    assert dim_value(clipped, 7) == 7 and dim_value(clipped, 700) == 512
    assert dim_value(dim_min(S, 3) + N, 5, {"S": 2}) == 7


def test_reshape_to_a_size_that_does_not_divide_is_unknown():
    assert infer(relay.reshape(v("x", N, 3), [2, -1])) == "Tensor[(2, ?), float32]"


def test_dim_value_takes_every_size_variable_as_one_size():
    n, s = SizeVar("N"), SizeVar("S")
    assert dim_value(n * 2048, 4) == 8192
    assert dim_value((n - 2) // 2 + 1, 10) == 5
    assert dim_value(n * s + 1, 3) == 10
    assert dim_value(Any, 7) == 7 and dim_value(5, 7) == 5
