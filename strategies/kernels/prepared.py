"""Computes that do their constant-only work once, when a program is built.

A `PreparedCompute` is an op-strategy compute (`compute(attrs, inputs, out_type, config)`) that
can also be *prepared*: given the values of the call's constant inputs (weights, batch-norm
statistics; `None` for inputs known only at run time), it returns a `Kernel` closure that has
already done whatever depends on those constants and the attributes alone (packed or transformed
weights, a batch norm folded into one scale and shift). The executor prepares each call once
when it builds a program; calling the compute directly prepares with nothing known and runs
once, so both paths share one code path.

A kernel is `kernel(inputs, donated) -> output`, where `inputs` holds every input (constants
included) and `donated` lists the input positions whose arrays the caller will never read again:
the kernel may write its output into one of them instead of allocating (`donated_buffer`).

Contract for kernel writers: an output is a new array, a view of an input, or a donated input,
never a buffer the kernel keeps between calls (the caller may later donate it elsewhere).
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Mapping, Sequence

import numpy as np

from ir.attrs import Attrs
from ir.types import TensorType, Type, is_static

__all__ = ["Kernel", "Prepare", "PreparedCompute", "donated_buffer", "static_shape", "NO_DONATION"]

#: kernel(inputs, donated input positions) -> the op's value
Kernel = Callable[[Sequence[Any], Collection[int]], Any]
#: prepare(attrs, constant inputs or None, out_type, config) -> kernel
Prepare = Callable[[Attrs, Sequence["np.ndarray | None"], Type, Mapping[str, Any]], Kernel]

NO_DONATION: tuple[int, ...] = ()


class PreparedCompute:
    """A compute whose work on constant inputs can be done once, by `prepare`, at build time.

    `uses_donations` says whether its kernels may write into donated inputs (the executor offers
    donations only to those).
    """

    __slots__ = ("prepare", "uses_donations", "__name__")

    def __init__(self, prepare: Prepare, name: str | None = None, uses_donations: bool = False):
        self.prepare = prepare
        self.uses_donations = uses_donations
        self.__name__ = name or getattr(prepare, "__name__", "prepared_compute")

    @classmethod
    def of(cls, compute: Callable[[Attrs, Sequence[Any], Type, Mapping[str, Any]], Any],
           name: str | None = None) -> "PreparedCompute":
        """A plain compute with nothing to prepare (its kernels ignore donations).

        Only for computes that keep no buffers between calls, so the executor may trust their outputs.
        """
        def prepare(attrs: Attrs, constants: Sequence[Any], out_type: Type, config: Mapping[str, Any]) -> Kernel:
            return lambda inputs, donated: compute(attrs, inputs, out_type, config)
        return cls(prepare, name or getattr(compute, "__name__", None))

    def __call__(self, attrs: Attrs, inputs: Sequence[Any], out_type: Type, config: Mapping[str, Any]) -> Any:
        return self.prepare(attrs, (None,) * len(inputs), out_type, config)(inputs, NO_DONATION)

    def __repr__(self) -> str:
        return f"PreparedCompute({self.__name__})"


def donated_buffer(inputs: Sequence[Any], donated: Collection[int], shape: tuple[int, ...] | None,
                   dtype: np.dtype, among: Collection[int] | None = None) -> np.ndarray | None:
    """The first donated input (at a position in `among`, default any) that can hold an output of
    `shape` and `dtype`: a writable array of exactly that shape and dtype. None when there is none,
    or when `shape` is None (not known statically)."""
    if shape is None:
        return None
    for position in donated:
        value = inputs[position]
        if ((among is None or position in among) and isinstance(value, np.ndarray) and value.shape == shape
                and value.dtype == dtype and value.flags.writeable):
            return value
    return None


def static_shape(ty: TensorType) -> tuple[int, ...] | None:
    """The shape of a tensor type when every dimension is known, else None."""
    return ty.shape if is_static(ty.shape) else None
