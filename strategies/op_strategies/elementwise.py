"""cpu strategy for `erf`: a float32 approximation (15) against scipy's erf (10).

scipy evaluates erf in float64 whatever the input; `erf_float32` (Abramowitz & Stegun 7.1.26,
absolute error below 1e-6) stays in float32 and runs several times faster, which matters for
BERT's exact GELU, `x * 0.5 * (1 + erf(x / sqrt(2)))`. Other dtypes keep scipy's erf only.
"""

from __future__ import annotations

from typing import Sequence

from ir.attrs import Attrs
from ir.op.registry import get_op
from ir.types import Type

from ..kernels.elementwise import ERF_FLOAT32
from ..strategy import OpStrategy
from ..target import Target
from .generic import no_knobs

__all__ = ["erf_strategy_cpu"]

_GENERIC = get_op("erf").get_attr("FTVMStrategy").default


def erf_strategy_cpu(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
    s = _GENERIC(attrs, in_types, out_type, target)
    if out_type.dtype == "float32":
        s.add_implementation(ERF_FLOAT32, no_knobs, name="erf_float32.cpu", plevel=15)
    return s


get_op("erf").get_attr("FTVMStrategy").register("cpu", erf_strategy_cpu, override=True)
