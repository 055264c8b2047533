"""Emitter of `image.resize1d/2d/3d` as ONNX Resize (opset 11 or newer; antialias from 18,
half_pixel_symmetric from 19).

The op's `scales`, when given, become Resize's scales input (ONNX derives the same output size
from them); otherwise its `size` becomes the sizes input. Channels-last data is transposed around.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..expr import Call
from .errors import FrontendError
from .export_context import EmitContext, Value, emits
from .export_nn import from_nchw, to_nchw

_MODES = {"nearest_neighbor": "nearest", "linear": "linear", "cubic": "cubic"}


def _check_scaled_size(ctx: EmitContext, call: Call) -> None:
    """ONNX derives the output length from scales, floor(length x scale): it must be the call's size."""
    attrs = call.attrs
    shape = ctx.type_of(call.args[0]).shape
    lengths = [shape[attrs.layout.index(ch)] for ch in attrs.layout if ch not in "NC"]
    if not all(isinstance(n, int) for n in lengths):
        raise FrontendError(f"{call.op.name} with scales needs static spatial lengths, got input shape {list(shape)}")
    derived = [math.floor(np.float32(n) * np.float32(s)) for n, s in zip(lengths, attrs.scales)]
    if derived != list(attrs.size):
        raise FrontendError(f"{call.op.name}: size {list(attrs.size)} is not floor(input length x scale) = {derived} "
                            f"for lengths {lengths} and scales {list(attrs.scales)}, which ONNX Resize cannot express")


@emits("image.resize1d", "image.resize2d", "image.resize3d")
def emit_resize(ctx: EmitContext, call: Call, args: Sequence[Value]) -> Value:
    attrs = call.attrs
    mode = attrs.coordinate_transformation_mode
    antialias = attrs.antialias and attrs.method != "nearest_neighbor"
    for needed, wanted, what in ((19, mode == "half_pixel_symmetric", f"coordinate_transformation_mode {mode}"),
                                 (18, antialias, "antialias"), (11, True, "Resize's current form")):
        if wanted and ctx.opset < needed:
            raise FrontendError(f"{call.op.name} with {what} needs opset {needed} or newer, exporting to opset "
                                f"{ctx.opset}")
    rank = len(attrs.size)
    data = to_nchw(ctx, args[0], attrs.layout)
    roi = ctx.const([0.0, 0.0, *attrs.roi[:rank], 1.0, 1.0, *attrs.roi[rank:]], "float32") \
        if mode == "tf_crop_and_resize" else ""
    if attrs.scales:
        _check_scaled_size(ctx, call)
        inputs = [data, roi, ctx.const([1.0, 1.0, *attrs.scales], "float32")]
    else:
        shape = ctx.type_of(call.args[0]).shape
        batch_channels = [shape[0], shape[attrs.layout.index("C")]]
        if all(isinstance(d, int) for d in batch_channels):
            sizes = ctx.ints([*batch_channels, *attrs.size])
        else:  # a symbolic batch or channel length is read from the data at run time
            head = ctx.node("Slice", [ctx.node("Shape", [data]), ctx.ints([0]), ctx.ints([2])])
            sizes = ctx.node("Concat", [head, ctx.ints(list(attrs.size))], axis=0)
        inputs = [data, roi, "", sizes]
    cubic = attrs.method == "cubic"
    out = ctx.node("Resize", inputs, mode=_MODES[attrs.method], coordinate_transformation_mode=mode,
                   nearest_mode=attrs.rounding_method if attrs.method == "nearest_neighbor" else None,
                   cubic_coeff_a=attrs.cubic_alpha if cubic else None, exclude_outside=attrs.cubic_exclude or None,
                   antialias=1 if antialias else None,
                   extrapolation_value=attrs.extrapolation_value if mode == "tf_crop_and_resize" else None)
    if attrs.out_dtype and attrs.out_dtype != ctx.type_of(call.args[0]).dtype:
        out = ctx.node("Cast", [out], to=ctx.elem(attrs.out_dtype))
    return from_nchw(ctx, out, attrs.layout)
