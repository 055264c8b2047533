"""torch-backed strategies: every op on `cuda` (torch on the GPU), and extra competitors on `cpu`.

The cuda strategies exist whether or not torch is installed, so the cost model can price and
legality-check cuda programs anywhere; building for cuda is what needs torch and a GPU. A call
whose attributes the torch kernel does not cover (e.g. `nn.pad` in reflect mode) runs its
reference kernel on the host instead. On cpu, when torch is importable, the heavy ops also get a
torch implementation at plevel 3: below the numpy defaults, so untuned selection does not depend
on whether torch is installed, while tuning measures it like any other candidate.
"""

from __future__ import annotations

from typing import Sequence

from ir.attrs import Attrs
from ir.op.registry import get_op, list_ops
from ir.types import Type

from ..devices import torch_available
from ..kernels.torch_ops import applies, run_torch_kernel
from ..registry import GenericFunc
from ..roofline import Work
from ..strategy import OpStrategy
from ..target import Target
from ..work import op_work
from .generic import host_reference, no_knobs

__all__ = ["torch_compute", "TORCH_ON_CPU"]

#: ops whose cpu strategy gains a torch competitor when torch is importable
TORCH_ON_CPU = ("nn.conv2d", "nn.conv2d_bias_act", "nn.dense", "nn.dense_bias_act", "nn.matmul", "nn.batch_matmul",
                "nn.max_pool2d", "nn.avg_pool2d", "nn.softmax", "nn.layer_norm")
#: GEMM-like ops reach this fraction of a device's peak in library kernels
_LIBRARY_GEMM_EFFICIENCY = 0.7
_GEMM_LIKE = {"nn.conv2d", "nn.conv2d_bias_act", "nn.dense", "nn.dense_bias_act", "nn.matmul", "nn.batch_matmul",
              "nn.fused_matmul", "nn.feed_forward"}


def torch_compute(op_name: str):
    """A compute that runs the op's torch kernel (inputs are torch tensors on the target's device)."""
    def compute(attrs: Attrs, inputs: Sequence, out_type: Type, config) -> object:
        return run_torch_kernel(op_name, attrs, inputs, out_type)
    compute.__name__ = f"torch_{op_name.replace('.', '_')}"
    return compute


def _library_estimate(op_name: str):
    def estimate(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> Work:
        work = op_work(op_name, attrs, in_types, out_type)
        return work.scaled(efficiency=_LIBRARY_GEMM_EFFICIENCY) if op_name in _GEMM_LIKE else work
    return estimate


def _cuda_strategy(op_name: str):
    compute, estimate, host = torch_compute(op_name), _library_estimate(op_name), host_reference(op_name)

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        if applies(op_name, attrs):
            s.add_implementation(compute, no_knobs, name=f"{op_name}.cuda", plevel=10, device="torch",
                                 estimate=estimate)
        else:
            s.add_implementation(host, no_knobs, name=f"{op_name}.host", plevel=0)
        return s

    strategy.__name__ = f"{op_name.replace('.', '_')}_strategy_cuda"
    return strategy


def _with_torch_on_cpu(op_name: str, fstrategy: GenericFunc) -> None:
    numpy_strategy, _ = fstrategy.dispatch(Target("cpu"))
    compute, estimate = torch_compute(op_name), _library_estimate(op_name)

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = numpy_strategy(attrs, in_types, out_type, target)
        if torch_available() and applies(op_name, attrs):
            s.add_implementation(compute, no_knobs, name=f"{op_name.split('.')[-1]}_torch.cpu", plevel=3,
                                 device="torch", estimate=estimate)
        return s

    strategy.__name__ = f"{numpy_strategy.__name__}_with_torch"
    fstrategy.register("cpu", strategy, override=True)


for _op in list_ops():
    _fstrategy = get_op(_op).get_attr("FTVMStrategy")
    _fstrategy.register("cuda", _cuda_strategy(_op))
    if _op in TORCH_ON_CPU:
        _with_torch_on_cpu(_op, _fstrategy)
