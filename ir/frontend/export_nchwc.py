"""Emitters of `layout_transform` and the blocked convolutions: standard ONNX, or ONNX Runtime's NCHWc kernels.

Standard ONNX (any block size, runs anywhere): a layout change is Transpose and Reshape nodes, a
blocked convolution its operands laid out as NCHW / OIHW around a `Conv`.

With `to_onnx(contrib=True)`, float32 programs use ONNX Runtime's CPU kernels of the
`com.microsoft.nchwc` domain, whose channel block is the machine's (MLAS: 16 where AVX-512 is
available, else 8 on x86; `ir.frontend.ort_nchwc.ort_nchwc_block_size()` asks the installed ONNX Runtime):

    layout_transform NCHW -> NCHW{B}c      ReorderInput(x)                (NHWC -> NCHW{B}c: channels_last=1)
    layout_transform NCHW{B}c -> NCHW      ReorderOutput(x; channels)     (-> NHWC: channels_last=1)
    nn.contrib_conv2d_NCHWc*               Conv(X, W[, B[, Sum]]; activation)
    nn.max_pool3d / nn.avg_pool3d          MaxPool / AveragePool / GlobalAveragePool, where the 3-D pool is a
                                           2-D pool of NCHW{B}c data read as NDHWC (`blocked_pool2d`)
    concatenate of NCHW{B}c values, axis 1 Concat(axis=1) of the 4-D blocked tensors

ONNX Runtime holds a blocked tensor as 4-D (N, C, H, W) in blocked order; the program's value is
the IR's 5-D `(N, C // B, H, W, B)`, so Reshape nodes (which alias, not copy) turn one into the
other around each NCHWc node. A weight in `OIHW{B}i{B}o` (`OIHW{B}o` for unblocked input,
`OIHW1i{B}o` for a depthwise convolution) is the filter order MLAS reorders weights to, so it is
handed over as it is. A program blocked for another block size than this machine's is refused: its
NCHWc nodes would read the blocks wrongly (optimize it again here, or export with `contrib=False`).
An exported model carries a guard that makes ONNX Runtime on a machine with another block size
fail at the first run with an error naming the block size (`NCHWc_block_size_must_be_16`).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import onnx

from ..attrs import Attrs
from ..expr import Call, Expr
from ..op.layout import BLOCKED_CONVS, parse_layout, primal_axes
from ..op.nchwc import channel_block, channel_crop, channel_padding, ort_conv_block
from ..types import Any, Dim
from .errors import FrontendError
from .export_context import EMITTERS, EmitContext, Value, emits
from .export_contrib import CONTRIB_EMITTERS
from .export_elemwise import hard_swish
from .export_nn import ACTIVATION_PARAMS, ONNX_ACTIVATIONS, activation_node
from .ort_nchwc import NCHWC_DOMAIN, ort_nchwc_block_size

__all__ = ["NCHWC_DOMAIN", "ort_nchwc_block_size", "blocked_pool2d", "relayout"]


# -- standard ONNX ---------------------------------------------------------------------------------

def _sizes(dims: Sequence[Dim], what: str) -> list[int]:
    """`dims` as a Reshape target: a symbolic one (at most one) as -1."""
    if sum(not isinstance(d, int) for d in dims) > 1:
        raise FrontendError(f"{what}: a layout change of shape {tuple(dims)} needs at most one symbolic dimension")
    return [d if isinstance(d, int) else -1 for d in dims]


def relayout(ctx: EmitContext, name: str, shape: Sequence[Dim], src: str, dst: str) -> str:
    """`name` (of `shape`, laid out as `src`) laid out as `dst` with Transpose and Reshape nodes."""
    axes = parse_layout(src)
    letters = [a for a, _ in axes]
    order, primal_shape = [], []
    for letter in primal_axes(src):  # merge each block back into its primal axis
        picked = [letters.index(letter)] + ([letters.index(letter.lower())] if letter.lower() in letters else [])
        order += picked
        dims = [shape[i] for i in picked]
        primal_shape.append(int(np.prod(dims)) if all(isinstance(d, int) for d in dims) else Any)
    if order != sorted(order):
        name = ctx.node("Transpose", [name], perm=order)
    if len(primal_shape) != len(shape):
        name = ctx.node("Reshape", [name, ctx.ints(_sizes(primal_shape, f"{src} -> {dst}"))])
    source, target = primal_axes(src), primal_axes(dst)
    perm = [source.index(p) for p in target]
    if perm != sorted(perm):
        name = ctx.node("Transpose", [name], perm=perm)
    blocks = {a.upper(): b for a, b in parse_layout(dst) if b is not None}
    if not blocks:
        return name
    split_shape, split_letters = [], []
    for letter in target:
        size, block = primal_shape[source.index(letter)], blocks.get(letter)
        split_shape += [size] if block is None else [size // block if isinstance(size, int) else Any, block]
        split_letters += [letter] if block is None else [letter, letter.lower()]
    name = ctx.node("Reshape", [name, ctx.ints(_sizes(split_shape, f"{src} -> {dst}"))])
    final = [split_letters.index(a) for a, _ in parse_layout(dst)]
    return name if final == sorted(final) else ctx.node("Transpose", [name], perm=final)


@emits("layout_transform")
def emit_layout_transform(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    return relayout(ctx, args[0], ctx.type_of(call.args[0]).shape, call.attrs.src_layout, call.attrs.dst_layout)


def _conv_attrs(call: Call, kernel: Sequence[int]) -> dict:
    attrs = call.attrs
    return dict(kernel_shape=list(kernel), strides=list(attrs.strides), pads=list(attrs.padding),
                dilations=list(attrs.dilation), group=attrs.groups)


def _activation(call: Call) -> str:
    """The activation a blocked convolution applies ("none" for the plain one)."""
    return "none" if call.op.name == "nn.contrib_conv2d_NCHWc" else call.attrs.activation


def _standard_activation(ctx: EmitContext, call: Call, out: str) -> str:
    """`out` through the blocked convolution's activation, as standard ONNX nodes."""
    activation, dtype = _activation(call), ctx.type_of(call).dtype
    if activation == "hard_swish":
        return hard_swish(ctx, out, dtype)
    return out if activation == "none" else activation_node(ctx, out, call.attrs, dtype)


#: ONNX Runtime's NCHWc Conv activations with their parameters
_NCHWC_ACTIVATIONS = {**{act: (name, ACTIVATION_PARAMS.get(act, ())) for act, name in ONNX_ACTIVATIONS.items()},
                      "hard_swish": ("HardSwish", ())}


@emits(*BLOCKED_CONVS)
def emit_blocked_conv(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    attrs = call.attrs
    out_layout = attrs.out_layout or attrs.data_layout
    data = relayout(ctx, args[0], ctx.type_of(call.args[0]).shape, attrs.data_layout, "NCHW")
    weight_shape = ctx.static_shape(call.args[1], "the kernel")
    weight = relayout(ctx, args[1], weight_shape, attrs.kernel_layout, "OIHW")
    kernel = [weight_shape[[a for a, _ in parse_layout(attrs.kernel_layout)].index(ch)] for ch in "HW"]
    out = ctx.node("Conv", [data, weight, *args[2:3]], **_conv_attrs(call, kernel))
    out_shape = ctx.type_of(call).shape
    if call.op.name.endswith("_sum_act"):
        out = ctx.node("Add", [out, relayout(ctx, args[3], out_shape, out_layout, "NCHW")])
    out = _standard_activation(ctx, call, out)
    plain = [out_shape[0], int(np.prod([d for i, d in enumerate(out_shape) if i not in (0, 2, 3)])),
             out_shape[2], out_shape[3]]
    return relayout(ctx, out, plain, "NCHW", out_layout)


# -- ONNX Runtime's NCHWc kernels ------------------------------------------------------------------

def _machine_block(ctx: EmitContext, call: Call, block: int) -> bool:
    """Whether this machine's ONNX Runtime works in blocks of `block`; refuses another block size."""
    machine = ort_nchwc_block_size()
    if machine is None:
        return False
    if block != machine:
        raise FrontendError(f"{call.op.name} works in channel blocks of {block}, but ONNX Runtime's NCHWc kernels "
                            f"on this machine use blocks of {machine}: optimize the program again on this machine, "
                            f"or export it with contrib=False (standard ONNX)")
    _guard(ctx, block)
    return True


def _guard(ctx: EmitContext, block: int) -> None:
    """Once per model: nodes that fail, naming the block size, where ONNX Runtime's block is another one.

    ReorderInput pads 4 channels to one block of the running machine; reshaping that to `block`
    values fails elsewhere, so a model carried to a machine with another block size stops at its
    first run (ONNX Runtime runs every node, used or not) instead of reading blocks wrongly.
    """
    name = f"NCHWc_block_size_must_be_{block}"
    try:
        ctx.names.reserve(name)
    except FrontendError:  # already guarded
        return
    padded = ctx.node("ReorderInput", [ctx.const(np.ones((1, 4, 1, 1), np.float32))], domain=NCHWC_DOMAIN)
    ctx.nodes.append(onnx.helper.make_node("Reshape", [padded, ctx.ints([block])], [name], name=name))


def _float32(ctx: EmitContext, call: Call) -> bool:
    return ctx.type_of(call).dtype == "float32"


def _view(ctx: EmitContext, name: str, shape: Sequence[int]) -> str:
    """`name` reshaped (an alias, no copy) to `shape`, 0 keeping the input's size there; a weight is
    reshaped at export time."""
    value = ctx.value_of(name)
    if value is not None:
        return ctx.const(value.reshape([value.shape[i] if d == 0 else d for i, d in enumerate(shape)]))
    return ctx.node("Reshape", [name, ctx.ints(shape)])


def _blocked_view(ctx: EmitContext, flat: str, outer: Dim, block: int) -> str:
    """The IR's 5-D (N, C // B, H, W, B) view of ONNX Runtime's 4-D blocked tensor `flat` (C channels)."""
    out = _view(ctx, flat, [0, outer if isinstance(outer, int) else -1, 0, 0, block])
    ctx.views[out] = flat
    return out


def _flat_view(ctx: EmitContext, blocked: str, channels: int) -> str:
    """ONNX Runtime's 4-D (N, C, H, W) form of a 5-D blocked value: the tensor it is a view of where
    it is one (the view is then left out of the model unless something else reads it)."""
    return ctx.views.get(blocked) or _view(ctx, blocked, [0, channels, 0, 0])


def emit_reorder(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    """NCHW/NHWC <-> NCHW{B}c as ReorderInput / ReorderOutput (4-D float32, channels a multiple of B);
    ReorderInput pads data whose zero channels `emit_channel_pad` added itself."""
    src, dst = call.attrs.src_layout, call.attrs.dst_layout
    if not _float32(ctx, call) or ctx.type_of(call.args[0]).ndim not in (4, 5):
        return None
    for plain in ("NCHW", "NHWC"):
        if src == plain and (block := channel_block(dst, "NCHW")) is not None and _machine_block(ctx, call, block):
            data = ctx.bypassable.get(args[0], args[0]) if _op_name(call.args[0]) == "nn.pad" else args[0]
            out = ctx.node("ReorderInput", [data], domain=NCHWC_DOMAIN, channels_last=int(plain == "NHWC"))
            return _blocked_view(ctx, out, ctx.type_of(call).shape[1], block)
        if dst == plain and (block := channel_block(src, "NCHW")) is not None and _machine_block(ctx, call, block):
            outer = ctx.type_of(call.args[0]).shape[1]
            flat = _flat_view(ctx, args[0], outer * block)
            out = ctx.node("ReorderOutput", [flat], domain=NCHWC_DOMAIN, channels=outer * block,
                           channels_last=int(plain == "NHWC"))
            if plain == "NCHW":
                ctx.bypassable[out] = flat
            return out
    return None


def _op_name(expr: Expr) -> str | None:
    return expr.op.name if isinstance(expr, Call) and hasattr(expr.op, "name") else None


def emit_channel_pad(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    """A zero pad of float32 NCHW data's channels to whole blocks of this machine's NCHWc kernels, from a
    multiple of 4 (`ir.op.nchwc.channel_padding`): the standard Pad, which a ReorderInput after it reads
    past (`EmitContext.bypassable`)."""
    shape, block = ctx.type_of(call.args[0]).shape, ort_nchwc_block_size()
    if block is None or not _float32(ctx, call) or len(shape) != 4 or not channel_padding(call.attrs, shape[1], block):
        return None
    out = EMITTERS["nn.pad"](ctx, call, args)
    ctx.bypassable[out] = args[0]
    return out


def emit_channel_crop(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    """The first channels of a blocked value laid out as NCHW by ReorderOutput: one ReorderOutput that
    writes those channels alone (`ir.op.nchwc.channel_crop`)."""
    data = call.args[0]
    if _op_name(data) != "layout_transform" or args[0] not in ctx.bypassable or ctx.type_of(data).ndim != 4:
        return None
    channels = channel_crop(call.attrs)
    if channels is None or not 0 < channels <= ctx.type_of(data).shape[1]:
        return None
    return ctx.node("ReorderOutput", [ctx.bypassable[args[0]]], domain=NCHWC_DOMAIN, channels=channels,
                    channels_last=0)


#: element-wise ops whose ONNX nodes compute each element alone, whatever the shape
_ELEMENTWISE = frozenset({"nn.relu", "sigmoid", "tanh", "clip", "nn.leaky_relu", "nn.hard_sigmoid", "nn.hard_swish",
                          "nn.silu", "nn.gelu", "add", "subtract", "multiply"})


def on_blocked_tensors(ctx: EmitContext, call: Call, args: Sequence[Value],
                       emit: Callable[[EmitContext, Call, Sequence[Value]], Value]) -> Value | None:
    """An element-wise call of blocked values by `emit` on ONNX Runtime's 4-D blocked tensors (no
    Reshape runs before it, nor after it where an NCHWc node reads the result): operands of the call's
    own shape that are views of such tensors, and a blocked operand broadcast over the image (a
    squeeze-and-excitation gate) expanded to the whole shape first; None for any other call."""
    if call.op.name not in _ELEMENTWISE or any(not isinstance(a, str) for a in args):
        return None
    shape = ctx.type_of(call).shape
    if len(shape) != 5:
        return None
    flat = []
    for arg, value in zip(call.args, args):
        if ctx.type_of(arg).shape == shape and value in ctx.views:
            flat.append(ctx.views[value])
        elif _spatially_broadcast(ctx.type_of(arg).shape, shape):
            flat.append(_flat_view(ctx, ctx.node("Expand", [value, ctx.ints(shape)]), shape[1] * shape[4]))
        else:
            return None
    return _blocked_view(ctx, emit(ctx, call, flat), shape[1], shape[4])


def _spatially_broadcast(operand: Sequence[Dim], shape: Sequence[Dim]) -> bool:
    """Whether a blocked operand of shape `operand` broadcasts to the static `shape` over the image only:
    ONNX Runtime broadcasts it a block at a time, 2.6-3.9x slower (blocks of 8) than expanding it and
    multiplying tensors of one shape."""
    return (len(operand) == 5 and all(isinstance(d, int) for d in shape) and tuple(operand) != tuple(shape)
            and all(operand[i] == shape[i] for i in (0, 1, 4)) and all(operand[i] in (1, shape[i]) for i in (2, 3)))


def emit_nchwc_conv(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    """A blocked convolution as ONNX Runtime's NCHWc Conv (bias, activation and Sum fused)."""
    attrs = call.attrs
    if not _float32(ctx, call) or attrs.out_dtype not in ("", "float32"):
        return None
    data_shape, out_shape = ctx.type_of(call.args[0]).shape, ctx.type_of(call).shape
    in_channels = data_shape[1] * (data_shape[4] if len(data_shape) == 5 else 1)
    out_channels = out_shape[1] * out_shape[4] if len(out_shape) == 5 else out_shape[1]
    if not (isinstance(in_channels, int) and isinstance(out_channels, int)):
        return None
    block = ort_conv_block(attrs, in_channels, out_channels)
    if block is None or not _machine_block(ctx, call, block):
        return None
    weight_shape = ctx.static_shape(call.args[1], "the kernel")
    kh, kw = weight_shape[2], weight_shape[3]
    data = args[0] if attrs.data_layout == "NCHW" else _flat_view(ctx, args[0], in_channels)
    weight = _view(ctx, args[1], [out_channels, in_channels // attrs.groups, kh, kw])
    inputs = [data, weight]
    if call.op.name != "nn.contrib_conv2d_NCHWc":
        inputs.append(args[2])
    if call.op.name.endswith("_sum_act"):
        inputs.append(_flat_view(ctx, args[3], out_channels))
    activation, extra = _activation(call), {}
    if activation != "none":
        name, params = _NCHWC_ACTIVATIONS[activation]
        extra["activation"] = name
        if params:
            extra["activation_params"] = [float(getattr(attrs, k)) for k in params]
    out = ctx.node("Conv", inputs, domain=NCHWC_DOMAIN, **_conv_attrs(call, [kh, kw]), **extra)
    return _blocked_view(ctx, out, out_shape[1], block)


def blocked_pool2d(attrs: Attrs, data_shape: Sequence[Dim]) -> bool:
    """Whether a 3-D pool is a 2-D pool of NCHW{B}c data read as NDHWC (channel blocks as depth, the block
    as channels): layout NDHWC, a window of depth 1 that steps one block at a time, no depth padding."""
    return (attrs.layout == "NDHWC" and len(data_shape) == 5 and attrs.pool_size[0] == 1 and attrs.strides[0] == 1
            and attrs.dilation[0] == 1 and attrs.padding[0] == attrs.padding[3] == 0)


def emit_nchwc_pool(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    """A blocked 2-D pool (`blocked_pool2d`) as ONNX Runtime's NCHWc MaxPool, AveragePool or GlobalAveragePool."""
    attrs = call.attrs
    if not _float32(ctx, call):
        return None
    data_shape = ctx.type_of(call.args[0]).shape
    if not blocked_pool2d(attrs, data_shape) or data_shape[4] != ort_nchwc_block_size():
        return None
    _, outer, h, w, block = data_shape
    _guard(ctx, block)
    data = _flat_view(ctx, args[0], outer * block)
    pads = [attrs.padding[1], attrs.padding[2], attrs.padding[4], attrs.padding[5]]
    if call.op.name == "nn.avg_pool3d" and tuple(attrs.pool_size[1:]) == (h, w) and not any(pads):
        out = ctx.node("GlobalAveragePool", [data], domain=NCHWC_DOMAIN)
    else:
        window = dict(kernel_shape=list(attrs.pool_size[1:]), strides=list(attrs.strides[1:]), pads=pads,
                      ceil_mode=int(attrs.ceil_mode))
        if call.op.name == "nn.max_pool3d":
            out = ctx.node("MaxPool", [data], domain=NCHWC_DOMAIN, dilations=list(attrs.dilation[1:]), **window)
        else:
            out = ctx.node("AveragePool", [data], domain=NCHWC_DOMAIN,
                           count_include_pad=int(attrs.count_include_pad), **window)
    return _blocked_view(ctx, out, outer, block)


def emit_nchwc_concat(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value | None:
    """Blocked values that NCHWc nodes made, concatenated along the block axis, as `Concat` of ONNX
    Runtime's 4-D blocked tensors along channels: each part holds whole blocks, so per image its
    blocks follow the previous part's in memory as its channels do, and no Reshape runs around it."""
    shape, parts = ctx.type_of(call).shape, args[0]
    if len(shape) != 5 or call.attrs.axis not in (1, -4) or not all(p in ctx.views for p in parts):
        return None
    return _blocked_view(ctx, ctx.node("Concat", [ctx.views[p] for p in parts], axis=1), shape[1], shape[4])


CONTRIB_EMITTERS["concatenate"] = emit_nchwc_concat
CONTRIB_EMITTERS["layout_transform"] = emit_reorder
CONTRIB_EMITTERS["nn.pad"] = emit_channel_pad
CONTRIB_EMITTERS["strided_slice"] = emit_channel_crop
CONTRIB_EMITTERS["nn.max_pool3d"] = emit_nchwc_pool
CONTRIB_EMITTERS["nn.avg_pool3d"] = emit_nchwc_pool
for _name in BLOCKED_CONVS:
    CONTRIB_EMITTERS[_name] = emit_nchwc_conv
