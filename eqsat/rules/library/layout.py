"""Blocked layouts as a choice: convolutions in NCHW{B}c, layout transforms moved outward and cancelled.

    conv2d(x, w)                          -> layout_transform(contrib_conv2d_NCHWc(layout_transform(x), w'), back)
                                             channels not whole blocks: padded with zeros on the way in
                                             (nn.pad), cropped on the way out (strided_slice)
    crop(dw_conv_NCHWc(lt(pad(crop(lt(a))))))  -> crop(dw_conv_NCHWc(a))         a depthwise convolution's kept
                                                                                 channels read no padding
    f(layout_transform(a))                -> layout_transform(f(a))              f element-wise
    f(layout_transform(a), layout_transform(b)) -> layout_transform(f(a, b))  add or multiply: one layout,
                                                                             b like a or broadcast over H, W
    add(layout_transform(a), c)           -> layout_transform(add(a, c'))         c per channel, c' blocked
    g(layout_transform(c), transpose(a))  -> transpose(g(layout_transform(c, NCHW{B}c -> NHWC), a))   add or
                                             multiply, a NHWC: the sum runs in the other operand's layout
    x * s + t                             -> layout_transform(depthwise 1x1 conv_NCHWc(layout_transform(x),
                                                             s, bias t))          s, t per channel (a batch
                                                                                 norm not after a conv)
    pool2d(layout_transform(a))           -> layout_transform(pool3d(a))          a read as NDHWC: blocks as depth
    mean(x, axis=[2, 3])                  -> global_avg_pool2d(x)                 (squeezed without keepdims)
    concatenate(layout_transform(a_i), axis=1) -> layout_transform(concatenate(a_i, axis=1))  whole blocks
    split(layout_transform(a), axis=1)[i] -> layout_transform(split(a, axis=1)[i])   at whole blocks
    layout_transform(layout_transform(x, A -> B), B -> A) -> x
    conv_NCHWc(...)                       -> layout_transform(layout_transform(conv_NCHWc(...), NCHW), back)
                                             the round trip, so blocked forms of one value share a class
    transpose(layout_transform(x, S -> NCHW), (0, 2, 3, 1)) -> layout_transform(x, S -> NHWC)   and the
    layout_transform(transpose(x, (0, 3, 1, 2)), NCHW -> D) -> layout_transform(x, NHWC -> D)    way back
    conv_NCHWc(x, w)                      -> conv_NCHWc(x, w, -0.0)               a bias that changes nothing
    act(conv_NCHWc(...) + bias [+ sum])   -> conv_NCHWc(...; activation)          ONNX Runtime's fused forms,
                                                                                 act relu, sigmoid, tanh,
                                                                                 leaky relu, clip, hard
                                                                                 sigmoid or hard swish

`B` is the channel block of ONNX Runtime's NCHWc kernels on this machine
(`strategies.ort_timing.nchwc_block_size`; 8 where ONNX Runtime is missing), so the blocked forms are
the ones the ort target runs. The weight
`w'` is `w` reordered once, as a constant. Every convolution gets a blocked twin wrapped in
transforms from and back to its own layout, so a blocked value never reaches a graph input or
output: the extractor keeps a region blocked only where the transforms between its convolutions
cancel. A blocked convolution computes the plain one's sums in the same order, element-wise ops
compute each element alone wherever the layout puts it, and a 2-D pool of NCHW{B}c data is the 3-D
pool of that array read as NDHWC, with windows of depth 1 (ONNX Runtime's NCHWc pools, see
`ir.frontend.export_nchwc`). Declared inexact: the global averages (numpy sums the blocked layout
in another order), the per-channel affine map (its convolution may fuse the multiply-add), the
padded convolutions (a sum of -0.0 plus a zero channel's +0.0 is +0.0), and every rule that hands
work to ONNX Runtime's NCHWc kernels (blocked convolutions, their fused activations and sums, the
pools): those round in their own order and propagate NaN by position, so the ort target's results
differ from the plain kernels' in the last bits (float32) or more (float16).

Channels that are not whole blocks pad as ONNX Runtime's layout pass pads them (a multiple of 4 that
ReorderInput reads, any count a convolution writes). A convolution's padding channels are zero only
while its input is finite (0 * inf is NaN), so a layer that sums over channels always reads data
padded afresh; only a depthwise layer, whose kept channels never read the padding, reads a padded
output as it is. ONNX Runtime's own pass lets every layer read it, which turns an infinity into NaN.

Not in `default`, which every target shares: only the ort target extracts the blocked forms, and
it saturates with `default` + `layout` (`eqsat.rules.library.default_rules`); the rules more than
double ResNet-50's saturation time. With ONNX Runtime's optimizer off they take the zoo's CNNs from
0.43-0.81x to 0.96-1.06x the original under ONNX Runtime's full optimizer, and with it on they are
within noise of the program without them (`benchmarks/results/targets.md`).
"""

from __future__ import annotations

import weakref
from typing import Callable

import numpy as np

from ir import Constant, Expr, relay
from ir.op.layout import OP_ACTIVATIONS, blocked_layout, parse_layout
from ir.op.nchwc import PaddedConv, channel_crop, channel_padding, nchwc_forms, padded_channels, padded_conv
from ir.op.shapes import normalize_axes
from ir.op.registry import make_call

from strategies.kernels.nchwc import transform_layout
from strategies.ort_timing import nchwc_block_size

from ..match import Match
from ..pattern import PVar, attr, call, choose, const_pat, many, nn, ops, pvars
from ..rule import Rewrite, rule, ruleset

__all__ = ["LAYOUT", "block_size"]

x, a, b, c, s, wt, bias = pvars("x a b c s wt bias")

#: element-wise ops of one input that commute with any layout change
_UNARY = ("nn.relu", "sigmoid", "tanh", "clip", "nn.leaky_relu", "nn.hard_sigmoid", "nn.hard_swish", "nn.silu")
#: element-wise ops that fuse into a blocked convolution: op -> (activation, the op's attributes it keeps)
_ACTIVATIONS = {"nn.relu": ("relu", ()), "sigmoid": ("sigmoid", ()), "tanh": ("tanh", ()),
                "nn.leaky_relu": ("leaky_relu", ("alpha",)),
                **{op: (activation, kept) for activation, (op, kept) in OP_ACTIVATIONS.items()}}
_EXAMPLE_ATTRS = {"clip": {"a_min": -1.0, "a_max": 1.0}, "nn.leaky_relu": {"alpha": 0.25},
                  "nn.hard_sigmoid": {"alpha": 0.25, "beta": 0.375}}
#: the channel count of the padded rules' examples: a multiple of 4, not of the block
_PADDED = 12
#: element-wise ops of two inputs that commute with a layout change of both
_BINARY = ("add", "multiply")


def block_size() -> int:
    """The channel block the rules introduce: this machine's ONNX Runtime NCHWc block, else 8."""
    return nchwc_block_size() or 8


def _lt(data: Expr, src: str, dst: str) -> Expr:
    return make_call("layout_transform", [data], {"src_layout": src, "dst_layout": dst})


#: (a weight's `Constant.digest`, its zero-padded shape, a blocked layout) -> that weight so laid out, while
#: anything holds it: the rules of the plain and the fused convolution block the same weights
_BLOCKED: weakref.WeakValueDictionary[tuple, Constant] = weakref.WeakValueDictionary()


def _blocked_weight(weight: Constant, shape: tuple[int, ...], layout: str) -> Constant:
    """`weight` (OIHW) zero-padded to `shape` and laid out as `layout`, made once per weight."""
    key = (weight.digest, shape, layout)
    blocked = _BLOCKED.get(key)
    if blocked is None:
        blocked = _BLOCKED[key] = relay.const(transform_layout(_zero_padded(np.asarray(weight.data), shape),
                                                               "OIHW", layout))
    return blocked


def _to_blocked(fused: bool, padded: bool = False):
    """The blocked twin of `nn.conv2d` (or `nn.conv2d_bias_act`) with a constant weight; with `padded`,
    the twin of one whose channels are not whole blocks, its channels padded with zeros (weights and
    bias too) on the way in and cropped on the way out (`ir.op.nchwc.padded_conv`)."""
    def build(m: Match) -> Expr | None:
        attrs, block = m["c"], block_size()
        if attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW" or attrs.out_dtype or m.ndim("x") != 4:
            return None
        weight, channels = m.const("w"), m.shape("x")[1]
        if not isinstance(channels, int):
            return None
        out_channels = weight.shape[0]
        if padded:
            form = padded_conv(channels, out_channels, attrs.groups, block)
            if form is None or (form.in_channels, form.out_channels) == (channels, out_channels):
                return None  # whole blocks: the unpadded rule's
        else:
            forms = nchwc_forms(channels, out_channels, attrs.groups, block)
            if forms is None:
                return None
            form = PaddedConv(channels, out_channels, attrs.groups, *forms)
        data = m.expr("x")
        if form.data_layout != "NCHW":
            data = _lt(_pad_channels(data, form.in_channels - channels), "NCHW", form.data_layout)
        kernel_shape = (form.out_channels, form.in_channels // form.groups, *weight.shape[2:])
        args = [data, _blocked_weight(m.constants["w"], kernel_shape, form.kernel_layout)]
        if fused:  # the padded rule binds a constant bias
            args.append(m.expr("bias") if form.out_channels == out_channels else
                        relay.const(_zero_padded(m.const("bias"), (form.out_channels,))))
        out_layout = blocked_layout("NCHW", "C", block)
        new_attrs = {**attrs, "channels": form.out_channels, "groups": form.groups, "data_layout": form.data_layout,
                     "kernel_layout": form.kernel_layout, "out_layout": out_layout}
        op = _BIAS_ACT if fused else "nn.contrib_conv2d_NCHWc"
        out = _lt(make_call(op, args, new_attrs), out_layout, "NCHW")
        return out if form.out_channels == out_channels else _crop_channels(out, out_channels)
    return build


def _zero_padded(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`values` in the leading corner of zeros of `shape`."""
    return np.pad(values, [(0, n - d) for d, n in zip(values.shape, shape)])


def _pad_channels(data: Expr, extra: int) -> Expr:
    """NCHW `data` with `extra` zero channels after its own (ReorderInput pads so)."""
    if not extra:
        return data
    return make_call("nn.pad", [data], {"pad_width": ((0, 0), (0, extra), (0, 0), (0, 0)), "pad_value": 0.0})


def _crop_channels(data: Expr, channels: int) -> Expr:
    """The first `channels` channels of NCHW `data` (ReorderOutput crops so)."""
    return make_call("strided_slice", [data], {"begin": [0], "end": [channels], "axes": [1]})


def _with_bias(m: Match) -> Expr:
    """The blocked convolution plus a bias of -0.0, which leaves every value, -0.0 included, as it is."""
    attrs = m["c"]
    channels = int(np.prod([d for i, d in enumerate(m.root_type().shape) if i not in (0, 2, 3)]))
    bias = relay.const(np.full(channels, -0.0, m.dtype("x")))
    return make_call(_BIAS_ACT, [m.expr("x"), m.expr("wt"), bias], {**attrs, "activation": "none"})


def _per_channel(m: Match, name: str, channels: int) -> np.ndarray | None:
    """Constant `name` as its `channels` values when it holds one per channel of NCHW data, else None."""
    c = m.const(name)
    return c.reshape(channels) if c.shape in ((channels, 1, 1), (1, channels, 1, 1)) else None


def _channel_constant(m: Match) -> Expr | None:
    """`c` laid out like the blocked data when it holds one value per channel: (C, 1, 1) or (1, C, 1, 1)."""
    src = _blocked_source(m)
    if src is None:
        return None
    channels = m.shape("a")[1] * m.shape("a")[-1]
    values = _per_channel(m, "c", channels)
    if m.dtype("c") != m.dtype("a") or values is None:
        return None
    blocked = transform_layout(values.reshape(1, channels, 1, 1), "NCHW", src)
    return _lt(make_call("add", [m.expr("a"), relay.const(blocked)]), src, "NCHW")


def _affine_to_blocked(m: Match) -> Expr | None:
    """`x * s + t` with `s`, `t` per channel as ONNX Runtime's blocked depthwise 1x1 convolution with a
    bias (its own form of a batch norm on blocked data), so an activation after it fuses too."""
    block, dtype = block_size(), m.dtype("x")
    channels = m.shape("x")[1] if m.ndim("x") == 4 else None
    if not isinstance(channels, int) or channels <= 0 or channels % block or dtype != "float32" \
            or m.dtype("s") != dtype:
        return None
    scale, shift = _per_channel(m, "s", channels), _per_channel(m, "t", channels)
    if scale is None or shift is None or m.dtype("t") != dtype:
        return None
    data_layout, kernel_layout = nchwc_forms(channels, channels, channels, block)
    weight = transform_layout(scale.reshape(channels, 1, 1, 1), "OIHW", kernel_layout)
    attrs = {"channels": channels, "kernel_size": (1, 1), "groups": channels, "data_layout": data_layout,
             "kernel_layout": kernel_layout, "out_layout": data_layout, "activation": "none"}
    conv = make_call(_BIAS_ACT, [_lt(m.expr("x"), "NCHW", data_layout), relay.const(weight), relay.const(shift)],
                     attrs)
    return _lt(conv, data_layout, "NCHW")


def _reads_own_padding(m: Match) -> bool:
    """Whether the matched depthwise blocked convolution `f` reads blocked `a` cropped to its first
    channels and padded back with zeros, and its own output is cropped to those channels too: a
    depthwise output channel reads its own input channel alone, so the kept channels are the same when
    `f` reads `a` with whatever its padding channels hold."""
    src = _blocked_source_of(m, "l1", "a")
    if src is None or (m["l2"].src_layout, m["l2"].dst_layout) != ("NCHW", src) or m["l3"].dst_layout != "NCHW":
        return False
    block, kept, out = m.shape("a")[-1], channel_crop(m["crop"]), channel_crop(m["out"])
    padded = m.shape("a")[1] * block
    return (kept is not None and channel_padding(m["pad"], kept, block) and padded_channels(kept, block) == padded
            and m["f"].groups == padded and m["f"].kernel_layout.startswith("OIHW1i")
            and out is not None and out <= kept)


def _mean_over_image(m: Match) -> bool:
    """A mean of float32 NCHW data over its image: a global average pool (squeezed when the mean drops the
    image axes, as MNASNet's and RegNet's heads do), which runs on blocked data too."""
    attrs = m["r"]
    return (m.ndim("x") == 4 and not attrs.exclude and normalize_axes(attrs.axis, 4) == (2, 3)
            and m.dtype("x") == "float32")


def _blocked_source(m: Match) -> str | None:
    """The layout of `a` when the matched transform `lt` takes NCHW{B}c data `a` back to NCHW, else None."""
    return _blocked_source_of(m, "lt", "a")


def _blocked_source_of(m: Match, transform: str, data: str) -> str | None:
    src, dst = m[transform].src_layout, m[transform].dst_layout
    if dst != "NCHW" or m.ndim(data) != 5 or src != blocked_layout("NCHW", "C", m.shape(data)[-1]):
        return None
    return src


def _plain_pool(m: Match) -> bool:
    """The pool `p` reads NCHW{B}c data `a` laid out as NCHW, and writes NCHW."""
    return _blocked_source(m) is not None and m["p"].layout == "NCHW" and not m["p"].out_layout


def _pool3d_attrs(op: str) -> dict[str, Callable[[Match], object]]:
    """The attributes of the 3-D pool (NDHWC, windows of depth 1) that computes the 2-D pool `op` of `p`."""
    if op == "nn.global_avg_pool2d":
        return {"pool_size": lambda m: (1, *m.shape("a")[2:4])}
    attrs = {"pool_size": lambda m: (1, *m["p"].pool_size), "strides": lambda m: (1, *m["p"].strides),
             "dilation": lambda m: (1, *m["p"].dilation), "ceil_mode": attr("p", "ceil_mode"),
             "padding": lambda m: (0, *m["p"].padding[:2], 0, *m["p"].padding[2:])}
    if op == "nn.avg_pool2d":
        attrs["count_include_pad"] = attr("p", "count_include_pad")
    return attrs


def _concat_of_blocks(m: Match) -> bool:
    """Channel blocks of NCHW{B}c parts of one layout, concatenated along the block axis: the channels in order."""
    sources = {_blocked_source_of(m, lt, part) for lt, part in zip(m.each("l"), m.each("a"))}
    return len(sources) == 1 and None not in sources and m["cat"].axis in (1, -3)


def _block_bounds(m: Match) -> list[int] | None:
    """Where the split `sp` of NCHW{B}c data `a` (laid out as NCHW) cuts the channel blocks; None when
    it cuts elsewhere than at whole blocks along the channels."""
    split = m["sp"]
    if _blocked_source(m) is None or split.axis not in (1, -3):
        return None
    block, channels = m.shape("a")[-1], m.shape("a")[1] * m.shape("a")[-1]
    sections = split.indices_or_sections
    bounds = [channels // sections * i for i in range(1, sections)] if isinstance(sections, int) else sections
    return None if any(bound % block for bound in bounds) else [bound // block for bound in bounds]


def _same_layout(m: Match) -> bool:
    """Both operands laid out alike, of one dtype, `b` the shape of `a` or broadcast over its other axes
    than the channel blocks (a squeeze-and-excitation gate of shape (N, C, 1, 1)): broadcasting then
    pairs the same elements in either layout."""
    l1, l2 = m["l1"], m["l2"]
    if (l1.src_layout, l1.dst_layout) != (l2.src_layout, l2.dst_layout) or m.dtype("a") != m.dtype("b"):
        return False
    sa, sb = m.shape("a"), m.shape("b")
    if len(sa) != len(sb) or m.type("a") == m.type("b"):
        return m.type("a") == m.type("b")
    blocks = [i for i, (axis, _) in enumerate(parse_layout(l1.src_layout)) if axis.upper() == "C"]
    return len(sa) == 5 and all(sb[i] == sa[i] if i in blocks else sb[i] in (1, sa[i]) for i in range(5))


def _nchw_to_nhwc(m: Match) -> bool:
    """A blocked value laid out as NCHW, then transposed to NHWC: one layout change (ONNX Runtime's
    ReorderOutput writes NHWC itself)."""
    return m["lt"].dst_layout == "NCHW" and tuple(m["t"].axes or ()) == (0, 2, 3, 1)


def _nhwc_to_nchw(m: Match) -> bool:
    """NHWC data transposed to NCHW, then laid out blocked: one layout change (ReorderInput reads NHWC)."""
    return m["lt"].src_layout == "NCHW" and tuple(m["t"].axes or ()) == (0, 3, 1, 2)


def _nhwc_operand(m: Match) -> bool:
    """`g(lt(c, NCHW{B}c -> NCHW), transpose(a, (0, 3, 1, 2)))` (either order) is the transpose of `g` in
    NHWC, the blocked operand laid out as NHWC in one change: a residual sum whose other operand
    comes from NHWC runs in NHWC, and its transposes meet the next convolution's layout change."""
    if _blocked_source_of(m, "lt", "c") is None or tuple(m["t"].axes or ()) != (0, 3, 1, 2):
        return False
    n, blocks, height, width, block = m.shape("c")
    return (m.dtype("c") == m.dtype("a") and tuple(m.shape("a")) == (n, height, width, blocks * block)
            and tuple(m.root_type().shape) == (n, blocks * block, height, width))


def _inverse(m: Match) -> bool:
    return (m["l1"].src_layout, m["l1"].dst_layout) == (m["l2"].dst_layout, m["l2"].src_layout)


# -- examples (built when a test asks, so the block size is probed then) ----------------------------

def _image(channels: int, name: str = "x", size: int = 5) -> Expr:
    return relay.var(name, shape=(1, channels, size, size))


def _weight(out_channels: int, in_channels: int, seed: int = 0) -> Expr:
    rng = np.random.default_rng(seed)
    return relay.const(rng.standard_normal((out_channels, in_channels, 3, 3)).astype("float32"))


def _channel_values(channels: int, seed: int) -> Expr:
    """A (C, 1, 1) constant: one value per channel."""
    rng = np.random.default_rng(seed)
    return relay.const(rng.uniform(0.5, 1.5, (channels, 1, 1)).astype("float32"))


def _blocked_relu(name: str = "a", blocks: int = 2, size: int = 3) -> Expr:
    bl = blocked_layout("NCHW", "C", block_size())
    return _lt(relay.var(name, shape=(1, blocks, size, size, block_size())), bl, "NCHW")


def _blocked_conv(activation: str = "none", with_sum: bool = False) -> Expr:
    B = block_size()
    bl = blocked_layout("NCHW", "C", B)
    weight = relay.const(transform_layout(np.asarray(_weight(B, B).data), "OIHW", f"OIHW{B}i{B}o"))
    bias = relay.const(np.linspace(-1, 1, B).astype("float32"))
    attrs = {"padding": 1, "data_layout": bl, "kernel_layout": f"OIHW{B}i{B}o", "out_layout": bl,
             "activation": activation}
    data = relay.var("x", shape=(1, 1, 5, 5, B))
    if with_sum:
        residual = relay.var("s", shape=(1, 1, 5, 5, B))
        return make_call("nn.contrib_conv2d_NCHWc_bias_sum_act", [data, weight, bias, residual], attrs)
    return make_call("nn.contrib_conv2d_NCHWc_bias_act", [data, weight, bias], attrs)


def _blocked_conv_without_bias() -> Expr:
    B = block_size()
    weight = relay.const(transform_layout(np.asarray(_weight(B, B).data), "OIHW", f"OIHW{B}i{B}o"))
    bl = blocked_layout("NCHW", "C", B)
    return relay.nn.contrib_conv2d_NCHWc(relay.var("x", shape=(1, 1, 5, 5, B)), weight, padding=1, data_layout=bl,
                                         kernel_layout=f"OIHW{B}i{B}o", out_layout=bl)


def _through(op: str) -> Rewrite:
    return rule(f"{op}-through-layout-transform",
                call(op, ops.layout_transform(a)), ops.layout_transform(call(op, a)),
                example=lambda: make_call(op, [_blocked_relu()], _EXAMPLE_ATTRS.get(op, {})),
                near_miss=lambda: make_call(op, [relay.transpose(_image(4), (0, 2, 3, 1))], _EXAMPLE_ATTRS.get(op, {})))


def _binary_through(op: str) -> Rewrite:
    return rule(f"{op}-through-layout-transform",
                call(op, ops.layout_transform(a, bind_attrs="l1"), ops.layout_transform(b, bind_attrs="l2")),
                ops.layout_transform(call(op, a, b), attrs_from="l1"), when=_same_layout,
                example=lambda: make_call(op, [_blocked_relu("a"), _blocked_relu("b", size=1)]),
                near_miss=lambda: make_call(op, [_blocked_relu("a"), relay.transpose(
                    relay.var("b", shape=(1, 2 * block_size(), 3, 3)), (0, 1, 3, 2))]))


def _nhwc_operand_rule(op: str, blocked_first: bool) -> Rewrite:
    blocked, moved = ops.layout_transform(c, bind_attrs="lt"), ops.transpose(a, bind_attrs="t")

    def program(axes: tuple[int, ...]) -> Callable[[], Expr]:
        def build() -> Expr:
            nhwc = relay.transpose(relay.var("a", shape=(1, 3, 3, 2 * block_size())), axes)
            operands = [_blocked_relu("c"), nhwc]
            return make_call(op, operands if blocked_first else operands[::-1])
        return build

    order = "blocked-first" if blocked_first else "nhwc-first"
    nhwc = ops.layout_transform(c, dst_layout="NHWC")
    return rule(f"{op}-of-blocked-and-nhwc-{order}",
                call(op, blocked, moved) if blocked_first else call(op, moved, blocked),
                ops.transpose(call(op, nhwc, a) if blocked_first else call(op, a, nhwc), axes=(0, 3, 1, 2)),
                when=_nhwc_operand, example=program((0, 3, 1, 2)), near_miss=program((0, 3, 2, 1)))


def _pool_rule(op: str) -> Rewrite:
    attrs = {"nn.max_pool2d": {"pool_size": 3, "strides": 2, "padding": 1},
             "nn.avg_pool2d": {"pool_size": 2, "strides": 1, "padding": (1, 0, 0, 1), "count_include_pad": True}}
    kind = "nn.max_pool3d" if op == "nn.max_pool2d" else "nn.avg_pool3d"
    return rule(f"{op.split('.')[1]}-through-layout-transform",
                call(op, ops.layout_transform(a, bind_attrs="lt"), bind_attrs="p"),
                ops.layout_transform(call(kind, a, layout="NDHWC", **_pool3d_attrs(op))), when=_plain_pool,
                exact=False,
                example=lambda: make_call(op, [_blocked_relu()], attrs.get(op, {})),
                near_miss=lambda: make_call(op, [relay.layout_transform(_image(8), "NCHW", "NCHW")],
                                            attrs.get(op, {})))


def _split_rule(index: int) -> Rewrite:
    def split(first: int) -> Expr:
        bounds = [first + block_size() * k for k in range(index + 1)]
        return relay.split(_blocked_relu(blocks=index + 2), bounds, axis=1)[index]
    return rule(f"split{index}-through-layout-transform",
                ops.split(ops.layout_transform(a, bind_attrs="lt"), bind_attrs="sp")[index],
                ops.layout_transform(ops.split(a, indices_or_sections=_block_bounds, axis=1)[index]),
                when=lambda m: _block_bounds(m) is not None,
                example=lambda: split(block_size()), near_miss=lambda: split(block_size() - 1))


def _fuse_activation(op: str, conv: str, inputs: tuple[PVar, ...]) -> Rewrite:
    """`conv` with the activation of the matched `op` (and the attributes it keeps) instead of none."""
    with_sum, (activation, kept) = conv == _SUM_ACT, _ACTIVATIONS[op]
    return rule(f"nchwc-{'sum-' if with_sum else ''}{activation}",
                call(op, call(conv, *inputs, activation="none"), bind_attrs="act"),
                call(conv, *inputs, activation=activation, **{k: attr("act", k) for k in kept}), exact=False,
                example=lambda: make_call(op, [_blocked_conv(with_sum=with_sum)], _EXAMPLE_ATTRS.get(op, {})),
                near_miss=lambda: make_call(op, [_blocked_conv("tanh" if op != "tanh" else "relu", with_sum=with_sum)],
                                            _EXAMPLE_ATTRS.get(op, {})))


def _padded_depthwise_rule(op: str, inputs: tuple[PVar, ...]) -> Rewrite:
    """A cropped depthwise blocked convolution of cropped and re-padded blocked data reads the data as
    it is (`_reads_own_padding`): no reorder between a padded convolution and a depthwise one after it."""
    cropped = ops.strided_slice(ops.layout_transform(a, bind_attrs="l1"), bind_attrs="crop")
    data = ops.layout_transform(nn.pad(cropped, bind_attrs="pad"), bind_attrs="l2")
    return rule(f"nchwc{'-bias-act' if op == _BIAS_ACT else ''}-depthwise-reads-padding",
                ops.strided_slice(ops.layout_transform(call(op, data, *inputs, bind_attrs="f"), bind_attrs="l3"),
                                  bind_attrs="out"),
                ops.strided_slice(ops.layout_transform(call(op, a, *inputs, attrs_from="f"), attrs_from="l3"),
                                  attrs_from="out"),
                when=_reads_own_padding, example=lambda: _padded_blocked_conv(op, depthwise=True),
                near_miss=lambda: _padded_blocked_conv(op, depthwise=False))


def _padded_blocked_conv(op: str, depthwise: bool) -> Expr:
    """`op` over blocked data cropped to `_PADDED` channels and padded back, its output cropped too."""
    B = block_size()
    bl, padded = blocked_layout("NCHW", "C", B), padded_channels(_PADDED, B)
    data = _lt(_pad_channels(_crop_channels(_lt(relay.var("a", shape=(1, padded // B, 5, 5, B)), bl, "NCHW"),
                                            _PADDED), padded - _PADDED), "NCHW", bl)
    kernel_layout = f"OIHW1i{B}o" if depthwise else f"OIHW{B}i{B}o"
    weight = _zero_padded(np.asarray(_weight(_PADDED, 1 if depthwise else _PADDED).data),
                          (padded, 1 if depthwise else padded, 3, 3))
    args = [data, relay.const(transform_layout(weight, "OIHW", kernel_layout))]
    if op == _BIAS_ACT:
        args.append(relay.const(_zero_padded(np.linspace(-1, 1, _PADDED).astype("float32"), (padded,))))
    attrs = {"padding": 1, "channels": padded, "groups": padded if depthwise else 1, "data_layout": bl,
             "kernel_layout": kernel_layout, "out_layout": bl}
    return _crop_channels(_lt(make_call(op, args, attrs), bl, "NCHW"), _PADDED)


_BIAS_ACT = "nn.contrib_conv2d_NCHWc_bias_act"
_SUM_ACT = "nn.contrib_conv2d_NCHWc_bias_sum_act"
w = const_pat("w")  # a constant weight: the blocked twin reorders it once

LAYOUT = ruleset("layout", [
    rule("conv2d-to-nchwc", nn.conv2d(x, w, bind_attrs="c"), _to_blocked(fused=False), exact=False,
         example=lambda: relay.nn.conv2d(_image(block_size()), _weight(block_size(), block_size()), padding=1),
         near_miss=lambda: relay.nn.conv2d(_image(block_size() + 4), _weight(block_size(), block_size() + 4))),
    rule("conv2d-bias-act-to-nchwc", nn.conv2d_bias_act(x, w, bias, bind_attrs="c"), _to_blocked(fused=True),
         exact=False, example=lambda: relay.nn.conv2d_bias_act(_image(3), _weight(block_size(), 3), relay.const(
             np.ones(block_size(), "float32")), strides=2, padding=1, activation="relu"),
         near_miss=lambda: relay.nn.conv2d_bias_act(_image(3), _weight(4, 3), relay.const(np.ones(4, "float32")))),
    rule("conv2d-to-nchwc-padded", nn.conv2d(x, w, bind_attrs="c"), _to_blocked(False, padded=True),
         exact=False, example=lambda: relay.nn.conv2d(_image(_PADDED), _weight(_PADDED, _PADDED), padding=1),
         near_miss=lambda: relay.nn.conv2d(_image(block_size() + 2), _weight(block_size() + 2, block_size() + 2))),
    rule("conv2d-bias-act-to-nchwc-padded", nn.conv2d_bias_act(x, w, const_pat("bias"), bind_attrs="c"),
         _to_blocked(True, padded=True), exact=False,
         example=lambda: relay.nn.conv2d_bias_act(_image(_PADDED), _weight(_PADDED, 1), relay.const(
             np.linspace(-1, 1, _PADDED).astype("float32")), padding=1, groups=_PADDED, activation="relu"),
         near_miss=lambda: relay.nn.conv2d_bias_act(_image(_PADDED), _weight(_PADDED, 1), relay.var(
             "b", shape=(_PADDED,)), padding=1, groups=_PADDED)),
    *(_through(op) for op in _UNARY),
    *(_binary_through(op) for op in _BINARY),
    *(_nhwc_operand_rule(op, first) for op in _BINARY for first in (True, False)),
    rule("add-channel-constant-through-layout-transform",
         ops.layout_transform(a, bind_attrs="lt") + const_pat("c"), _channel_constant,
         example=lambda: relay.add(_blocked_relu(), relay.const(np.arange(2 * block_size(), dtype="float32")
                                                                 .reshape(-1, 1, 1))),
         near_miss=lambda: relay.add(_blocked_relu(), relay.const(np.ones((1, 1, 3, 3), "float32")))),
    rule("channel-affine-to-nchwc", x * const_pat("s") + const_pat("t"), _affine_to_blocked, exact=False,
         example=lambda: relay.add(relay.multiply(_image(2 * block_size()), _channel_values(2 * block_size(), 1)),
                                   _channel_values(2 * block_size(), 2)),
         near_miss=lambda: relay.add(relay.multiply(_image(2 * block_size()), _channel_values(2 * block_size(), 1)),
                                     relay.const(np.ones((1, 1, 5, 5), "float32")))),
    *(_pool_rule(op) for op in ("nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d")),
    rule("mean-over-image-as-global-avg-pool", ops.mean(x, bind_attrs="r"),
         choose(attr("r", "keepdims"), nn.global_avg_pool2d(x), ops.squeeze(nn.global_avg_pool2d(x), axis=[2, 3])),
         when=_mean_over_image, exact=False,
         example=lambda: relay.mean(_image(2 * block_size()), axis=[2, 3]),
         near_miss=lambda: relay.mean(_image(2 * block_size()), axis=[1, 2])),
    *(_split_rule(index) for index in range(4)),
    rule("concatenate-through-layout-transform",
         ops.concatenate(many(ops.layout_transform(a, bind_attrs="l")), bind_attrs="cat"),
         ops.layout_transform(ops.concatenate(many(a), axis=1), src_layout=attr("l.0", "src_layout"),
                              dst_layout="NCHW"), when=_concat_of_blocks,
         example=lambda: relay.concatenate([_blocked_relu(f"a{i}") for i in range(3)], axis=1),
         near_miss=lambda: relay.concatenate([_blocked_relu(f"a{i}") for i in range(3)], axis=2)),
    rule("layout-transform-inverse",
         ops.layout_transform(ops.layout_transform(x, bind_attrs="l1"), bind_attrs="l2"), x, when=_inverse,
         example=lambda: _lt(_lt(_image(block_size()), "NCHW", blocked_layout("NCHW", "C", block_size())),
                             blocked_layout("NCHW", "C", block_size()), "NCHW"),
         near_miss=lambda: _lt(_lt(_image(4), "NCHW", "NHWC"), "NHWC", "NHWC")),
    rule("nhwc-out-of-layout-transform",
         ops.transpose(ops.layout_transform(x, bind_attrs="lt"), bind_attrs="t"),
         ops.layout_transform(x, dst_layout="NHWC"), when=_nchw_to_nhwc,
         example=lambda: relay.transpose(_blocked_relu("x"), (0, 2, 3, 1)),
         near_miss=lambda: relay.transpose(_blocked_relu("x"), (0, 3, 2, 1))),
    rule("nhwc-into-layout-transform",
         ops.layout_transform(ops.transpose(x, bind_attrs="t"), bind_attrs="lt"),
         ops.layout_transform(x, src_layout="NHWC"), when=_nhwc_to_nchw,
         example=lambda: _lt(relay.transpose(relay.var("x", shape=(1, 3, 3, 2 * block_size())), (0, 3, 1, 2)),
                             "NCHW", blocked_layout("NCHW", "C", block_size())),
         near_miss=lambda: _lt(relay.transpose(relay.var("x", shape=(1, 3, 2 * block_size(), 3)), (0, 2, 1, 3)),
                               "NCHW", blocked_layout("NCHW", "C", block_size()))),
    rule("nchwc-bias", nn.contrib_conv2d_NCHWc(x, wt, bind_attrs="c"), _with_bias,
         dtypes="float", example=lambda: _blocked_conv_without_bias(),
         near_miss=lambda: relay.nn.conv2d(_image(block_size()), _weight(block_size(), block_size()))),
    # the blocked result to its plain layout and back: the same tensor, as a blocked result holds whole
    # blocks; two blocked forms of one value (a folded batch norm and one kept as a channel affine) then
    # meet in one class through the plain class they share
    rule("nchwc-result-round-trip", call(_BIAS_ACT, x, wt, bias, bind_attrs="f"),
         ops.layout_transform(ops.layout_transform(call(_BIAS_ACT, x, wt, bias), src_layout=attr("f", "out_layout"),
                                                   dst_layout="NCHW"),
                              src_layout="NCHW", dst_layout=attr("f", "out_layout")),
         when=lambda m: m["f"].out_layout == m["f"].data_layout,
         example=lambda: _lt(_lt(_blocked_conv("relu"), blocked_layout("NCHW", "C", block_size()), "NCHW"), "NCHW",
                             blocked_layout("NCHW", "C", block_size())),  # the round trip is the result itself
         near_miss=lambda: relay.nn.conv2d_bias_act(_image(block_size()), _weight(block_size(), block_size()),
                                                    relay.const(np.ones(block_size(), "float32")))),
    *(_padded_depthwise_rule(op, inputs) for op, inputs in (("nn.contrib_conv2d_NCHWc", (wt,)),
                                                              (_BIAS_ACT, (wt, bias)))),
    *(_fuse_activation(op, _BIAS_ACT, (x, wt, bias)) for op in _ACTIVATIONS),
    rule("nchwc-sum", call(_BIAS_ACT, x, wt, bias, activation="none", bind_attrs="f") + s,
         call(_SUM_ACT, x, wt, bias, s, attrs_from="f"), when=lambda m: m.type("s") == m.root_type(), exact=False,
         example=lambda: relay.add(_blocked_conv(), relay.var("s", shape=(1, 1, 5, 5, block_size()))),
         near_miss=lambda: relay.add(_blocked_conv(), relay.var("s", shape=(1, 1, 1, 1, block_size())))),
    rule("nchwc-sum-commuted", s + call(_BIAS_ACT, x, wt, bias, activation="none", bind_attrs="f"),
         call(_SUM_ACT, x, wt, bias, s, attrs_from="f"), when=lambda m: m.type("s") == m.root_type(), exact=False,
         example=lambda: relay.add(relay.var("s", shape=(1, 1, 5, 5, block_size())), _blocked_conv()),
         near_miss=lambda: relay.add(relay.var("s", shape=(1, 1, 5, 1, block_size())), _blocked_conv())),
    *(_fuse_activation(op, _SUM_ACT, (x, wt, bias, s)) for op in _ACTIVATIONS),
])
