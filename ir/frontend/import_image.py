"""Converters of ONNX Resize (opsets 10 to 19) and Upsample (opsets 7 and 9) to `image.resize1d/2d/3d`.

The scales or sizes must be known at import (constants, or computed from constants); only the
spatial axes of NCW, NCHW or NCDHW data may change. Resize-10 and Upsample map coordinates
asymmetrically and, in nearest mode, take the floor of the position when enlarging and its ceiling
when shrinking (ONNX Runtime's rule); linear interpolation is the same in every version.
"""

from __future__ import annotations

import math

import numpy as np

from ..expr import Expr
from ..op.image import COORDINATE_MODES, ROUNDING_METHODS
from ..op.shapes import known
from .errors import FrontendError
from .import_context import NodeContext, converter

_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "bilinear": "linear", "cubic": "cubic"}


def _method(ctx: NodeContext) -> str:
    mode = ctx.attr("mode", "nearest")
    if mode not in _METHODS:
        raise ctx.unsupported("mode", mode, "use nearest, linear or cubic")
    return _METHODS[mode]


def _full_rank(ctx: NodeContext, values: np.ndarray, what: str, ndim: int, fill: list) -> list:
    """`values` given for the node's `axes` (every axis by default) spread over all `ndim` axes."""
    axes = [a % ndim for a in ctx.attr("axes", list(range(ndim)))]
    if len(values) != len(axes):
        raise FrontendError(f"{what} has {len(values)} entries for {len(axes)} axes")
    out = list(fill)
    for axis, value in zip(axes, values):
        out[axis] = value
    return out


def _resize(ctx: NodeContext, data: Expr, scales: list[float] | None, sizes: list[int] | None, method: str,
            mode: str, rounding: str, roi: list[float] | None = None) -> Expr:
    """The `image.resize{rank}d` call of NC... `data` to `sizes`, or to floor(size x scale) by `scales`.
    Only the spatial lengths must be static (the batch may be symbolic when `scales` are given)."""
    ty = ctx.type_of(data)
    shape, ndim = list(ty.shape), ty.ndim
    if not 3 <= ndim <= 5:
        raise FrontendError(f"{ctx.op_type} supports 1-D, 2-D and 3-D images (3-D to 5-D input), got input shape "
                            f"{ty.shape_str()}")
    if not all(known(n) for n in shape[2:]):
        raise FrontendError(f"{ctx.op_type} needs static spatial lengths, got input shape {ty.shape_str()}")
    if sizes is None:
        with np.errstate(over="ignore"):
            lengths = [np.float32(s) * np.float32(n) for s, n in zip(scales[2:], shape[2:])]
        if not all(np.isfinite(lengths)):
            raise FrontendError(f"{ctx.op_type}: scales {list(scales)} give output lengths {[float(n) for n in lengths]} of input shape "
                                f"{ty.shape_str()}, too large for float32")
        sizes = shape[:2] + [math.floor(n) for n in lengths]
    kept = scales[:2] == [1.0, 1.0] if scales is not None else sizes[:2] == shape[:2]
    if not kept:
        raise FrontendError(f"{ctx.op_type} may only resize the spatial axes (2 and later) of input shape "
                            f"{ty.shape_str()}, got output shape {list(sizes)}")
    if roi is not None and list(roi[:2]) + list(roi[ndim:ndim + 2]) != [0.0, 0.0, 1.0, 1.0]:
        raise FrontendError(f"{ctx.op_type}: roi={list(roi)} crops the batch or channel axis")
    attrs = dict(size=[int(s) for s in sizes[2:]], method=method, coordinate_transformation_mode=mode,
                 rounding_method=rounding, extrapolation_value=ctx.attr("extrapolation_value", 0.0),
                 cubic_alpha=ctx.attr("cubic_coeff_a", -0.75), cubic_exclude=ctx.attr("exclude_outside", 0),
                 antialias=bool(ctx.attr("antialias", 0)))
    if scales is not None:
        attrs["scales"] = list(scales[2:])
    if roi is not None:
        attrs["roi"] = list(roi[2:ndim]) + list(roi[ndim + 2:])
    return ctx.call(f"image.resize{ndim - 2}d", data, **attrs)


def _checked_scales(ctx: NodeContext, scales) -> list[float]:
    """`scales` as floats; a NaN, infinite or negative scale is a `FrontendError`."""
    values = [float(s) for s in np.asarray(scales).reshape(-1)]
    if not all(math.isfinite(s) and s >= 0 for s in values):
        raise FrontendError(f"{ctx.op_type}: scales must be finite and non-negative, got {values}")
    return values


def _legacy(ctx: NodeContext, scales: np.ndarray) -> Expr:
    """Resize-10 and Upsample: asymmetric coordinates; nearest takes the floor of the position on an
    enlarged axis and its ceiling on a shrunk one (an op for each, when the scales do both)."""
    scales = _checked_scales(ctx, scales)
    method = _method(ctx)
    data = ctx.input(0)
    if method != "nearest_neighbor":
        return _resize(ctx, data, scales, None, method, "asymmetric", "round_prefer_floor")
    shrink = [min(s, 1.0) for s in scales]
    if any(s < 1 for s in shrink):
        data = _resize(ctx, data, shrink, None, method, "asymmetric", "ceil")
        if all(s <= 1 for s in scales):
            return data
    return _resize(ctx, data, [max(s, 1.0) for s in scales], None, method, "asymmetric", "floor")


@converter("Upsample")
def convert_upsample(ctx: NodeContext) -> Expr:
    scales = ctx.static_input(1, "scales") if ctx.opset >= 9 else np.asarray(ctx.attr("scales"))
    return _legacy(ctx, scales)


@converter("Resize")
def convert_resize(ctx: NodeContext) -> Expr:
    if ctx.opset < 11:
        return _legacy(ctx, ctx.static_input(1, "scales"))
    data = ctx.input(0)
    ndim = ctx.type_of(data).ndim
    mode = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if mode not in COORDINATE_MODES:
        raise ctx.unsupported("coordinate_transformation_mode", mode, f"use one of {list(COORDINATE_MODES)}")
    rounding = ctx.attr("nearest_mode", "round_prefer_floor")
    if rounding not in ROUNDING_METHODS:
        raise ctx.unsupported("nearest_mode", rounding, f"use one of {list(ROUNDING_METHODS)}")
    given = [ctx.optional_static(i, what) for i, what in ((2, "scales"), (3, "sizes"))]
    scales, sizes = [None if v is None or v.size == 0 else v.tolist() for v in given]
    if (scales is None) == (sizes is None):
        raise FrontendError("exactly one of scales and sizes must be given")
    shape = list(ctx.type_of(data).shape)
    if scales is not None:
        scales = _full_rank(ctx, _checked_scales(ctx, scales), "scales", ndim, [1.0] * ndim)
    else:
        sizes = _full_rank(ctx, sizes, "sizes", ndim, list(shape))
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            if policy not in ("not_larger", "not_smaller"):
                raise ctx.unsupported("keep_aspect_ratio_policy", policy, "use stretch, not_larger or not_smaller")
            axes = [a % ndim for a in ctx.attr("axes", list(range(ndim)))]
            if not all(known(shape[a]) for a in axes):
                raise FrontendError(f"keep_aspect_ratio_policy={policy} needs static lengths of the axes {axes}")
            ratios = [sizes[a] / shape[a] for a in axes]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            scales = [scale if a in axes else 1.0 for a in range(ndim)]
            sizes = [int(scale * n + 0.5) if a in axes else n for a, n in enumerate(shape)]
    roi = None
    if mode == "tf_crop_and_resize":
        given_roi = ctx.optional_static(1, "roi")
        if given_roi is None or given_roi.size == 0:
            raise FrontendError("coordinate_transformation_mode tf_crop_and_resize needs the roi input")
        half = len(given_roi) // 2
        roi = (_full_rank(ctx, given_roi[:half].tolist(), "roi", ndim, [0.0] * ndim)
               + _full_rank(ctx, given_roi[half:].tolist(), "roi", ndim, [1.0] * ndim))
    return _resize(ctx, data, scales, sizes, _method(ctx), mode, rounding, roi)
