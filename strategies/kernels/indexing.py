"""Reference kernels of the indexing, scan and generating ops (`ir.op.indexing`, `ir.op.scan`,
`ir.op.generate`). An index outside its axis raises `KernelError`; a negative one counts from the end."""

from __future__ import annotations

import math

import numpy as np

from ir.attrs import Attrs
from ir.op.shapes import normalize_axis

from ..errors import KernelError
from .reference import _ref


def wrapped_indices(indices: np.ndarray, sizes: np.ndarray | int, op_name: str) -> np.ndarray:
    """`indices` with negative ones counted from the end of axes of `sizes`; out of range raises."""
    if np.any((indices < -sizes) | (indices >= sizes)):
        raise KernelError(f"{op_name}: an index is out of range (axis sizes {np.ravel(sizes).tolist()})")
    return np.where(indices < 0, indices + sizes, indices)


@_ref("gather")
def _gather(attrs: Attrs, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    axis = normalize_axis(attrs.axis, data.ndim)
    indices = wrapped_indices(indices, data.shape[axis], "gather")
    window = tuple(slice(None) if i == axis else slice(0, n) for i, n in enumerate(indices.shape))
    return np.take_along_axis(data[window], indices, axis=axis)


@_ref("gather_nd")
def _gather_nd(attrs: Attrs, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    batch, depth = attrs.batch_dims, indices.shape[0]
    sizes = np.array(data.shape[batch:batch + depth]).reshape((depth,) + (1,) * (indices.ndim - 1))
    position = tuple(wrapped_indices(indices, sizes, "gather_nd"))
    rest = indices.ndim - 1 - batch  # index axes after the batch axes
    batches = tuple(np.arange(n).reshape((n,) + (1,) * (batch - 1 - i + rest)) for i, n in enumerate(data.shape[:batch]))
    return data[batches + position]


#: how scatter_nd's modes combine an update with the value in place
_COMBINE = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


@_ref("scatter_nd")
def _scatter_nd(attrs: Attrs, data: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> np.ndarray:
    depth = indices.shape[0]
    sizes = np.array(data.shape[:depth]).reshape((depth,) + (1,) * (indices.ndim - 1))
    position = tuple(wrapped_indices(indices, sizes, "scatter_nd"))
    out = data.copy()
    if attrs.mode == "update":
        out[position] = updates
    else:  # unbuffered, so a repeated position combines every update
        _COMBINE[attrs.mode].at(out, position, updates)
    return out


@_ref("one_hot")
def _one_hot(attrs: Attrs, indices: np.ndarray, on_value: np.ndarray, off_value: np.ndarray) -> np.ndarray:
    axis = normalize_axis(attrs.axis, indices.ndim + 1)
    shape = [1] * (indices.ndim + 1)
    shape[axis] = attrs.depth
    hit = np.expand_dims(indices, axis) == np.arange(attrs.depth).reshape(shape)
    return np.where(hit, on_value, off_value).astype(attrs.dtype)


@_ref("cumsum")
def _cumsum(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    if attrs.axis is None:
        x, axis = x.reshape(-1), 0
    else:
        axis = normalize_axis(attrs.axis, x.ndim)
    sums = np.cumsum(x, axis=axis, dtype=x.dtype)
    if attrs.exclusive:  # each sum moves one place on, and the first becomes 0
        sums = np.roll(sums, 1, axis=axis)
        sums[(slice(None),) * axis + (slice(0, 1),)] = 0
    return sums


@_ref("reverse")
def _reverse(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.flip(x, axis=normalize_axis(attrs.axis, x.ndim)).copy()


@_ref("topk")
def _topk(attrs: Attrs, x: np.ndarray) -> tuple | np.ndarray:
    axis = normalize_axis(attrs.axis, x.ndim)
    if attrs.is_ascend:
        order = np.argsort(x, axis=axis, kind="stable")
    else:  # descending, equal values in index order: sort the flipped axis ascending, then flip back
        last = x.shape[axis] - 1
        order = last - np.flip(np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable"), axis=axis)
    if attrs.k >= 1:
        order = np.take(order, np.arange(attrs.k), axis=axis)
    values, indices = np.take_along_axis(x, order, axis=axis), order.astype(attrs.dtype)
    return {"both": (values, indices), "values": values, "indices": indices}[attrs.ret_type]


@_ref("tile")
def _tile(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.tile(x, attrs.reps)


@_ref("trilu")
def _trilu(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.triu(x, attrs.k) if attrs.upper else np.tril(x, attrs.k)


@_ref("arange")
def _arange(attrs: Attrs, start: np.ndarray, stop: np.ndarray, step: np.ndarray) -> np.ndarray:
    """ONNX Range: max(ceil((stop - start) / step), 0) values from start, each the previous plus step."""
    start, stop, step = start.item(), stop.item(), step.item()
    if step == 0 or not all(map(math.isfinite, (start, stop, step))):
        raise KernelError(f"arange: start, stop and step must be finite and step non-zero, got "
                          f"{start}, {stop}, {step}")
    if all(isinstance(v, int) for v in (start, stop, step)):
        count = -((start - stop) // step)  # the ceiling of (stop - start) / step, exact for integers
    else:
        count = math.ceil((stop - start) / step)
    steps = np.full(max(count, 0), step, dtype=attrs.dtype)
    steps[:1] = start
    return np.cumsum(steps, dtype=attrs.dtype)  # each value adds step to the one before, in the dtype
