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

import dataclasses
from typing import Sequence

from ir.attrs import Attrs
from ir.op.nchwc import channel_crop, channel_padding, ort_conv_block
from ir.op.layout import BLOCKED_CONVS, logical_sizes, plain_conv_types
from ir.op.registry import get_op
from ir.types import TensorType, Type

from ..kernels.nchwc import blocked_conv_compute, plain_conv_attrs
from ..ort_timing import nchwc_block_size
from ..roofline import Work
from ..strategy import OpImplementation, OpStrategy
from ..target import Target
from ..work import nbytes, op_work
from .conv2d import conv2d_strategy_cpu
from .generic import REFERENCE_EFFICIENCY, host_reference, no_knobs

__all__ = ["NCHWC_EFFICIENCY", "PLAIN_CONV_EFFICIENCY", "REORDER_TRAFFIC", "runs_as_nchwc", "blocked_conv_strategy_cpu",
           "blocked_conv_strategy_ort", "plain_conv_strategy_ort", "ort_kernel_strategy"]

#: the share of the roofline ONNX Runtime's NCHWc convolution reaches
NCHWC_EFFICIENCY = 1.0
#: ONNX Runtime's reorders against the roofline's estimate of a copy: measured one thread, ten
#: ReorderInput / ReorderOutput pairs of 92 KB to 3 MB tensors, 25-38 GB/s of traffic where the roofline
#: takes 15 GB/s; so their estimate counts this share of the copy's bytes (and one launch, like every call)
REORDER_TRAFFIC = 0.45
#: ONNX Runtime's plain convolution (FusedConv) against the cpu strategy's estimate of the same
#: algorithm: measured one thread, ten chained layers, against the NCHWc Conv of the same layer (AVX2,
#: blocks of 8): 1.08-1.8x slower for 1x1 layers (116 channels at 28x28 to 480 at 1x1), 1.24-1.35x for
#: 3x3 ones (64 at 56x56, 128 at 28x28), 7-10x for depthwise 3x3 ones
PLAIN_CONV_EFFICIENCY = 0.8


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
    return block is not None and block == nchwc_block_size()


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
    """The ort strategy of `nn.conv2d` or `nn.conv2d_bias_act`: the cpu strategy without Winograd, at
    `PLAIN_CONV_EFFICIENCY` of its estimated rate."""
    cpu = conv2d_strategy_cpu(op_name)

    def slower(estimate):
        return lambda a, i, o: estimate(a, i, o).scaled(efficiency=PLAIN_CONV_EFFICIENCY)

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = cpu(attrs, in_types, out_type, target)
        for spec in s.specializations:
            spec.implementations = [dataclasses.replace(impl, estimate=slower(impl.estimate))
                                    for impl in spec.implementations if "winograd" not in impl.name]
        return s

    strategy.__name__ = f"{op_name.split('.', 1)[1]}_strategy_ort"
    return strategy


def _reorder_data(in_types: Sequence[Type]) -> TensorType | None:
    """The data of a call ONNX Runtime's reorders may do on this machine (float32), else None."""
    data = in_types[0]
    ok = isinstance(data, TensorType) and data.dtype == "float32" and nchwc_block_size() is not None
    return data if ok else None


def _runs_as_reorder(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> bool:
    """Whether a `layout_transform` is ONNX Runtime's ReorderInput or ReorderOutput on this machine:
    float32 NCHW or NHWC data to or from NCHW{B}c with the machine's block."""
    if _reorder_data(in_types) is None:
        return False
    pairs = {(plain, f"NCHW{nchwc_block_size()}c") for plain in ("NCHW", "NHWC")}
    return (attrs.src_layout, attrs.dst_layout) in pairs | {(b, a) for a, b in pairs}


def _pads_in_reorder(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> bool:
    """Whether an `nn.pad` adds the zero channels ONNX Runtime's ReorderInput adds itself to float32 NCHW
    data (`ir.op.nchwc.channel_padding`; `ir.frontend.export_nchwc` reads past it)."""
    data = _reorder_data(in_types)
    return data is not None and data.ndim == 4 and channel_padding(attrs, data.shape[1], nchwc_block_size())


def _crops_in_reorder(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> bool:
    """Whether a `strided_slice` crops float32 NCHW data of whole blocks to within one block, as ONNX
    Runtime's ReorderOutput does (`ir.op.nchwc.channel_crop`; `ir.frontend.export_nchwc` reads past it)."""
    data, block = _reorder_data(in_types), nchwc_block_size()
    if data is None or data.ndim != 4 or not isinstance(data.shape[1], int):
        return False
    full, kept = data.shape[1], channel_crop(attrs)
    return kept is not None and full % block == 0 and 0 < full - kept < block


def _reorder_estimate(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> Work:
    return op_work("layout_transform", attrs, in_types, out_type).scaled(bytes=REORDER_TRAFFIC)


def _free(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> Work:
    return Work(0.0, 0.0, launches=0)


def ort_kernel_strategy(op_name: str, applies, estimate, kernel: str):
    """The ort strategy of `op_name`: its shared strategy, plus, where `applies` holds, its highest
    implementation again under the name `kernel`, estimated by `estimate` (what ONNX Runtime's own
    kernel costs)."""
    shared = get_op(op_name).get_attr("FTVMStrategy").default

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = shared(attrs, in_types, out_type, target)
        if applies(attrs, in_types, out_type):
            best = max(s.implementations(), key=lambda i: i.plevel)
            s.add_implementation(best.compute, best.schedule, name=kernel, plevel=20, estimate=estimate)
        return s

    strategy.__name__ = f"{op_name.split('.')[-1]}_strategy_ort"
    return strategy


def _no_kernel(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
    return OpStrategy()


for _name in BLOCKED_CONVS:
    get_op(_name).get_attr("FTVMStrategy").register("ort", blocked_conv_strategy_ort(_name))
    get_op(_name).get_attr("FTVMStrategy").register("cpu", blocked_conv_strategy_cpu(_name), override=True)
    get_op(_name).get_attr("FTVMStrategy").register(["cuda", "generic"], _no_kernel, override=True)
for _name in ("nn.conv2d", "nn.conv2d_bias_act"):
    get_op(_name).get_attr("FTVMStrategy").register("ort", plain_conv_strategy_ort(_name))
# ONNX Runtime's reorders, and the channel pad and crop they do as they copy (free)
for _name, _applies, _estimate, _kernel in (
        ("layout_transform", _runs_as_reorder, _reorder_estimate, "layout_transform_reorder.ort"),
        ("nn.pad", _pads_in_reorder, _free, "pad_in_reorder.ort"),
        ("strided_slice", _crops_in_reorder, _free, "strided_slice_in_reorder.ort")):
    get_op(_name).get_attr("FTVMStrategy").register("ort", ort_kernel_strategy(_name, _applies, _estimate, _kernel))
