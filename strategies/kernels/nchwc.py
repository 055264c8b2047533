"""Reference kernels of `layout_transform` and the blocked convolutions (`ir.op.layout`).

A blocked convolution is `nn.conv2d`'s reference kernel on the NCHW / OIHW views of its operands
(contiguous, as a plain program holds them), so a blocked program gives the bits of the plain one.
"""

from __future__ import annotations

import numpy as np

from ir.attrs import Attrs
from ir.op.layout import parse_layout, primal_axes

from .reference import _ref, apply_activation, run_reference

__all__ = ["transform_layout"]


def _to_primal(x: np.ndarray, layout: str) -> np.ndarray:
    """`x` laid out as `layout`, as its primal axes in `layout`'s order (each block merged back)."""
    axes = parse_layout(layout)
    letters = [a for a, _ in axes]
    order, shape = [], []
    for letter in primal_axes(layout):
        outer = letters.index(letter)
        order.append(outer)
        size = x.shape[outer]
        if letter.lower() in letters:
            inner = letters.index(letter.lower())
            order.append(inner)
            size *= x.shape[inner]
        shape.append(size)
    return x.transpose(order).reshape(shape)


def _from_primal(x: np.ndarray, primal: str, layout: str) -> np.ndarray:
    """`x` with primal axes `primal`, laid out as `layout`."""
    axes = parse_layout(layout)
    letters = [a for a, _ in axes]
    blocks = {a.upper(): b for a, b in axes if b is not None}
    target_primal = primal_axes(layout)
    x = x.transpose([primal.index(p) for p in target_primal])
    split_shape, split_letters = [], []
    for letter, size in zip(target_primal, x.shape):
        block = blocks.get(letter)
        split_shape += [size] if block is None else [size // block, block]
        split_letters += [letter] if block is None else [letter, letter.lower()]
    return x.reshape(split_shape).transpose([split_letters.index(a) for a in letters])


def transform_layout(x: np.ndarray, src_layout: str, dst_layout: str) -> np.ndarray:
    """`x`, laid out as `src_layout`, laid out as `dst_layout` (a new contiguous array)."""
    return np.ascontiguousarray(_from_primal(_to_primal(x, src_layout), primal_axes(src_layout), dst_layout))


@_ref("layout_transform")
def _layout_transform(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return transform_layout(x, attrs.src_layout, attrs.dst_layout)


def _plain_conv(attrs: Attrs, data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """The convolution (plus bias) in NCHW, from blocked operands."""
    plain = Attrs({k: v for k, v in attrs.items() if k not in ("activation", "alpha", "a_min", "a_max")}).with_(
        data_layout="NCHW", kernel_layout="OIHW", out_layout="")
    inputs = [transform_layout(data, attrs.data_layout, "NCHW"), transform_layout(weight, attrs.kernel_layout, "OIHW")]
    if bias is None:
        return run_reference("nn.conv2d", plain, inputs)
    return run_reference("nn.conv2d_bias_act", plain.with_(activation="none", alpha=0.01), [*inputs, bias])


def _activate(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    """The activation of a blocked convolution (`ir.op.layout.BLOCKED_ACTIVATIONS`)."""
    if attrs.activation == "clip":
        return np.minimum(np.maximum(x, x.dtype.type(attrs.a_min)), x.dtype.type(attrs.a_max))
    return apply_activation(x, attrs.activation, attrs.alpha)


def _out(attrs: Attrs, nchw: np.ndarray) -> np.ndarray:
    return transform_layout(nchw, "NCHW", attrs.out_layout or attrs.data_layout)


@_ref("nn.contrib_conv2d_NCHWc")
def _conv2d_nchwc(attrs: Attrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return _out(attrs, _plain_conv(attrs, data, weight, None))


@_ref("nn.contrib_conv2d_NCHWc_bias_act")
def _conv2d_nchwc_bias_act(attrs: Attrs, data: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return _out(attrs, _activate(attrs, _plain_conv(attrs, data, weight, bias)))


@_ref("nn.contrib_conv2d_NCHWc_bias_sum_act")
def _conv2d_nchwc_bias_sum_act(attrs: Attrs, data: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                               residual: np.ndarray) -> np.ndarray:
    out_layout = attrs.out_layout or attrs.data_layout
    summed = _plain_conv(attrs, data, weight, bias) + transform_layout(residual, out_layout, "NCHW")
    return _out(attrs, _activate(attrs, summed))
