"""Shape arithmetic shared by the type relations (static and symbolic dimensions)."""

from __future__ import annotations

from typing import Sequence

from ..errors import ShapeError
from ..types import Any, AnyDim, Dim, MinDim, TensorType, Type

__all__ = [
    "tensor", "same_dtype", "broadcast_shapes", "dims_match", "normalize_axis", "normalize_axes",
    "window_out_dim", "known", "symbolic", "product",
]


def known(d: Dim) -> bool:
    """Whether `d` is a static size."""
    return isinstance(d, int)


def symbolic(d: Dim) -> bool:
    """Whether `d` is a static size or an expression over size variables (not `Any`)."""
    return not isinstance(d, AnyDim)


def product(dims: Sequence[Dim]) -> Dim:
    """The number of elements of a shape: an int, a product of size variables, or `Any`."""
    out: Dim = 1
    for d in dims:
        if not symbolic(d):
            return Any
        out = out * d
    return out


def tensor(t: Type, what: str) -> TensorType:
    if not isinstance(t, TensorType):
        raise ShapeError(f"{what} must be a tensor, got {t}")
    return t


def same_dtype(types: Sequence[TensorType], names: Sequence[str]) -> str:
    dtypes = {t.dtype for t in types}
    if len(dtypes) > 1:
        listing = ", ".join(f"{n}: {t.dtype}" for n, t in zip(names, types))
        raise ShapeError(f"inputs must share one dtype ({listing})")
    return types[0].dtype


def dims_match(a: Dim, b: Dim) -> bool:
    """True unless both dimensions are known and differ (symbolic dims are assumed to fit)."""
    if known(a) and known(b):
        return a == b
    return True


def _broadcast_dim(a: Dim, b: Dim) -> Dim:
    if a == b:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    for clipped, other in ((a, b), (b, a)):  # min(p, q) with p: p wherever the two broadcast
        if isinstance(clipped, MinDim) and other in clipped.dims:
            return other
    if known(a) and known(b):
        raise ShapeError("")
    if known(a):
        return a
    if known(b):
        return b
    return Any


def broadcast_shapes(a: Sequence[Dim], b: Sequence[Dim]) -> tuple[Dim, ...]:
    """Numpy broadcasting; raises `ShapeError` when two known dimensions disagree."""
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        try:
            out.append(_broadcast_dim(x, y))
        except ShapeError:
            raise ShapeError(f"shapes cannot broadcast: dimension {i} is {x} vs {y}") from None
    return tuple(out)


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ShapeError(f"{what} {axis} is out of range for a rank-{ndim} tensor")
    return axis % ndim if ndim else 0


def transpose_axes(axes: Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """The permutation a transpose with `axes` applies to `ndim` axes, non-negative; None reverses them."""
    return tuple(reversed(range(ndim))) if axes is None else tuple(normalize_axis(a, ndim) for a in axes)


def normalize_axes(axes: Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Axes made non-negative and sorted; None means every axis. Repeats are an error."""
    if axes is None:
        return tuple(range(ndim))
    out = sorted(normalize_axis(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ShapeError(f"axes {list(axes)} repeat an axis")
    return tuple(out)


def window_out_dim(size: Dim, kernel: int, pad_before: int, pad_after: int, stride: int, dilation: int = 1,
                   ceil_mode: bool = False, what: str = "window") -> Dim:
    """Output length of a sliding window (convolution or pooling) over one spatial dimension."""
    if stride < 1 or dilation < 1 or kernel < 1:
        raise ShapeError(f"{what}: kernel, stride and dilation must be >= 1, got {kernel}, {stride}, {dilation}")
    if pad_before < 0 or pad_after < 0:
        raise ShapeError(f"{what}: padding must not be negative, got {pad_before}, {pad_after}")
    span = dilation * (kernel - 1) + 1
    if not known(size):  # a symbolic size, assumed to fit the window, gives an expression in it
        return (size + pad_before + pad_after - span) // stride + 1 if symbolic(size) and not ceil_mode else Any
    room = size + pad_before + pad_after - span
    if room < 0:
        raise ShapeError(f"{what}: kernel extent {span} is larger than the padded input {size + pad_before + pad_after}")
    if not ceil_mode:
        return room // stride + 1
    out = (room + stride - 1) // stride + 1
    if (out - 1) * stride >= size + pad_before:  # the last window would start inside the end padding
        out -= 1
    return out
