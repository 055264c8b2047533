"""Reference kernels of the ops over run-time shapes (`shape_of`, `dyn.*`) against ONNX's rules,
written out element by element."""

from __future__ import annotations

import numpy as np
import pytest

from strategies.errors import KernelError

from .test_reference import run

RNG = np.random.default_rng(5)


def _positions(size: int, start: int, end: int, step: int) -> list[int]:
    """ONNX Slice's positions on one axis, as its specification words them."""
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), size), min(max(end, 0), size)
    else:
        start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
    out, i = [], start
    while (i < end) if step > 0 else (i > end):
        out.append(i)
        i += step
    return out


def test_shape_of_reads_the_shape_in_the_dtype():
    out = run("shape_of", np.zeros((2, 0, 5), "float32"), dtype="int32")
    assert out.dtype == np.int32 and out.tolist() == [2, 0, 5]


def test_argwhere_lists_positions_in_row_major_order():
    x = np.array([[[0, 1], [2, 0]], [[0, 0], [0, -3]]], "float32")
    expected = [[i, j, k] for i in range(2) for j in range(2) for k in range(2) if x[i, j, k] != 0]
    out = run("argwhere", x, dtype="int32")
    assert out.dtype == np.int32 and out.tolist() == expected
    assert run("argwhere", np.zeros((3, 2), bool), dtype="int64").shape == (0, 2)


BOUNDS = [(0, 3, 1), (-2, 100, 1), (1, -1, 2), (-1, -100, -1), (5, 0, -2), (2**62, -2**62, -3), (3, 3, 1), (-9, 2, 1)]


@pytest.mark.parametrize("start, end, step", BOUNDS)
def test_strided_slice_follows_onnx_slice(start, end, step):
    x = RNG.standard_normal((6, 5)).astype("float32")
    out = run("dyn.strided_slice", x, np.array([start]), np.array([end]), np.array([step]), axes=(0,))
    rows = _positions(6, start, end, step)
    expected = np.array([[x[r, c] for c in range(5)] for r in rows], "float32").reshape(len(rows), 5)
    np.testing.assert_array_equal(out, expected)


def test_strided_slice_of_two_axes_and_a_zero_step():
    x = RNG.standard_normal((3, 4, 5)).astype("float32")
    out = run("dyn.strided_slice", x, np.array([1, -1], "int32"), np.array([99, 0], "int32"),
              np.array([1, -2], "int32"), axes=(2, 0))
    rows, cols = _positions(3, -1, 0, -2), _positions(5, 1, 99, 1)
    np.testing.assert_array_equal(out, np.array([[[x[r, j, c] for c in cols] for j in range(4)] for r in rows]))
    with pytest.raises(KernelError, match="step of 0"):
        run("dyn.strided_slice", x, np.array([0]), np.array([1]), np.array([0]), axes=(1,))


@pytest.mark.parametrize("target, shape", [([0, -1], (2, 12)), ([4, 0, 2], (4, 3, 2)), ([-1], (24,)),
                                           ([2, 3, 2, 2], (2, 3, 2, 2))])
def test_reshape_copies_zeros_and_infers_one_minus_one(target, shape):
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    out = run("dyn.reshape", x, np.array(target, "int64"))
    assert out.shape == shape and out.reshape(-1).tolist() == list(range(24))  # row-major order kept


@pytest.mark.parametrize("target, message", [([5, -1], "cannot reshape"), ([-1, -1], "one -1"),
                                             ([1, 1, 1, 0, 24], "copies dimension 3")])
def test_reshape_errors_name_the_target(target, message):
    with pytest.raises(KernelError, match=message):
        run("dyn.reshape", np.zeros((2, 3, 4), "float32"), np.array(target, "int64"))


@pytest.mark.parametrize("shape, target", [((3, 1), [2, 1, 4]), ((1, 3), [3]), ((2, 1), [1, 0]), ((4,), [1, 1, 1])])
def test_expand_broadcasts_both_ways(shape, target):
    x = RNG.standard_normal(shape).astype("float32")
    out = run("dyn.expand", x, np.array(target, "int64"))
    rank = max(len(shape), len(target))
    have, want = (1,) * (rank - len(shape)) + shape, [1] * (rank - len(target)) + target
    assert out.shape == tuple(w if h == 1 else h for h, w in zip(have, want))
    for index in np.ndindex(out.shape):
        assert out[index] == x.reshape(have)[tuple(0 if h == 1 else i for h, i in zip(have, index))]


def test_expand_error_names_both_shapes():
    with pytest.raises(KernelError, match=r"\[2, 3\] does not broadcast with \[4, 3\]"):
        run("dyn.expand", np.zeros((2, 3), "float32"), np.array([4, 3]))
