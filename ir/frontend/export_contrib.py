"""Emitters of the fused forms as ONNX Runtime contrib ops (domain `com.microsoft`), for `to_onnx(contrib=True)`.

    nn.conv2d_bias_act  -> FusedConv(X, W, B; activation, activation_params)
    nn.dense_bias_act   -> FusedGemm(A, B, C; transB, activation, activation_alpha, activation_beta)
                           (over the rows; a clip stays Gemm + Clip: FusedGemm has no Clip)
    nn.fused_matmul     -> FusedMatMul(A, B; alpha, transA, transB)
    nn.bias_gelu        -> BiasGelu(A, B) exact, FastGelu(X, bias) tanh
    nn.gelu             -> Gelu(X) exact, FastGelu(X) tanh              (below opset 20, which has `Gelu`)
    nn.quick_gelu       -> QuickGelu(X; alpha)
    nn.silu             -> QuickGelu(X; alpha=1)

`nn.skip_layer_norm` keeps its standard form, `Add` and `LayerNormalization`: ONNX Runtime's
`SkipLayerNormalization` kernel ran 4x slower than those two (490 against 113 µs on 128 x 768
values, ONNX Runtime 1.32, optimizer on, 2 cores), and ONNX Runtime's optimizer fuses them into it
itself only for 3-D data, as it does for the original. Measured again with one thread and the
optimizer off (1 x 128 x 768 and 128 x 768): 673-729 against 124-248 µs; a residual sum before an RMS
norm stays `Add` and `RMSNormalization` for the same reason: `SkipSimplifiedLayerNormalization` took
128-254 against 91-175 µs (only a one-token row, 1 x 1 x 768, is even: 12.4 against 13.3 µs).
`nn.rms_norm` has no contrib form: ONNX Runtime registers `SimplifiedLayerNormalization` in the
standard domain only (where `onnx.checker` rejects it), not in `com.microsoft`; below opset 23
(`RMSNormalization`) its decomposition is the spelling ONNX Runtime's optimizer fuses into it.

ORT's CPU kernels of these ops run float32 and float16 (ONNX Runtime 1.32, optimizer off), and
each has shape limits. The activations (`BiasGelu`, `FastGelu`, `Gelu`, `QuickGelu`) are written
in both: in float16 they ran as fast as or faster than their spellings (one thread, 512 x 2816
values: `QuickGelu` 2.7 against 3.5 ms, `BiasGelu` 3.8 against 5.1, `FastGelu` 7.5 against 8.0),
and they agree within float16 rounding. `FusedConv`, `FusedGemm` and `FusedMatMul` are written in
float32 only: in float16 they ran no faster than the ops they fuse (`FusedGemm` 9.28 against
9.26 ms on 512 x 1024 x 1024). A contrib emitter returns None for a call it cannot express
(another dtype, shape or attribute setting, or an activation of "none" where the standard op is
already one node); the call is then exported as the standard-ONNX decomposition, so a contrib
export runs wherever ONNX Runtime does.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..expr import Call
from .export_context import CONTRIB_DOMAIN, EmitContext, Value
from .export_elemwise import GELU_OPSET
from .export_nn import (ACTIVATION_PARAMS, ONNX_ACTIVATIONS, cast_to, conv_nchw, from_nchw, gemm_over_rows,
                        rows_known_at_run_time)

__all__ = ["ContribEmitter", "CONTRIB_EMITTERS", "CONTRIB_OPSET", "KERNEL_DTYPES"]

ContribEmitter = Callable[[EmitContext, Call, Sequence[Value]], "Value | None"]

#: IR op name -> contrib emitter (None: fall back to the standard emitter)
CONTRIB_EMITTERS: dict[str, ContribEmitter] = {}

CONTRIB_OPSET = 1  # the version of the com.microsoft domain every op here is defined in

#: the dtypes the fused contractions are written in (float16 gained nothing, measured above)
_CONTRACTION_DTYPES = frozenset({"float32"})
#: the dtypes ORT's activation and rotary kernels run on the CPU, and are written in
KERNEL_DTYPES = frozenset({"float16", "float32"})


def _emits_contrib(op_name: str) -> Callable[[ContribEmitter], ContribEmitter]:
    def register(fn: ContribEmitter) -> ContribEmitter:
        CONTRIB_EMITTERS[op_name] = fn
        return fn
    return register


def _in(ctx: EmitContext, call: Call, dtypes: frozenset[str]) -> bool:
    return ctx.type_of(call).dtype in dtypes


def _activation(call: Call) -> tuple[str, list[float]] | None:
    """The ONNX name of the call's activation and its parameters (`ACTIVATION_PARAMS`); None for "none"."""
    act = call.attrs.activation
    if act == "none":
        return None
    return ONNX_ACTIVATIONS[act], [float(getattr(call.attrs, k)) for k in ACTIVATION_PARAMS.get(act, ())]


@_emits_contrib("nn.conv2d_bias_act")
def emit_fused_conv(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    activation = _activation(call)
    if activation is None or not _in(ctx, call, _CONTRACTION_DTYPES):
        return None
    name, params = activation
    out = conv_nchw(ctx, call, args, "FusedConv", domain=CONTRIB_DOMAIN, activation=name,
                    activation_params=params or None)
    return from_nchw(ctx, out, call.attrs.data_layout)


@_emits_contrib("nn.dense_bias_act")
def emit_fused_gemm(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    """FusedGemm, whose kernel takes every fused activation but Clip (ONNX Runtime 1.32: "unknown kernel type")."""
    activation = _activation(call)
    if (activation is None or call.attrs.activation == "clip" or not _in(ctx, call, _CONTRACTION_DTYPES)
            or ctx.type_of(call.args[0]).ndim < 2 or rows_known_at_run_time(ctx, call)):
        return None
    name, params = activation
    alpha, beta = (params + [None, None])[:2]
    data, weight, *bias = cast_to(ctx, args, call)
    b, trans_b = ctx.gemm_weight(weight)
    return gemm_over_rows(ctx, call, data, lambda rows: ctx.node(
        "FusedGemm", [rows, b, *bias], domain=CONTRIB_DOMAIN, transB=trans_b, activation=name,
        activation_alpha=alpha, activation_beta=beta))


@_emits_contrib("nn.fused_matmul")
def emit_fused_matmul(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    attrs = call.attrs
    transposed = [(attrs.transpose_a, call.args[0]), (attrs.transpose_b, call.args[1])]
    if not _in(ctx, call, _CONTRACTION_DTYPES) or any(t and ctx.type_of(a).ndim < 2 for t, a in transposed):
        return None
    return ctx.node("FusedMatMul", cast_to(ctx, args, call), domain=CONTRIB_DOMAIN, alpha=attrs.alpha,
                    transA=int(attrs.transpose_a), transB=int(attrs.transpose_b))


@_emits_contrib("nn.bias_gelu")
def emit_bias_gelu(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    if not _in(ctx, call, KERNEL_DTYPES):
        return None
    return ctx.node("FastGelu" if call.attrs.approximate == "tanh" else "BiasGelu", args, domain=CONTRIB_DOMAIN)


@_emits_contrib("nn.gelu")
def emit_gelu(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    if not _in(ctx, call, KERNEL_DTYPES) or ctx.opset >= GELU_OPSET:
        return None
    return ctx.node("FastGelu" if call.attrs.approximate == "tanh" else "Gelu", args, domain=CONTRIB_DOMAIN)


@_emits_contrib("nn.quick_gelu")
@_emits_contrib("nn.silu")
def emit_quick_gelu(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    if not _in(ctx, call, KERNEL_DTYPES):
        return None
    alpha = call.attrs.alpha if call.op.name == "nn.quick_gelu" else 1.0
    return ctx.node("QuickGelu", args, domain=CONTRIB_DOMAIN, alpha=alpha)
