"""ONNX Runtime's fused contrib forms, for targets with the `ort` key (ONNX Runtime's kernels).

`nn.fused_matmul` (FusedMatMul), `nn.bias_gelu` (BiasGelu), `nn.skip_layer_norm`
(SkipLayerNormalization), `nn.attention` / `nn.masked_attention` / `nn.cached_attention` (ONNX
Attention, which ONNX Runtime runs from opset 23, with past and present keys and values for the last) and `nn.feed_forward` (Gemm, Gelu, Gemm in cache-sized column chunks)
have no generic strategy: a target runs them only if its keys say it
has such kernels, so the e-graph extracts them only for such a target (attention in float32 only:
`ATTENTION_DTYPES`). `nn.bias_gelu` is legal in
the dtypes ONNX Runtime's CPU kernels of BiasGelu and FastGelu run (`KERNEL_DTYPES`).
"""

from __future__ import annotations

from typing import Sequence

from ir.attrs import Attrs
from ir.op.registry import get_op
from ir.types import Type

from ..kernels import attention  # noqa: F401  (registers the attention ops' reference kernels)
from ..dtype_legality import first_dtype
from ..strategy import OpStrategy
from ..target import Target
from .dense import matmul_strategy_cpu
from .generic import host_reference, no_knobs
from .norm import add_layer_norm_implementations

__all__ = ["KERNEL_DTYPES", "reference_strategy_ort", "skip_layer_norm_strategy_ort"]

#: the dtypes ONNX Runtime 1.32 runs its activation and rotary contrib kernels in on the CPU (what
#: `ir.frontend.export_contrib` writes them in)
KERNEL_DTYPES = ("float32", "float16")
#: the dtypes ONNX `Attention` is written in (`ir.frontend.export_attention`: in float16 a row the mask
#: hides throughout is not the kernel's); in another the e-graph extracts attention as it is spelled
ATTENTION_DTYPES = ("float32",)


def reference_strategy_ort(op_name: str, dtypes: tuple[str, ...] | None = None):
    """The strategy of a fused op that ONNX Runtime runs as one kernel and the host runs by its reference;
    with `dtypes`, empty (the op illegal) for an output of another dtype."""
    compute = host_reference(op_name)
    short = op_name.split(".", 1)[1]

    def strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        s = OpStrategy()
        if dtypes is None or first_dtype([out_type]) in dtypes:  # a tuple's first field: cached attention's
            s.add_implementation(compute, no_knobs, name=f"{short}.ort", plevel=10)
        return s
    return strategy


def skip_layer_norm_strategy_ort(attrs: Attrs, in_types: Sequence[Type], out_type: Type,
                                 target: Target) -> OpStrategy:
    s = OpStrategy()
    add_layer_norm_implementations(s, "nn.skip_layer_norm", attrs, in_types, "ort")
    return s


get_op("nn.fused_matmul").get_attr("FTVMStrategy").register("ort", matmul_strategy_cpu("nn.fused_matmul"))
for _name in ("nn.attention", "nn.masked_attention", "nn.cached_attention"):
    get_op(_name).get_attr("FTVMStrategy").register("ort", reference_strategy_ort(_name, ATTENTION_DTYPES))
get_op("nn.feed_forward").get_attr("FTVMStrategy").register("ort", reference_strategy_ort("nn.feed_forward"))
get_op("nn.bias_gelu").get_attr("FTVMStrategy").register("ort", reference_strategy_ort("nn.bias_gelu", KERNEL_DTYPES))
get_op("nn.skip_layer_norm").get_attr("FTVMStrategy").register("ort", skip_layer_norm_strategy_ort)
