"""cpu strategies for max and average pooling (1-D, 2-D, 3-D): kernel taps (10) against whole windows (5).

Folding one strided slice per kernel position keeps every numpy call over the whole output and
never materialises the windows, which the reference kernel does.
"""

from __future__ import annotations

from typing import Sequence

from ir.attrs import Attrs
from ir.op.nn import LAYOUTS
from ir.op.registry import get_op
from ir.types import Type

from ..kernels import pool as kernels
from ..kernels.prepared import PreparedCompute
from ..strategy import OpStrategy
from ..target import Target
from .generic import host_reference, no_knobs

__all__ = ["pool_strategy_cpu"]

_TAPS = {f"nn.{kind}_pool{rank}d": taps for rank in (1, 2, 3)
         for kind, taps in (("max", kernels.max_pool_taps), ("avg", kernels.avg_pool_taps))}


def pool_strategy_cpu(op_name: str):
    """The cpu strategy of `nn.max_pool{1,2,3}d` or `nn.avg_pool{1,2,3}d`."""
    taps = _TAPS[op_name]
    prefix = op_name.split(".")[1]

    def taps_of(attrs: Attrs, inputs, out_type, config):
        return taps(attrs, inputs[0], tuple(out_type.shape[a] for a in LAYOUTS[attrs.layout][1:]))
    compute_taps = PreparedCompute.of(taps_of, f"{prefix}_taps")

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        s.add_implementation(compute_taps, no_knobs, name=f"{prefix}_taps.cpu", plevel=10)
        s.add_implementation(host_reference(op_name), no_knobs, name=f"{prefix}_windows.cpu", plevel=5)
        return s

    strategy.__name__ = f"{prefix}_strategy_cpu"
    return strategy


for _op in _TAPS:
    get_op(_op).get_attr("FTVMStrategy").register("cpu", pool_strategy_cpu(_op), override=True)
