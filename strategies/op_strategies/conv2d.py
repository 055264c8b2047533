"""cpu strategies for `nn.conv2d` and the fused `nn.conv2d_bias_act` (four algorithms compete), for
`nn.conv1d` / `nn.conv3d` (the direct algorithm, which works in any spatial rank) and for the
transposed convolutions (per-tap GEMMs).

Untuned priorities (measured on a two-core x86 host with OpenBLAS, one BLAS thread): a 1x1 kernel
as a plain GEMM (20) beats everything it applies to; depthwise convolutions run best as per-tap
multiply-adds (direct, 18); Winograd F(2x2, 3x3) with pre-transformed weights (15) wins from 128
input channels on 28+ rows (ResNet-50's 28x28x128 layers: about 10% faster in the whole model);
below that its tile transforms cost about as many memory passes as the multiplications save (4);
otherwise im2col + GEMM (10) beats the per-tap GEMMs of the direct form (6). Tuning measures
them all.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ir.attrs import Attrs
from ir.op.nn import KERNEL_LAYOUTS, LAYOUTS
from ir.op.registry import get_op
from ir.types import TensorType, Type

from ..condition import InputDim, SpecializedCondition
from ..kernels import conv2d as kernels
from ..kernels import conv_transpose as transpose_kernels
from ..roofline import Work
from ..strategy import ConfigSpace, OpStrategy
from ..target import Target
from ..work import conv_macs, dim_size, numel, op_work
from .generic import host_reference, no_knobs

__all__ = ["conv2d_strategy_cpu", "conv_nd_strategy_cpu", "conv_transpose_strategy_cpu", "kernel_hw"]


def kernel_hw(attrs: Attrs, weight: TensorType) -> tuple[int, int]:
    """The (KH, KW) of a convolution weight in the call's kernel layout."""
    _, _, kh_axis, kw_axis = KERNEL_LAYOUTS[attrs.kernel_layout]
    return weight.shape[kh_axis], weight.shape[kw_axis]


def _schedule_im2col(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> ConfigSpace:
    batch = in_types[0].shape[0]
    return ConfigSpace(fold_batch=(False, True)) if not isinstance(batch, int) or batch > 1 else ConfigSpace()


def _schedule_direct(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> ConfigSpace:
    out_per_group = out_type.shape[LAYOUTS[attrs.data_layout][0]] // attrs.groups
    blocks = [b for b in (32, 128) if b < out_per_group]
    return ConfigSpace(oc_block=(None, *blocks))


def _estimate(algorithm: str):
    """The roofline work of one algorithm: the op's count, adjusted for what the algorithm does."""
    def estimate(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> Work:
        base = op_work("nn.conv2d", attrs, in_types, out_type)
        if algorithm == "gemm_1x1":
            return base.scaled(efficiency=0.95)
        weight = in_types[1]
        taps = math.prod(dim_size(weight.shape[a]) for a in KERNEL_LAYOUTS[attrs.kernel_layout][2:])
        c_axis, *spatial = LAYOUTS[attrs.data_layout]
        in_c, out_c = dim_size(in_types[0].shape[c_axis]), dim_size(out_type.shape[c_axis])
        itemsize = np.dtype(out_type.dtype).itemsize
        pixels = numel(out_type) // out_c                       # N x output positions
        columns = pixels * in_c * taps * itemsize               # the column matrix, or all tap copies
        if algorithm == "im2col":
            return base.scaled(efficiency=0.85) + Work(0.0, 2.0 * columns, launches=taps)
        if algorithm == "direct":
            return base.scaled(efficiency=0.6) + Work(0.0, 2.0 * columns, launches=2 * taps)
        h_axis, w_axis = spatial
        tiles = (dim_size(out_type.shape[0]) * math.ceil(dim_size(out_type.shape[h_axis]) / 2)
                 * math.ceil(dim_size(out_type.shape[w_axis]) / 2))
        macs = conv_macs(attrs, in_types, out_type) * 16 / 36    # 4x4 products per 2x2 outputs, not 4 x 9
        transform_flops = tiles * (32 * in_c + 24 * out_c) + 28 * in_c * out_c
        transformed = 16 * (tiles * (in_c + out_c) + in_c * out_c) * itemsize
        return Work(2.0 * macs + transform_flops, base.bytes + 2.0 * transformed, launches=40, efficiency=0.7)
    return estimate


_SCHEDULES = {"im2col": _schedule_im2col, "direct": _schedule_direct, "winograd": no_knobs, "gemm_1x1": no_knobs}


def _winograd_wins(attrs: Attrs, data: TensorType) -> bool:
    """Whether Winograd beats im2col untuned: 128+ input channels on 28+ rows (static shapes only)."""
    channel_axis, h_axis, _ = LAYOUTS[attrs.data_layout]
    channels, rows = data.shape[channel_axis], data.shape[h_axis]
    return isinstance(channels, int) and isinstance(rows, int) and channels >= 128 and rows >= 28


def conv2d_strategy_cpu(op_name: str):
    """The cpu strategy of `nn.conv2d` or `nn.conv2d_bias_act`."""
    fused = op_name == "nn.conv2d_bias_act"
    computes = {algorithm: kernels.conv2d_compute(algorithm, fused) for algorithm in kernels.ALGORITHMS}
    prefix = op_name.split(".")[1]

    def add(strategy: OpStrategy, algorithm: str, plevel: int) -> None:
        strategy.add_implementation(computes[algorithm], _SCHEDULES[algorithm], name=f"{prefix}_{algorithm}.cpu",
                                    plevel=plevel, estimate=_estimate(algorithm))

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        hw = kernel_hw(attrs, in_types[1])
        channel_axis = LAYOUTS[attrs.data_layout][0]
        in_channels = in_types[0].shape[channel_axis]
        depthwise = isinstance(in_channels, int) and kernels.is_depthwise(attrs, in_channels)
        add(s, "im2col", 10)
        add(s, "direct", 18 if depthwise else 6)
        if kernels.gemm_1x1_applies(attrs, hw):
            add(s, "gemm_1x1", 20)
        if kernels.winograd_applies(attrs, hw):
            # the tile transforms only pay off with enough channels to amortise them
            with SpecializedCondition(InputDim(0, channel_axis) >= 16):
                add(s, "winograd", 15 if _winograd_wins(attrs, in_types[0]) else 4)
        return s

    strategy.__name__ = f"{prefix}_strategy_cpu"
    return strategy


def conv_nd_strategy_cpu(op_name: str):
    """The cpu strategy of `nn.conv1d` or `nn.conv3d`: one GEMM per kernel tap (10) against the
    reference's einsum over materialised windows (0)."""
    direct, reference = kernels.conv2d_compute("direct"), host_reference(op_name)
    prefix = op_name.split(".")[1]

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        s.add_implementation(direct, _schedule_direct, name=f"{prefix}_direct.cpu", plevel=10,
                             estimate=_estimate("direct"))
        s.add_implementation(reference, no_knobs, name=f"{prefix}_windows.cpu", plevel=0)
        return s

    strategy.__name__ = f"{prefix}_strategy_cpu"
    return strategy


def _transpose_estimate(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> Work:
    """Per-tap GEMMs, each adding a [N, OC, input positions] block into the output."""
    base = op_work("nn.conv2d_transpose", attrs, in_types, out_type)
    taps = math.prod(dim_size(in_types[1].shape[a]) for a in KERNEL_LAYOUTS[attrs.kernel_layout][2:])
    c_axis = LAYOUTS[attrs.data_layout][0]
    block = numel(in_types[0]) // dim_size(in_types[0].shape[c_axis]) * dim_size(out_type.shape[c_axis])
    return base.scaled(efficiency=0.7) + Work(0.0, 2.0 * taps * block * np.dtype(out_type.dtype).itemsize,
                                              launches=taps)


def conv_transpose_strategy_cpu(op_name: str):
    """The cpu strategy of `nn.conv{1,2,3}d_transpose`: per-tap GEMMs (10) against the reference's per-tap
    einsum scatter (0)."""
    gemms, reference = transpose_kernels.conv_transpose_compute(), host_reference(op_name)
    prefix = op_name.split(".")[1]

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        s.add_implementation(gemms, no_knobs, name=f"{prefix}_gemm.cpu", plevel=10, estimate=_transpose_estimate)
        s.add_implementation(reference, no_knobs, name=f"{prefix}_scatter.cpu", plevel=0)
        return s

    strategy.__name__ = f"{prefix}_strategy_cpu"
    return strategy


for _op in ("nn.conv2d", "nn.conv2d_bias_act"):
    get_op(_op).get_attr("FTVMStrategy").register("cpu", conv2d_strategy_cpu(_op), override=_op == "nn.conv2d")
for _op in ("nn.conv1d", "nn.conv3d"):
    get_op(_op).get_attr("FTVMStrategy").register("cpu", conv_nd_strategy_cpu(_op), override=True)
for _op in ("nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose"):
    get_op(_op).get_attr("FTVMStrategy").register("cpu", conv_transpose_strategy_cpu(_op), override=True)
