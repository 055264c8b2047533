"""Reference kernels of the ONNX conformance ops against loops over every element (Python math only)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from strategies.errors import KernelError

from .test_reference import run

RNG = np.random.default_rng(11)


def floats(*shape, dtype="float64", scale=2.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def small_ints(*shape, dtype="int32", low=-4, high=5):
    return RNG.integers(low, high, size=shape).astype(dtype)


def per_element(fn, x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape, dtype="float64")
    for idx in np.ndindex(x.shape):
        out[idx] = fn(float(x[idx]))
    return out


# -- activations ---------------------------------------------------------------------------------------

def _elu(v: float, alpha: float) -> float:
    return v if v > 0 else alpha * (math.exp(v) - 1)


F32 = float(np.float32(1.67326319217681884765625)), float(np.float32(1.05070102214813232421875))
ACTIVATIONS = [
    ("nn.elu", {"alpha": 0.5}, lambda v: _elu(v, 0.5)),
    ("nn.selu", {}, lambda v: F32[1] * _elu(v, F32[0])),
    ("nn.selu", {"alpha": 2.0, "gamma": 3.0}, lambda v: 3.0 * _elu(v, 2.0)),
    ("nn.celu", {"alpha": 2.0}, lambda v: max(0.0, v) + min(0.0, 2.0 * (math.exp(v / 2.0) - 1))),
    ("nn.shrink", {"lambd": 0.75, "bias": 0.25},
     lambda v: v + 0.25 if v < -0.75 else (v - 0.25 if v > 0.75 else 0.0)),
]


@pytest.mark.parametrize("op, attrs, formula", ACTIVATIONS, ids=[f"{a[0]}{a[1]}" for a in ACTIVATIONS])
def test_activation_against_formula(op, attrs, formula):
    x = floats(3, 7)
    x[0, :3] = [0.0, 80.0, -80.0]  # exp of the positive part would overflow float32
    np.testing.assert_allclose(run(op, x, **attrs), per_element(formula, x), rtol=1e-12, atol=1e-300)
    single = run(op, x.astype("float32"), **attrs)
    assert single.dtype == np.float32 and np.all(np.isfinite(single))
    np.testing.assert_allclose(single, per_element(formula, x.astype("float32")), rtol=2e-6, atol=1e-6)


def test_shrink_of_integers_truncates_toward_zero():
    x = np.arange(-5, 6, dtype="int32")
    expected = [math.trunc(v + 0.5) if v < -1.5 else (math.trunc(v - 0.5) if v > 1.5 else 0) for v in x.tolist()]
    out = run("nn.shrink", x, lambd=1.5, bias=0.5)
    assert out.dtype == np.int32 and out.tolist() == expected


@pytest.mark.parametrize("shape, axis", [((2, 3, 4, 2), 1), ((2, 3, 5), -1), ((4,), 0)])
def test_prelu_against_loops(shape, axis):
    x, alpha = floats(*shape), floats(shape[axis])
    expected = np.empty(shape)
    for idx in np.ndindex(shape):
        v = x[idx]
        expected[idx] = v * alpha[idx[axis]] if v < 0 else v
    np.testing.assert_array_equal(run("nn.prelu", x, alpha, axis=axis), expected)


@pytest.mark.parametrize("shape, axis, center, scale", [((2, 3, 4, 5), 1, True, True), ((2, 4, 3), 2, False, True),
                                                        ((1, 2, 3, 2, 2), 1, True, False)])
def test_instance_norm_against_loops(shape, axis, center, scale):
    x, gamma, beta = floats(*shape), floats(shape[axis]), floats(shape[axis])
    eps = float(np.float32(1e-3))
    expected = np.empty(shape)
    for n in range(shape[0]):
        for c in range(shape[axis]):
            cells = [idx for idx in np.ndindex(shape) if idx[0] == n and idx[axis] == c]
            mean = sum(x[i] for i in cells) / len(cells)
            var = sum((x[i] - mean) ** 2 for i in cells) / len(cells)
            for i in cells:
                y = (x[i] - mean) / math.sqrt(var + eps)
                expected[i] = y * (gamma[c] if scale else 1.0) + (beta[c] if center else 0.0)
    out = run("nn.instance_norm", x, gamma, beta, axis=axis, epsilon=1e-3, center=center, scale=scale)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


# -- arithmetic and arg-reductions ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int32", "int64", "float64"])
def test_floor_mod_takes_the_divisor_sign(dtype):
    a = np.array([7, -7, 7, -7, 0, 6, -6, 5.5 if dtype == "float64" else 5], dtype)
    b = np.array([3, 3, -3, -3, 4, -3, 4, -2], dtype)
    expected = [x - math.floor(x / y) * y for x, y in zip(a.tolist(), b.tolist())]  # Python's floored remainder
    out = run("floor_mod", a, b)
    assert out.dtype == np.dtype(dtype) and out.tolist() == expected
    assert run("mod", a, b).tolist() == [math.fmod(x, y) for x, y in zip(a.tolist(), b.tolist())]


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("last", [False, True])
def test_arg_reduce_picks_the_first_or_last_tie(op, last):
    x = small_ints(4, 6, low=0, high=3)  # many ties
    better = (lambda v, best: v > best) if op == "argmax" else (lambda v, best: v < best)
    expected = []
    for row in x.tolist():
        best_at = 0
        for j, v in enumerate(row):
            if better(v, row[best_at]) or (last and v == row[best_at]):
                best_at = j
        expected.append(best_at)
    assert run(op, x, axis=1, select_last_index=last).tolist() == expected


# -- indexing ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_against_loops(axis):
    data = floats(4, 5)
    shape = (3, 5) if axis == 0 else (4, 7)
    size = data.shape[axis]
    indices = RNG.integers(-size, size, size=shape)
    expected = np.empty(shape)
    for idx in np.ndindex(shape):
        at = list(idx)
        at[axis] = indices[idx] + size if indices[idx] < 0 else indices[idx]
        expected[idx] = data[tuple(at)]
    np.testing.assert_array_equal(run("gather", data, indices, axis=axis), expected)
    with pytest.raises(KernelError, match="gather: an index is out of range"):
        run("gather", data, np.full(shape, size), axis=axis)


def _scatter_loop(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, combine) -> np.ndarray:
    out, depth = data.copy(), indices.shape[0]
    for y in np.ndindex(indices.shape[1:]):
        at = tuple(int(indices[(m,) + y]) % data.shape[m] for m in range(depth))
        for rest in np.ndindex(data.shape[depth:]):
            out[at + rest] = combine(out[at + rest], updates[y + rest]) if combine else updates[y + rest]
    return out


@pytest.mark.parametrize("batch_dims, indices", [
    (0, [[0, 2, -1], [3, -4, 1]]),        # [M=2, Y=3]: one (3, 4) position each, a (2,) row out
    (0, [[[1], [-3]]]),                   # [M=1, Y=(2, 1)]: whole (4, 2) planes
    (1, [[[2], [-1], [0]]]),              # [M=1, Y=(B=3, 1)]: a (2,) row of each batch's (4, 2) plane
])
def test_gather_nd_against_loops(batch_dims, indices):
    indices = np.array(indices)
    data = floats(3, 4, 2)
    out = run("gather_nd", data, indices, batch_dims=batch_dims)
    depth = indices.shape[0]
    expected = np.empty(indices.shape[1:] + data.shape[batch_dims + depth:])
    for y in np.ndindex(indices.shape[1:]):
        at = tuple(int(indices[(m,) + y]) % data.shape[batch_dims + m] for m in range(depth))
        expected[y] = data[y[:batch_dims] + at]
    np.testing.assert_array_equal(out, expected)


def test_gather_nd_out_of_range_index():
    with pytest.raises(KernelError, match="gather_nd: an index is out of range"):
        run("gather_nd", floats(3, 2), np.array([[3]]))


@pytest.mark.parametrize("mode, indices", [
    ("update", [[[0, 2], [-1, 1]], [[1, 3], [0, -1]]]),  # [M=2, Y=(2, 2)]: four distinct positions
    ("add", [[[0, 2], [-1, 2]], [[1, 3], [0, 3]]]),      # (2, 3) twice; -1 is row 2
    ("mul", [[[0, 2], [-1, 2]], [[1, 3], [0, 3]]]),
    ("min", [[[0, 2], [-1, 2]], [[1, 3], [0, 3]]]),
    ("max", [[[0, 2], [-1, 2]], [[1, 3], [0, 3]]]),
    ("update", [[0, 2]]),                                # [M=1, Y=(2,)]: whole rows
])
def test_scatter_nd_against_loops(mode, indices):
    data, indices = floats(3, 4, 2), np.array(indices)
    updates = floats(*indices.shape[1:], *data.shape[indices.shape[0]:])
    out = run("scatter_nd", data, indices, updates, mode=mode)
    combine = {"update": None, "add": lambda a, b: a + b, "mul": lambda a, b: a * b, "min": min, "max": max}[mode]
    np.testing.assert_array_equal(out, _scatter_loop(data, indices, updates, combine))


def test_scatter_nd_out_of_range_index():
    with pytest.raises(KernelError, match="scatter_nd: an index is out of range"):
        run("scatter_nd", floats(3, 2), np.array([[3]]), floats(1, 2))


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_against_loops(axis):
    indices = np.array([[0, 3, -1], [2, 5, 1]], "int64")
    on, off = np.array(7, "int32"), np.array(-2, "int32")
    out = run("one_hot", indices, on, off, depth=4, axis=axis, dtype="int32")
    position = axis % 3
    for idx in np.ndindex(out.shape):
        at = idx[:position] + idx[position + 1:]
        assert out[idx] == (7 if indices[at] == idx[position] else -2)
    assert out.dtype == np.int32 and out.shape[position] == 4


# -- scans ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis, exclusive", [(0, False), (1, True), (-1, False), (None, True), (None, False)])
def test_cumsum_against_loops(axis, exclusive):
    x = small_ints(3, 4, dtype="int64")
    flat = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis % x.ndim
    expected = np.empty(flat.shape, dtype="int64")
    for idx in np.ndindex(flat.shape):
        total = 0
        for j in range(idx[ax] + (0 if exclusive else 1)):
            total += int(flat[idx[:ax] + (j,) + idx[ax + 1:]])
        expected[idx] = total
    out = run("cumsum", x, axis=axis, exclusive=exclusive)
    assert out.dtype == np.int64 and out.tolist() == expected.tolist()


def test_reverse_against_loops():
    x = floats(2, 3, 4)
    out = run("reverse", x, axis=1)
    for i, j, k in np.ndindex(x.shape):
        assert out[i, j, k] == x[i, 2 - j, k]


@pytest.mark.parametrize("k, axis, ascend", [(2, -1, False), (3, 0, True), (0, 1, False), (6, 1, True)])
def test_topk_against_sorted_pairs(k, axis, ascend):
    x = small_ints(4, 6, low=0, high=4).astype("float32")  # ties keep their index order
    values, indices = run("topk", x, k=k, axis=axis, is_ascend=ascend)
    moved_x = np.moveaxis(x, axis, -1)
    for row in np.ndindex(moved_x.shape[:-1]):
        pairs = sorted(enumerate(moved_x[row].tolist()), key=lambda p: (p[1] if ascend else -p[1], p[0]))
        pairs = pairs[:k] if k >= 1 else pairs
        assert np.moveaxis(indices, axis, -1)[row].tolist() == [i for i, _ in pairs]
        assert np.moveaxis(values, axis, -1)[row].tolist() == [v for _, v in pairs]
    assert indices.dtype == np.int32
    assert run("topk", x, k=k, axis=axis, is_ascend=ascend, ret_type="indices", dtype="int64").dtype == np.int64


# -- generated tensors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, reps", [((2, 3), (2, 2)), ((2, 3), (3, 1, 2)), ((2, 1, 3), (2,)), ((2,), (0,))])
def test_tile_against_loops(shape, reps):
    x = floats(*shape)
    out = run("tile", x, reps=reps)
    rank = max(len(shape), len(reps))
    padded = x.reshape((1,) * (rank - len(shape)) + shape)
    full_reps = (1,) * (rank - len(reps)) + tuple(reps)
    assert out.shape == tuple(d * r for d, r in zip(padded.shape, full_reps))
    for idx in np.ndindex(out.shape):
        assert out[idx] == padded[tuple(i % d for i, d in zip(idx, padded.shape))]


@pytest.mark.parametrize("k, upper", [(0, True), (1, True), (-2, True), (0, False), (2, False), (-1, False)])
def test_trilu_against_loops(k, upper):
    x = floats(2, 4, 5)
    out = run("trilu", x, k=k, upper=upper)
    for b, i, j in np.ndindex(x.shape):
        keep = j - i >= k if upper else j - i <= k
        assert out[b, i, j] == (x[b, i, j] if keep else 0)


@pytest.mark.parametrize("start, stop, step, dtype", [(1, 10, 3, "int64"), (5, -4, -2, "int32"), (3, 3, 1, "int64"),
                                                      (0.1, 1.0, 0.3, "float32"), (2.0, -1.0, -0.7, "float64")])
def test_arange_adds_the_step_to_the_previous_value(start, stop, step, dtype):
    scalar = np.dtype(dtype).type
    expected, value = [], scalar(start)
    while (value < stop) if step > 0 else (value > stop):
        if len(expected) >= math.ceil((stop - start) / step):
            break
        expected.append(value)
        value = scalar(value + scalar(step))
    out = run("arange", *(np.array(v, dtype) for v in (start, stop, step)), dtype=dtype)
    assert out.dtype == np.dtype(dtype) and out.tolist() == [v.item() for v in expected]


def test_arange_rejects_a_zero_step():
    with pytest.raises(KernelError, match="step non-zero"):
        run("arange", np.array(0), np.array(3), np.array(0), dtype="int64")
