"""Blocked layouts: `layout_transform` and the convolutions that work on channel blocks (TVM's names).

A layout names the axes of a tensor: upper-case letters are whole (primal) axes, a number and a
lower-case letter split a block off the primal axis of that letter. `NCHW16c` holds NCHW data as
`(N, C // 16, H, W, 16)`, element `[n, c // 16, h, w, c % 16]` being `x[n, c, h, w]`; `OIHW16i16o`
holds a convolution weight as `(O // 16, I // 16, KH, KW, 16, 16)`. A split axis must be a
multiple of its block (no padding).

    layout_transform(x, src_layout="NCHW", dst_layout="NCHW16c")   # and back, or NCHW <-> NHWC
    nn.contrib_conv2d_NCHWc(data, weight, data_layout="NCHW16c", kernel_layout="OIHW16i16o",
                            out_layout="NCHW16c")

The blocked convolutions compute what `nn.conv2d` computes on the same values in NCHW / OIHW;
their fused forms mirror ONNX Runtime's NCHWc `Conv` (bias, activation and a residual `Sum`
input added before the activation; `clip` between `a_min` and `a_max`, `hard_sigmoid` (`alpha`,
`beta`) and `hard_swish` too, computed as those ops compute them). `data_layout` may be
plain `NCHW` (a first layer whose few input channels are not blocked) and `out_layout` empty (the
data layout).
"""

from __future__ import annotations

import functools
import re
from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import Any, Dim, TensorType, Type
from .fused import ACTIVATIONS
from .nn import conv2d_rel, conv_attrs
from .registry import AttrField, OpPattern, register_op
from .shapes import dims_match, known, same_dtype, tensor

__all__ = ["parse_layout", "primal_axes", "logical_sizes", "layout_shape", "blocked_layout",
           "plain_conv_types", "BLOCKED_CONVS", "BLOCKED_ACTIVATIONS", "OP_ACTIVATIONS"]

_TOKEN = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str) -> tuple[tuple[str, int | None], ...]:
    """The axes of `layout` in order: (letter, None) for a primal axis, (letter, block) for a split one.

    `parse_layout("NCHW16c")` is `(("N", None), ("C", None), ("H", None), ("W", None), ("c", 16))`.
    """
    if not isinstance(layout, str) or not layout:
        raise ValueError(f"a layout is a non-empty string such as 'NCHW16c', got {layout!r}")
    return _parse_layout(layout)


@functools.lru_cache(maxsize=256)
def _parse_layout(layout: str) -> tuple[tuple[str, int | None], ...]:
    """`parse_layout` of a string, remembered: type relations ask it for the same few layouts often."""
    axes: list[tuple[str, int | None]] = []
    pos = 0
    for found in _TOKEN.finditer(layout):
        if found.start() != pos:
            break
        pos = found.end()
        digits, letter = found.groups()
        if letter.isupper():
            if digits:
                raise ValueError(f"layout {layout!r}: a primal axis {letter!r} takes no block size")
            axes.append((letter, None))
        else:
            if not digits or int(digits) < 1:
                raise ValueError(f"layout {layout!r}: the split axis {letter!r} needs a block size >= 1")
            axes.append((letter, int(digits)))
    if pos != len(layout):
        raise ValueError(f"layout {layout!r} is not letters with optional block sizes, e.g. 'NCHW16c'")
    letters = [a for a, _ in axes]
    if len(set(letters)) != len(letters):
        raise ValueError(f"layout {layout!r} names an axis twice")
    orphans = [a for a, block in axes if block is not None and a.upper() not in letters]
    if orphans:
        raise ValueError(f"layout {layout!r}: split axes {orphans} have no primal axis {[a.upper() for a in orphans]}")
    return tuple(axes)


def checked_layout(layout: str) -> str:
    """`layout` when it parses (the attribute converter of layout strings)."""
    parse_layout(layout)
    return layout


def primal_axes(layout: str) -> str:
    """The primal axes of `layout` in order: `primal_axes("NCHW16c") == "NCHW"`."""
    return "".join(a for a, block in parse_layout(layout) if block is None)


def blocked_layout(plain: str, letter: str, block: int) -> str:
    """`plain` with a block of `block` split off axis `letter` (appended last): ("NCHW", "C", 16) -> "NCHW16c"."""
    return f"{plain}{block}{letter.lower()}"


def logical_sizes(shape: Sequence[Dim], layout: str, what: str = "data") -> dict[str, Dim]:
    """The size of each primal axis of a tensor of `shape` laid out as `layout`."""
    axes = parse_layout(layout)
    if len(shape) != len(axes):
        raise ShapeError(f"{what} of shape {tuple(shape)} does not have the {len(axes)} axes of layout {layout!r}")
    sizes: dict[str, Dim] = {}
    for (letter, block), dim in zip(axes, shape):
        if block is not None and not (known(dim) and dim == block):
            raise ShapeError(f"{what} of shape {tuple(shape)}: axis {letter!r} of layout {layout!r} must be {block}")
    for (letter, block), dim in zip(axes, shape):
        if block is None:
            inner = dict(axes).get(letter.lower())
            sizes[letter] = dim if inner is None else (dim * inner if known(dim) else Any)
    return sizes


def layout_shape(sizes: dict[str, Dim], layout: str, what: str = "data") -> tuple[Dim, ...]:
    """The shape of a tensor whose primal axes have `sizes`, laid out as `layout`."""
    axes = parse_layout(layout)
    if sorted(a for a, b in axes if b is None) != sorted(sizes):
        raise ShapeError(f"layout {layout!r} does not have the axes {''.join(sizes)} of the {what}")
    blocks = {a.upper(): b for a, b in axes if b is not None}
    shape: list[Dim] = []
    for letter, block in axes:
        if block is not None:
            shape.append(block)
            continue
        size, inner = sizes[letter], blocks.get(letter)
        if inner is None:
            shape.append(size)
        elif known(size):
            if size % inner:
                raise ShapeError(f"{what}: axis {letter} of size {size} does not split into blocks of {inner} "
                                 f"(layout {layout!r})")
            shape.append(size // inner)
        else:
            shape.append(Any)
    return tuple(shape)


def layout_transform_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    data = tensor(args[0], "data")
    if sorted(primal_axes(attrs.src_layout)) != sorted(primal_axes(attrs.dst_layout)):
        raise ShapeError(f"layouts {attrs.src_layout!r} and {attrs.dst_layout!r} do not have the same axes")
    sizes = logical_sizes(data.shape, attrs.src_layout)
    return TensorType(layout_shape(sizes, attrs.dst_layout), data.dtype)


def _relaid(ty: TensorType, src: str, dst: str, what: str) -> TensorType:
    return TensorType(layout_shape(logical_sizes(ty.shape, src, what), dst, what), ty.dtype)


def _check_primal(layout: str, plain: str, what: str) -> None:
    if primal_axes(layout) != plain:
        raise ShapeError(f"{what} layout {layout!r} must have the axes {plain} in that order (blocks may split them)")


def plain_conv_types(attrs: Attrs, in_types: Sequence[Type], out_type: Type) -> tuple[TensorType, ...]:
    """The (data, weight, output) types of a blocked convolution seen as NCHW / OIHW / NCHW."""
    layouts = (attrs.data_layout, attrs.kernel_layout, attrs.out_layout or attrs.data_layout)
    types = (in_types[0], in_types[1], out_type)
    return tuple(_relaid(tensor(t, what), layout, plain, what) for t, layout, plain, what in
                 zip(types, layouts, ("NCHW", "OIHW", "NCHW"), ("data", "weight", "output")))


def blocked_conv_rel(args: Sequence[Type], attrs: Attrs) -> Type:
    """The type of a blocked convolution: `nn.conv2d`'s on the NCHW / OIHW views, laid out as `out_layout`."""
    data, weight = tensor(args[0], "data"), tensor(args[1], "weight")
    out_layout = attrs.out_layout or attrs.data_layout
    for layout, plain, what in ((attrs.data_layout, "NCHW", "data"), (attrs.kernel_layout, "OIHW", "kernel"),
                                (out_layout, "NCHW", "output")):
        _check_primal(layout, plain, what)
    plain_attrs = Attrs({**attrs, "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": ""})
    out = conv2d_rel([_relaid(data, attrs.data_layout, "NCHW", "data"),
                      _relaid(weight, attrs.kernel_layout, "OIHW", "weight")], plain_attrs)
    out = _relaid(out, "NCHW", out_layout, "output")
    if len(args) > 2:
        bias = tensor(args[2], "bias")
        same_dtype([out, bias], ["output", "bias"])
        channels = logical_sizes(out.shape, out_layout, "output")["C"]
        if bias.ndim != 1 or not dims_match(bias.shape[0], channels):
            raise ShapeError(f"bias {bias} must be 1-D of the {channels} output channels")
    if len(args) > 3 and tensor(args[3], "sum") != out:
        raise ShapeError(f"the sum input {args[3]} must have the output's type {out}")
    return out


def _blocked_conv_attrs() -> list[AttrField]:
    """`nn.conv2d`'s attributes with TVM's NCHWc defaults; layouts are checked when a call is built."""
    defaults = {"data_layout": "NCHW8c", "kernel_layout": "OIHW8i8o", "out_layout": "NCHW8c"}
    fields = []
    for f in conv_attrs(2):
        if f.name in defaults:
            f = AttrField(f.name, "str", defaults[f.name], convert=checked_layout)
        fields.append(f)
    return fields


_LAYOUT_ATTRS = [AttrField("src_layout", "str", convert=checked_layout),
                 AttrField("dst_layout", "str", convert=checked_layout)]
register_op("layout_transform", ["data"], layout_transform_rel, OpPattern.INJECTIVE, attrs=_LAYOUT_ATTRS,
            doc="The same values laid out as dst_layout instead of src_layout (e.g. NCHW -> NCHW16c).")

#: activations of the blocked convolutions that are an element-wise op of the IR: activation -> (the op,
#: the attributes of the convolution that are the op's)
OP_ACTIVATIONS = {"clip": ("clip", ("a_min", "a_max")), "hard_sigmoid": ("nn.hard_sigmoid", ("alpha", "beta")),
                  "hard_swish": ("nn.hard_swish", ())}
#: the activations of the blocked convolutions: the fused forms' and ONNX Runtime's NCHWc `Clip`,
#: `HardSigmoid` and `HardSwish`
BLOCKED_ACTIVATIONS = tuple(dict.fromkeys((*ACTIVATIONS, *OP_ACTIVATIONS)))
_ACT = [AttrField("activation", "str", "none", choices=BLOCKED_ACTIVATIONS),
        AttrField("alpha", "float", 0.01, doc="leaky relu's slope, hard sigmoid's scale"),
        AttrField("beta", "float", 0.5, doc="hard sigmoid's offset"),
        AttrField("a_min", "float", 0.0, doc="clip's lower bound"), AttrField("a_max", "float", 6.0,
                                                                              doc="clip's upper bound")]
_CONV_ATTRS = _blocked_conv_attrs()
_OUT_EW = OpPattern.OUT_ELEMWISE_FUSABLE
register_op("nn.contrib_conv2d_NCHWc", ["data", "weight"], blocked_conv_rel, _OUT_EW, attrs=_CONV_ATTRS,
            doc="nn.conv2d on blocked data and weight (data_layout / kernel_layout), output as out_layout.")
register_op("nn.contrib_conv2d_NCHWc_bias_act", ["data", "weight", "bias"], blocked_conv_rel, _OUT_EW,
            attrs=_CONV_ATTRS + _ACT,
            doc="activation(nn.contrib_conv2d_NCHWc(data, weight) + bias[channel]) (ONNX Runtime's NCHWc Conv).")
register_op("nn.contrib_conv2d_NCHWc_bias_sum_act", ["data", "weight", "bias", "sum"], blocked_conv_rel, _OUT_EW,
            attrs=_CONV_ATTRS + _ACT,
            doc="activation(nn.contrib_conv2d_NCHWc(data, weight) + bias[channel] + sum), the residual added "
                "before the activation (ONNX Runtime's NCHWc Conv with its Sum input).")

#: the blocked convolutions, plainest first
BLOCKED_CONVS = ("nn.contrib_conv2d_NCHWc", "nn.contrib_conv2d_NCHWc_bias_act", "nn.contrib_conv2d_NCHWc_bias_sum_act")
