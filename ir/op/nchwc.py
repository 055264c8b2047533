"""ONNX Runtime's NCHWc convolutions as layout arithmetic: the blocked forms its `Conv` runs, the
channel counts it pads to whole blocks, and the pads and crops its reorders do themselves.

Pure functions of channel counts, attributes and a block size; the machine's block size is asked
of the installed ONNX Runtime where ONNX lives (`ir.frontend.export_nchwc.ort_nchwc_block_size`).
"""

from __future__ import annotations

from typing import NamedTuple

from ..attrs import Attrs
from .layout import parse_layout, primal_axes

__all__ = ["nchwc_forms", "padded_channels", "PaddedConv", "padded_conv", "channel_padding", "channel_crop",
           "ort_conv_block", "channel_block"]


def channel_block(layout: str, plain: str) -> int | None:
    """The block of C when `layout` is `plain` plus a channel block (NCHW{B}c / NHWC{B}c), else None."""
    axes = parse_layout(layout)
    if primal_axes(layout) != plain or len(axes) != len(plain) + 1 or axes[-1][0] != "c":
        return None
    return axes[-1][1]


def nchwc_forms(in_channels: int, out_channels: int, groups: int, block: int) -> tuple[str, str] | None:
    """(data layout, kernel layout) in which ONNX Runtime's NCHWc Conv runs a convolution, else None.

    Blocked output always (`out_channels` a multiple of `block`); the data unblocked when it has
    fewer than `block` channels (weights OIHW{B}o), else blocked with OIHW{B}i{B}o weights, also for
    a grouped convolution whose groups have whole blocks of input and output channels; a depthwise
    convolution takes OIHW1i{B}o weights (MLAS's filter orders, `nchwc_transformer.cc`).
    """
    blocked = f"NCHW{block}c"
    if out_channels % block or in_channels % groups or out_channels % groups:
        return None
    if groups == 1 and in_channels < block:
        return "NCHW", f"OIHW{block}o"
    if in_channels % block:
        return None
    if groups == in_channels == out_channels:
        return blocked, f"OIHW1i{block}o"
    if (in_channels // groups) % block or (out_channels // groups) % block:
        return None
    return blocked, f"OIHW{block}i{block}o"


def padded_channels(channels: int, block: int, read: bool = True) -> int | None:
    """`channels` rounded up to whole blocks of `block` where ONNX Runtime's NCHWc kernels hold them so,
    else None: any count a convolution writes (`read=False`; `ReorderOutput` crops the zero channels
    off), but data that `ReorderInput` pads must have a multiple of 4 channels (its requirement, and
    the counts ONNX Runtime's own layout pass pads)."""
    if channels <= 0:
        return None
    if channels % block and read and channels % 4:
        return None
    return -(-channels // block) * block


class PaddedConv(NamedTuple):
    """A convolution as ONNX Runtime's NCHWc Conv runs it with its channel counts padded to whole blocks."""

    in_channels: int
    out_channels: int
    groups: int
    data_layout: str
    kernel_layout: str


def padded_conv(in_channels: int, out_channels: int, groups: int, block: int) -> PaddedConv | None:
    """The padded form of a convolution (`nchwc_forms` of the padded counts), else None.

    Output channels pad to whole blocks (`padded_channels`); input channels too, but a convolution of
    fewer input channels than a block reads them unblocked and unpadded. A depthwise convolution pads
    its groups with its channels; other grouped convolutions do not pad.
    """
    out_padded = padded_channels(out_channels, block, read=False)
    if out_padded is None or in_channels <= 0 or in_channels % groups:
        return None
    if groups == in_channels == out_channels:
        in_padded = groups = padded_channels(in_channels, block)
    elif groups > 1:
        in_padded = in_channels if out_padded == out_channels else None
    else:
        in_padded = in_channels if in_channels < block else padded_channels(in_channels, block)
    forms = nchwc_forms(in_padded, out_padded, groups, block) if in_padded is not None else None
    return None if forms is None else PaddedConv(in_padded, out_padded, groups, *forms)


def channel_padding(attrs: Attrs, channels: object, block: int) -> bool:
    """Whether an `nn.pad` with `attrs` adds to NCHW data of `channels` channels the zero channels that
    ReorderInput adds itself: from a multiple of 4 that is not a multiple of `block` up to whole blocks."""
    return (isinstance(channels, int) and channels % 4 == 0 and channels % block != 0
            and attrs.pad_mode == "constant" and attrs.pad_value == 0.0
            and tuple(map(tuple, attrs.pad_width)) == ((0, 0), (0, -channels % block), (0, 0), (0, 0)))


def channel_crop(attrs: Attrs) -> int | None:
    """How many leading channels a `strided_slice` with `attrs` keeps of NCHW data (ReorderOutput's crop:
    axis 1 from channel 0, step 1), else None."""
    if tuple(attrs.axes or ()) not in ((1,), (-3,)) or tuple(attrs.begin) != (0,) \
            or tuple(attrs.strides or (1,)) != (1,) or attrs.slice_mode != "end":
        return None
    return attrs.end[0]


def ort_conv_block(attrs: Attrs, in_channels: int, out_channels: int) -> int | None:
    """The block of a blocked convolution that ONNX Runtime's NCHWc Conv runs as it is laid out
    (`nchwc_forms`), else None."""
    block = channel_block(attrs.out_layout or attrs.data_layout, "NCHW")
    if block is None:
        return None
    forms = nchwc_forms(in_channels, out_channels, attrs.groups, block)
    return block if forms == (attrs.data_layout, attrs.kernel_layout) else None
