"""Reference kernels of the ops with run-time shapes (`ir.op.dynamic`): the shape arguments are read
from tensors, with ONNX's conventions for `Reshape`, `Expand` and `Slice`."""

from __future__ import annotations

import numpy as np

from ir.attrs import Attrs
from ir.op.shapes import normalize_axis

from ..errors import KernelError
from .reference import _ref


@_ref("shape_of")
def _shape_of(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.array(x.shape, dtype=attrs.dtype)


@_ref("argwhere")
def _argwhere(attrs: Attrs, condition: np.ndarray) -> np.ndarray:
    return np.argwhere(condition).astype(attrs.dtype)


@_ref("dyn.reshape")
def _dyn_reshape(attrs: Attrs, x: np.ndarray, newshape: np.ndarray) -> np.ndarray:
    target = [int(d) for d in newshape]
    if any(d < -1 for d in target) or target.count(-1) > 1:
        raise KernelError(f"dyn.reshape: target {target} may hold one -1 and no other negative entry")
    for i, d in enumerate(target):
        if d == 0 and not attrs.allowzero:
            if i >= x.ndim:
                raise KernelError(f"dyn.reshape: target {target} copies dimension {i} of a rank-{x.ndim} input")
            target[i] = x.shape[i]
    try:
        return x.reshape(target)
    except ValueError:
        raise KernelError(f"dyn.reshape: cannot reshape shape {list(x.shape)} to {target}") from None


@_ref("dyn.expand")
def _dyn_expand(attrs: Attrs, x: np.ndarray, shape: np.ndarray) -> np.ndarray:
    target = tuple(int(d) for d in shape)
    try:
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, target)).copy()
    except ValueError:
        raise KernelError(f"dyn.expand: shape {list(x.shape)} does not broadcast with {list(target)}") from None


def _onnx_slice(size: int, start: int, end: int, step: int) -> slice:
    """ONNX Slice's bounds on an axis of `size`: negative ones count from the end, then both are
    clamped to the axis (to one before its start for a negative step's end)."""
    if step == 0:
        raise KernelError("dyn.strided_slice: a step of 0 is not allowed")
    start, end = (b + size if b < 0 else b for b in (start, end))
    if step > 0:
        return slice(min(max(start, 0), size), min(max(end, 0), size), step)
    start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
    return slice(start, None if end < 0 else end, step)


@_ref("dyn.strided_slice")
def _dyn_strided_slice(attrs: Attrs, x: np.ndarray, begin: np.ndarray, end: np.ndarray,
                       strides: np.ndarray) -> np.ndarray:
    index = [slice(None)] * x.ndim
    for axis, b, e, s in zip(attrs.axes, begin.tolist(), end.tolist(), strides.tolist()):
        axis = normalize_axis(axis, x.ndim)
        index[axis] = _onnx_slice(x.shape[axis], b, e, s)
    return x[tuple(index)]
