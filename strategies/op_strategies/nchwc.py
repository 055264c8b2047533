"""ort strategies of convolutions: ONNX Runtime's NCHWc `Conv` where it runs a blocked call as laid out,
and its plain CPU convolution (the cpu strategies without Winograd) for `nn.conv2d` / `nn.conv2d_bias_act`.

ONNX Runtime's NCHWc convolution (MLAS) works on channel blocks that fit the machine's vector
registers, with bias, activation and a residual sum applied while the block is in registers and
no column matrix: it counts as the convolution's work at the roofline's peak. Measured on the
two-core AVX-512 host (one thread, ResNet-50's convolutions with bias and relu): 1.16-1.31x faster
than ONNX Runtime's FusedConv of the same layer, about 110 GFLOP/s on a 3x3 layer. A call it cannot run as laid out (another
block size than this machine's, a dtype other than float32, a layout pairing the kernel lacks)
keeps only the host reference kernel, whose cost keeps extraction away from it. Other targets
(cpu, cuda) have no implementation, as for the other fused forms: the blocked layouts are ONNX
Runtime's kernels', so only the ort target extracts them.

ONNX Runtime's plain CPU convolution (`Conv`, `FusedConv`) is im2col with MLAS's GEMM, a direct
GEMM for 1x1 and a depthwise kernel: it has no Winograd, so the ort target's estimate of a plain
convolution leaves the cpu strategy's Winograd out (with it, a 3x3 layer of 128+ channels was
estimated 1.4x cheaper than the NCHWc kernel, which measures 1.2x faster than FusedConv there).
"""

from __future__ import annotations

from typing import Sequence

from ir.attrs import Attrs
from ir.ort_nchwc import ort_conv_block, ort_nchwc_block_size
from ir.op.layout import BLOCKED_CONVS, logical_sizes
from ir.op.registry import get_op
from ir.types import TensorType, Type

from ..roofline import Work
from ..strategy import OpStrategy
from ..target import Target
from ..work import op_work
from .conv2d import conv2d_strategy_cpu
from .generic import REFERENCE_EFFICIENCY, host_reference, no_knobs

__all__ = ["NCHWC_EFFICIENCY", "runs_as_nchwc", "blocked_conv_strategy_ort", "plain_conv_strategy_ort"]

#: the share of the roofline ONNX Runtime's NCHWc convolution reaches
NCHWC_EFFICIENCY = 1.0


def runs_as_nchwc(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> bool:
    """Whether ONNX Runtime on this machine runs this blocked convolution as one NCHWc `Conv`."""
    data = in_types[0]
    if not (isinstance(data, TensorType) and isinstance(out_type, TensorType)) or out_type.dtype != "float32":
        return False
    in_c = logical_sizes(data.shape, attrs.data_layout)["C"]
    out_c = logical_sizes(out_type.shape, attrs.out_layout or attrs.data_layout)["C"]
    if not (isinstance(in_c, int) and isinstance(out_c, int)):
        return False
    block = ort_conv_block(attrs, in_c, out_c)
    return block is not None and block == ort_nchwc_block_size()


def _work(op_name: str, efficiency: float):
    def estimate(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> Work:
        return op_work(op_name, attrs, in_types, out_type).scaled(efficiency=efficiency)
    return estimate


def blocked_conv_strategy_ort(op_name: str):
    """The ort strategy of a blocked convolution: the NCHWc kernel where it applies, the reference always."""
    reference = host_reference(op_name)
    short = op_name.split(".", 1)[1]

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        s.add_implementation(reference, no_knobs, name=f"{short}.reference", plevel=0,
                             estimate=_work(op_name, REFERENCE_EFFICIENCY))
        if runs_as_nchwc(attrs, in_types, out_type):
            s.add_implementation(reference, no_knobs, name=f"{short}.ort", plevel=10,
                                 estimate=_work(op_name, NCHWC_EFFICIENCY))
        return s

    strategy.__name__ = f"{short}_strategy_ort"
    return strategy


def plain_conv_strategy_ort(op_name: str):
    """The ort strategy of `nn.conv2d` or `nn.conv2d_bias_act`: the cpu strategy without Winograd."""
    cpu = conv2d_strategy_cpu(op_name)

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = cpu(attrs, in_types, out_type, target)
        for spec in s.specializations:
            spec.implementations = [impl for impl in spec.implementations if "winograd" not in impl.name]
        return s

    strategy.__name__ = f"{op_name.split('.', 1)[1]}_strategy_ort"
    return strategy


def _no_kernel(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
    return OpStrategy()


for _name in BLOCKED_CONVS:
    get_op(_name).get_attr("FTVMStrategy").register("ort", blocked_conv_strategy_ort(_name))
    get_op(_name).get_attr("FTVMStrategy").register(["cpu", "cuda", "generic"], _no_kernel, override=True)
for _name in ("nn.conv2d", "nn.conv2d_bias_act"):
    get_op(_name).get_attr("FTVMStrategy").register("ort", plain_conv_strategy_ort(_name))
