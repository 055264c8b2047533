"""Shape-only ops (`reshape`, `squeeze`, `expand_dims`, `nn.batch_flatten`) as one numpy reshape.

The reference kernels work the output shape out from the attributes on every call (`reshape`
runs its type relation to resolve the 0 and -1 codes); the call's output type already holds that
shape, so a prepared kernel reshapes to it directly. An output type with symbolic dimensions
runs the reference kernel.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ir.attrs import Attrs
from ir.types import Type, is_static

from .prepared import Kernel, PreparedCompute
from .reference import reference_kernel

__all__ = ["RESHAPE_OPS", "reshape_compute"]

RESHAPE_OPS = ("reshape", "squeeze", "expand_dims", "nn.batch_flatten")


def reshape_compute(op_name: str) -> PreparedCompute:
    """The compute of a shape-only op: a reshape to the call's output shape (a view when numpy can)."""
    if op_name not in RESHAPE_OPS:
        raise KeyError(f"{op_name} is not a shape-only op; those are {RESHAPE_OPS}")
    reference = reference_kernel(op_name)

    def prepare(attrs: Attrs, constants: Sequence[Any], out_type: Type, config: Mapping[str, Any]) -> Kernel:
        if not is_static(out_type.shape):
            return lambda inputs, donated: reference(attrs, *inputs)
        shape = out_type.shape
        return lambda inputs, donated: inputs[0].reshape(shape)

    return PreparedCompute(prepare, f"reshape_{op_name.replace('.', '_')}")
