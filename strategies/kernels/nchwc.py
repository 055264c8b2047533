"""Reference kernels of `layout_transform` and the blocked convolutions (`ir.op.layout`).

A blocked convolution is `nn.conv2d`'s reference kernel on the NCHW / OIHW views of its operands
(contiguous, as a plain program holds them), so a blocked program gives the bits of the plain one.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ir.attrs import Attrs
from ir.types import TensorType, Type
from ir.op.layout import parse_layout, primal_axes

from .prepared import NO_DONATION, Kernel, PreparedCompute
from .reference import _ref, fused_activation, run_reference

__all__ = ["transform_layout", "plain_conv_attrs", "blocked_activation", "blocked_conv_compute"]


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


def plain_conv_attrs(attrs: Attrs, fused: bool) -> Attrs:
    """The attributes of the NCHW / OIHW convolution a blocked one computes (`nn.conv2d_bias_act` with no
    activation where `fused`, as the blocked activation comes after the residual sum)."""
    plain = Attrs({k: v for k, v in attrs.items() if k not in ("activation", "alpha", "beta", "a_min", "a_max")}).with_(
        data_layout="NCHW", kernel_layout="OIHW", out_layout="")
    return plain.with_(activation="none", alpha=0.01) if fused else plain


def _plain_conv(attrs: Attrs, data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """The convolution (plus bias) in NCHW, from blocked operands."""
    plain = plain_conv_attrs(attrs, fused=False)
    inputs = [transform_layout(data, attrs.data_layout, "NCHW"), transform_layout(weight, attrs.kernel_layout, "OIHW")]
    if bias is None:
        return run_reference("nn.conv2d", plain, inputs)
    return run_reference("nn.conv2d_bias_act", plain_conv_attrs(attrs, fused=True), [*inputs, bias])


#: the activation of a blocked convolution (`ir.op.layout.BLOCKED_ACTIVATIONS`), as the plain fused forms'
blocked_activation = fused_activation


def _out(attrs: Attrs, nchw: np.ndarray) -> np.ndarray:
    return transform_layout(nchw, "NCHW", attrs.out_layout or attrs.data_layout)


@_ref("nn.contrib_conv2d_NCHWc")
def _conv2d_nchwc(attrs: Attrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return _out(attrs, _plain_conv(attrs, data, weight, None))


@_ref("nn.contrib_conv2d_NCHWc_bias_act")
def _conv2d_nchwc_bias_act(attrs: Attrs, data: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return _out(attrs, blocked_activation(attrs, _plain_conv(attrs, data, weight, bias)))


@_ref("nn.contrib_conv2d_NCHWc_bias_sum_act")
def _conv2d_nchwc_bias_sum_act(attrs: Attrs, data: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                               residual: np.ndarray) -> np.ndarray:
    out_layout = attrs.out_layout or attrs.data_layout
    summed = _plain_conv(attrs, data, weight, bias) + transform_layout(residual, out_layout, "NCHW")
    return _out(attrs, blocked_activation(attrs, summed))


def blocked_conv_compute(plain: PreparedCompute, plain_out: TensorType) -> PreparedCompute:
    """A blocked convolution by the compute `plain` of the NCHW / OIHW convolution (`nn.conv2d`, or
    `nn.conv2d_bias_act` for the fused forms) whose output type is `plain_out`: data and weight laid
    out as NCHW / OIHW (a constant weight once), then the residual sum and the activation, and the
    result laid out as `out_layout`."""
    def prepare(attrs: Attrs, constants: Sequence[Any], out_type: Type, config: Mapping[str, Any]) -> Kernel:
        fused = len(constants) > 2
        weight = constants[1]
        weight = None if weight is None else transform_layout(weight, attrs.kernel_layout, "OIHW")
        inner = plain.prepare(plain_conv_attrs(attrs, fused), [None, weight, *constants[2:3]], plain_out, config)
        out_layout = attrs.out_layout or attrs.data_layout

        def kernel(inputs: Sequence[Any], donated) -> np.ndarray:
            data = transform_layout(inputs[0], attrs.data_layout, "NCHW")
            w = weight if weight is not None else transform_layout(inputs[1], attrs.kernel_layout, "OIHW")
            out = inner([data, w, *inputs[2:3]], NO_DONATION)
            if len(inputs) > 3:
                out = out + transform_layout(inputs[3], out_layout, "NCHW")
            return transform_layout(blocked_activation(attrs, out) if fused else out, "NCHW", out_layout)
        return kernel
    return PreparedCompute(prepare, f"blocked_{plain.__name__}")
