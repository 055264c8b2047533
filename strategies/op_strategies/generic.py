"""Generic strategies: every op runs its reference kernel on the host, on any target.

Element-wise, broadcast, layout and reduction ops get their strategy from their fusion kind
(`register_injective_schedule` and friends), with the op's registered compute: the reference
kernel, or for element-wise and shape-only ops an equivalent that can work in place or skips
recomputing the output shape (`strategies.kernels.elementwise`, `strategies.kernels.reshape`);
the heavy ops get a generic strategy with the reference kernel only, which targets override
with faster implementations. The fused forms get no generic strategy: only targets whose keys
say they have the fused kernel can run them.
The host strategies are also registered for the `cpu` key, so that a cpu target (and any
target listing `cpu`) uses them by choice rather than by fallback; the per-family modules
override the `cpu` variant of the ops they have faster kernels for.
"""

from __future__ import annotations

from typing import Sequence

from ir.attrs import Attrs
from ir.op.registry import OpPattern, get_op, list_ops
from ir.types import Type

from ..kernels.elementwise import elementwise_compute, ops_with_in_place_form
from ..kernels.prepared import PreparedCompute
from ..kernels.reshape import RESHAPE_OPS, reshape_compute
from ..registry import (GenericFunc, reference_compute, register_broadcast_schedule, register_compute,
                        register_injective_schedule, register_reduce_schedule, register_strategy)
from ..strategy import ConfigSpace, OpStrategy
from ..target import Target
from ..work import op_work

__all__ = ["FUSED_OPS", "no_knobs", "host_reference", "reference_strategy", "REFERENCE_EFFICIENCY"]

#: fused forms: no generic strategy, only the targets that have such kernels run them
FUSED_OPS = ("nn.conv2d_bias_act", "nn.dense_bias_act", "nn.fused_matmul", "nn.bias_gelu", "nn.skip_layer_norm",
             "nn.attention", "nn.masked_attention", "nn.cached_attention", "nn.feed_forward", "nn.rotary_embedding")
#: the reference convolution and matmul kernels are einsum loops, far from a tuned GEMM
REFERENCE_EFFICIENCY = 0.25


def no_knobs(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> ConfigSpace:
    """The schedule of an implementation with nothing to tune."""
    return ConfigSpace()


def host_reference(op_name: str) -> PreparedCompute:
    """The op's reference kernel as a compute whose outputs the executor may trust (it keeps no buffers)."""
    return PreparedCompute.of(reference_compute(op_name))


def reference_strategy(op_name: str):
    """A strategy whose one implementation is the op's reference kernel on the host (plevel 0)."""
    compute = host_reference(op_name)

    def estimate(attrs: Attrs, in_types: Sequence[Type], out_type: Type):
        return op_work(op_name, attrs, in_types, out_type).scaled(efficiency=REFERENCE_EFFICIENCY)

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        s.add_implementation(compute, no_knobs, name=f"{op_name}.reference", plevel=0, estimate=estimate)
        return s

    strategy.__name__ = f"{op_name.replace('.', '_')}_strategy"
    return strategy


_BY_PATTERN = {
    OpPattern.ELEMWISE: register_broadcast_schedule,
    OpPattern.BROADCAST: register_broadcast_schedule,
    OpPattern.INJECTIVE: register_injective_schedule,
    OpPattern.COMM_REDUCE: register_reduce_schedule,
}


def _register_computes() -> None:
    """Element-wise ops that can write into a donated input, shape-only ops as one reshape, others the reference."""
    in_place, reshapes = ops_with_in_place_form(), set(RESHAPE_OPS)
    for name in list_ops():
        if name in in_place:
            register_compute(name, elementwise_compute(name))
        elif name in reshapes:
            register_compute(name, reshape_compute(name))
        elif name not in FUSED_OPS:
            register_compute(name, host_reference(name))


def _register_all() -> None:
    _register_computes()
    for name in list_ops():
        if name in FUSED_OPS:
            register_strategy(name, GenericFunc(f"{name}_strategy"))
            continue
        register_by_kind = _BY_PATTERN.get(get_op(name).pattern)
        fstrategy = register_by_kind(name) if register_by_kind else register_strategy(name, reference_strategy(name))
        fstrategy.register("cpu", fstrategy.default)


_register_all()
