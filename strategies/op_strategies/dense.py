"""cpu strategies for dense, matmul and batch_matmul (and the fused dense + bias + activation).

Untuned priorities (measured on a two-core x86 host with OpenBLAS): one BLAS GEMM per matrix (10)
wins almost everywhere; a row-blocked GEMM (5, only for 256+ rows) can win when its fused epilogue
stays in cache; einsum (1) runs its own loops and is an order of magnitude slower. For many small
matrices (8+ in the batch, at most 32 rows each), numpy's stacked matmul (12) saves the per-matrix
Python call and wins.
"""

from __future__ import annotations

import math
from functools import reduce
from typing import Sequence

from ir.attrs import Attrs
from ir.op.registry import get_op
from ir.types import Type

from ..condition import InputDim, ShapeExpr, SpecializedCondition
from ..kernels import dense as kernels
from ..kernels.prepared import PreparedCompute
from ..roofline import Work
from ..strategy import Compute, ConfigSpace, OpStrategy
from ..target import Target
from ..work import dim_size, numel, op_work
from .generic import no_knobs

__all__ = ["dense_strategy_cpu", "matmul_strategy_cpu", "rows_of"]

_EFFICIENCY = {"gemm": 0.9, "blocked": 0.85, "stacked": 0.6, "einsum": 0.15}


def rows_of(in_types: Sequence[Type]) -> ShapeExpr:
    """The GEMM rows of a dense call: the product of the data's leading dimensions."""
    return reduce(lambda acc, axis: acc * InputDim(0, axis), range(1, in_types[0].ndim - 1), InputDim(0, 0))


def _schedule_blocked(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> ConfigSpace:
    return ConfigSpace(tile_rows=(256, 64, 1024))


def _estimate(op_name: str, algorithm: str):
    def estimate(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> Work:
        base = op_work(op_name, attrs, in_types, out_type).scaled(efficiency=_EFFICIENCY[algorithm])
        if algorithm == "blocked":
            rows = numel(out_type) // dim_size(out_type.shape[-1])
            return Work(base.flops, base.bytes, math.ceil(rows / 256), base.efficiency)
        if algorithm == "gemm" and out_type.ndim > 2 and op_name not in ("nn.dense", "nn.dense_bias_act"):
            # a stack of products, one GEMM each; a dense layer's rows are one GEMM whatever their axes
            matrices = numel(out_type) // (dim_size(out_type.shape[-1]) * dim_size(out_type.shape[-2]))
            return Work(base.flops, base.bytes, matrices, base.efficiency)
        return base
    return estimate


def _add(strategy: OpStrategy, op_name: str, compute: Compute, algorithm: str, plevel: int,
         schedule=no_knobs) -> None:
    prefix = op_name.split(".")[1]
    strategy.add_implementation(compute, schedule, name=f"{prefix}_{algorithm}.cpu", plevel=plevel,
                                estimate=_estimate(op_name, algorithm))


def dense_strategy_cpu(op_name: str):
    """The cpu strategy of `nn.dense` or `nn.dense_bias_act`."""
    fused = op_name == "nn.dense_bias_act"
    computes = {algorithm: kernels.dense_compute(algorithm, fused) for algorithm in ("gemm", "einsum", "blocked")}

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        _add(s, op_name, computes["gemm"], "gemm", 10)
        _add(s, op_name, computes["einsum"], "einsum", 1)
        with SpecializedCondition(rows_of(in_types) >= 256):
            _add(s, op_name, computes["blocked"], "blocked", 5, _schedule_blocked)
        return s

    strategy.__name__ = f"{op_name.split('.')[1]}_strategy_cpu"
    return strategy


def matmul_strategy_cpu(op_name: str):
    """The cpu strategy of `nn.matmul`, `nn.batch_matmul` (or `nn.fused_matmul`)."""
    kernel = kernels.fused_matmul if op_name == "nn.fused_matmul" else kernels.matmul

    def compute(algorithm: str) -> PreparedCompute:
        return PreparedCompute.of(lambda attrs, inputs, out_type, config: kernel(algorithm, attrs, *inputs, config),
                                  f"{op_name.split('.')[1]}_{algorithm}")

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        _add(s, op_name, compute("gemm"), "gemm", 10)
        _add(s, op_name, compute("einsum"), "einsum", 1)
        if in_types[0].ndim == 3:
            rows = InputDim(0, 2 if attrs.transpose_a else 1)
            with SpecializedCondition([InputDim(0, 0) >= 8, rows <= 32]):
                _add(s, op_name, compute("stacked"), "stacked", 12)
        return s

    strategy.__name__ = f"{op_name.split('.')[1]}_strategy_cpu"
    return strategy


for _op in ("nn.dense", "nn.dense_bias_act"):
    get_op(_op).get_attr("FTVMStrategy").register("cpu", dense_strategy_cpu(_op), override=_op == "nn.dense")
for _op in ("nn.matmul", "nn.batch_matmul"):
    get_op(_op).get_attr("FTVMStrategy").register("cpu", matmul_strategy_cpu(_op), override=True)
