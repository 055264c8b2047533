"""cpu strategies for softmax and layer norm.

softmax: in one buffer (12) against the reference's fresh temporaries (10). layer norm over the
last axis: the reference's two passes, in one buffer (10), against one pass of float64-accumulated
moments (5). batch norm: one per-channel scale and shift, computed once for constant statistics
(12), against the reference's four passes (10).
"""

from __future__ import annotations

from typing import Sequence

from ir.attrs import Attrs
from ir.op.registry import get_op
from ir.types import Type

from ..kernels import norm as kernels
from ..strategy import OpStrategy
from ..target import Target
from .generic import host_reference, no_knobs

__all__ = ["softmax_strategy_cpu", "layer_norm_strategy_cpu", "batch_norm_strategy_cpu",
           "add_layer_norm_implementations"]


_SOFTMAX = kernels.softmax_compute()
_BATCH_NORM = kernels.batch_norm_compute()
_TWO_PASS = {"nn.layer_norm": kernels.layer_norm_compute(), "nn.skip_layer_norm": kernels.layer_norm_compute(skip=True)}


def softmax_strategy_cpu(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
    s = OpStrategy()
    s.add_implementation(_SOFTMAX, no_knobs, name="softmax_inplace.cpu", plevel=12)
    s.add_implementation(host_reference("nn.softmax"), no_knobs, name="softmax_reference.cpu", plevel=10)
    return s


def add_layer_norm_implementations(s: OpStrategy, op_name: str, attrs: Attrs, in_types: Sequence[Type],
                                   suffix: str) -> None:
    """The two-pass (the reference's operations) and, over the last axis, one-pass layer norm of `op_name`."""
    prefix = op_name.split(".")[1]
    s.add_implementation(_TWO_PASS[op_name], no_knobs, name=f"{prefix}_two_pass.{suffix}", plevel=10)
    if attrs.axis in (-1, in_types[0].ndim - 1):
        skip = op_name == "nn.skip_layer_norm"

        def one_pass(attrs, inputs, out_type, config):
            data = inputs[0] + inputs[1] if skip else inputs[0]
            return kernels.layer_norm_one_pass(attrs, data, *inputs[-2:])
        s.add_implementation(one_pass, no_knobs, name=f"{prefix}_one_pass.{suffix}", plevel=5)


def layer_norm_strategy_cpu(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
    s = OpStrategy()
    add_layer_norm_implementations(s, "nn.layer_norm", attrs, in_types, "cpu")
    return s


def batch_norm_strategy_cpu(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
    s = OpStrategy()
    s.add_implementation(_BATCH_NORM, no_knobs, name="batch_norm_affine.cpu", plevel=12)
    s.add_implementation(host_reference("nn.batch_norm"), no_knobs, name="batch_norm_reference.cpu", plevel=10)
    return s


get_op("nn.softmax").get_attr("FTVMStrategy").register("cpu", softmax_strategy_cpu, override=True)
get_op("nn.layer_norm").get_attr("FTVMStrategy").register("cpu", layer_norm_strategy_cpu, override=True)
get_op("nn.batch_norm").get_attr("FTVMStrategy").register("cpu", batch_norm_strategy_cpu, override=True)
