"""ort strategies of convolutions: ONNX Runtime's NCHWc `Conv` where it runs a blocked call as laid out,
and its plain CPU convolution (the cpu strategies without Winograd) for `nn.conv2d` / `nn.conv2d_bias_act`.

ONNX Runtime's NCHWc convolution (MLAS) works on channel blocks that fit the machine's vector
registers, with bias, activation and a residual sum applied while the block is in registers and
no column matrix: it counts as the convolution's work at the roofline's peak. Measured on the
two-core AVX-512 host (one thread, ResNet-50's convolutions with bias and relu): 1.16-1.31x faster
than ONNX Runtime's FusedConv of the same layer, about 110 GFLOP/s on a 3x3 layer. A call it cannot run as laid out (another
block size than this machine's, a dtype other than float32, a layout pairing the kernel lacks)
keeps only the host reference kernel, whose cost keeps extraction away from it. On the host (the
ort target's compute, and the cpu target, which verifies ort programs) a blocked convolution runs
the cpu convolution kernels on its NCHW / OIHW views, laid out there and back, and is estimated as
the plain one plus that traffic, so the cpu target never prefers it; cuda has no implementation.

ONNX Runtime's plain CPU convolution (`Conv`, `FusedConv`) is im2col with MLAS's GEMM, a direct
GEMM for 1x1 and a depthwise kernel: it has no Winograd, so the ort target's estimate of a plain
convolution leaves the cpu strategy's Winograd out (with it, a 3x3 layer of 128+ channels was
estimated 1.4x cheaper than the NCHWc kernel, which measures 1.2x faster than FusedConv there).
"""

from __future__ import annotations

from typing import Sequence

from ir.attrs import Attrs
from ir.ort_nchwc import ort_conv_block, ort_nchwc_block_size
from ir.op.layout import BLOCKED_CONVS, logical_sizes, plain_conv_types
from ir.op.registry import get_op
from ir.types import TensorType, Type

from ..kernels.nchwc import blocked_conv_compute, plain_conv_attrs
from ..roofline import Work
from ..strategy import OpImplementation, OpStrategy
from ..target import Target
from ..work import nbytes, op_work
from .conv2d import conv2d_strategy_cpu
from .generic import REFERENCE_EFFICIENCY, host_reference, no_knobs

__all__ = ["NCHWC_EFFICIENCY", "runs_as_nchwc", "blocked_conv_strategy_cpu", "blocked_conv_strategy_ort",
           "plain_conv_strategy_ort"]

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


def _host_implementations(op_name: str, attrs: Attrs, in_types: Sequence[Type], out_type: Type,
                          target: Target) -> list[OpImplementation]:
    """The cpu convolution implementations that apply to the blocked call's NCHW / OIHW views, each
    computing on the views laid out there and back (named `<blocked op>_<algorithm>.cpu`)."""
    fused = op_name != "nn.contrib_conv2d_NCHWc"
    plain_op = "nn.conv2d_bias_act" if fused else "nn.conv2d"
    plain_attrs = plain_conv_attrs(attrs, fused)
    data, weight, out = plain_conv_types(attrs, in_types, out_type)
    plain_in = [data, weight, *in_types[2:3]]
    valid, _ = conv2d_strategy_cpu(plain_op)(plain_attrs, plain_in, out, target).applicable(
        [t.shape for t in plain_in])
    relaid = sum(nbytes(t) for t in (*in_types[:1], *in_types[3:], out_type))

    def schedule(impl):
        return lambda a, i, o, t: impl.schedule(plain_attrs, plain_in, out, t)

    def estimate(impl):
        return lambda a, i, o: impl.estimate(plain_attrs, plain_in, out) + Work(0.0, 2.0 * relaid, launches=2)
    return [OpImplementation(blocked_conv_compute(impl.compute, out), schedule(impl),
                             impl.name.replace(plain_op.split(".")[1], op_name.split(".")[1]), impl.plevel,
                             estimate=estimate(impl)) for impl in valid]


def blocked_conv_strategy_cpu(op_name: str):
    """The cpu strategy of a blocked convolution: the cpu convolutions on its NCHW / OIHW views."""
    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        for impl in _host_implementations(op_name, attrs, in_types, out_type, target):
            s.add_implementation(impl.compute, impl.schedule, name=impl.name, plevel=impl.plevel,
                                 estimate=impl.estimate)
        return s

    strategy.__name__ = f"{op_name.split('.', 1)[1]}_strategy_cpu"
    return strategy


def blocked_conv_strategy_ort(op_name: str):
    """The ort strategy of a blocked convolution: the NCHWc kernel where it applies, the reference always
    (on the host, both run the cpu convolutions on the NCHW / OIHW views)."""
    reference = host_reference(op_name)
    short = op_name.split(".", 1)[1]

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        s.add_implementation(reference, no_knobs, name=f"{short}.reference", plevel=0,
                             estimate=_work(op_name, REFERENCE_EFFICIENCY))
        if runs_as_nchwc(attrs, in_types, out_type):
            best = max(_host_implementations(op_name, attrs, in_types, out_type, target), key=lambda i: i.plevel)
            s.add_implementation(best.compute, best.schedule, name=f"{short}.ort", plevel=10,
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
    get_op(_name).get_attr("FTVMStrategy").register("cpu", blocked_conv_strategy_cpu(_name), override=True)
    get_op(_name).get_attr("FTVMStrategy").register(["cuda", "generic"], _no_kernel, override=True)
for _name in ("nn.conv2d", "nn.conv2d_bias_act"):
    get_op(_name).get_attr("FTVMStrategy").register("ort", plain_conv_strategy_ort(_name))
