"""`nn.rotary_embedding` on the `ort` target only (ONNX Runtime's `RotaryEmbedding` contrib kernel,
float32 and float16 on the CPU), by its reference kernel on the host; other targets run its decomposition."""

from __future__ import annotations

from ir.op.registry import get_op

from ..kernels import rotary  # noqa: F401  (registers the reference kernel)
from .contrib import KERNEL_DTYPES, reference_strategy_ort

get_op("nn.rotary_embedding").get_attr("FTVMStrategy").register(
    "ort", reference_strategy_ort("nn.rotary_embedding", KERNEL_DTYPES))
