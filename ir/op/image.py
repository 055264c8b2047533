"""Image ops: resizing the spatial axes of 1-D, 2-D and 3-D images (`image.resize1d/2d/3d`, TVM's names).

Each output position `x` of a resized axis maps to a position of the input axis by the
coordinate transformation (`in`, `out`: the input and output lengths; `scale`: the op's `scales`
entry, `out / in` when `scales` is empty; `out'`: `in * scale`, which differs from `out` when the
scale does not divide evenly):

    half_pixel            (x + 0.5) / scale - 0.5
    half_pixel_symmetric  in / 2 * (1 - out / out') + (x + 0.5) / scale - 0.5
    pytorch_half_pixel    (x + 0.5) / scale - 0.5, or 0 when out' is 1
    align_corners         x * (in - 1) / (out' - 1), or 0 when out' is 1
    asymmetric            x / scale
    tf_half_pixel_for_nn  (x + 0.5) / scale
    tf_crop_and_resize    roi_start * (in - 1) + x * (roi_end - roi_start) * (in - 1) / (out - 1),
                          or the middle of the roi when out is 1; outside [0, in - 1] the output is
                          `extrapolation_value`

`nearest_neighbor` rounds that position by `rounding_method` (round_prefer_floor and
round_prefer_ceil round halves down and up) and clamps it into the axis; `linear` interpolates
between the two neighbours of the position clamped into [0, in - 1]; `cubic` weighs the four
neighbours floor(p) - 1 .. floor(p) + 2 of position p by Keys' kernel with `cubic_alpha`
(repeating the edge for neighbours past it, or, with `cubic_exclude`, dropping them and
renormalising the rest). With `antialias`, an axis shrunk by scale s < 1 widens the linear or cubic
kernel by 1 / s (weights kernel((j - p) x s) over every input j in the wider support, normalised to
sum to 1), as ONNX Resize's antialias does. Interpolation runs one axis after another.
"""

from __future__ import annotations

from typing import Sequence

from ..attrs import Attrs
from ..errors import ShapeError
from ..types import TensorType, Type
from .nn import DEFAULT_LAYOUTS, LAYOUTS, SPATIAL
from .registry import AttrField, OpPattern, register_op
from .shapes import tensor

__all__ = ["METHODS", "COORDINATE_MODES", "ROUNDING_METHODS"]

METHODS = ("nearest_neighbor", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn", "tf_crop_and_resize")
ROUNDING_METHODS = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def resize_rel(rank: int):
    """The type relation of `image.resize{rank}d`."""
    def rel(args: Sequence[Type], attrs: Attrs) -> Type:
        data = tensor(args[0], "data")
        if data.ndim != rank + 2:
            raise ShapeError(f"needs {rank + 2}-D data, got {data}")
        layouts = [k for k in LAYOUTS if len(k) == rank + 2]
        if attrs.layout not in layouts:
            raise ShapeError(f"layout {attrs.layout!r} is not supported (use one of {layouts})")
        if len(attrs.size) != rank or any(s < 1 for s in attrs.size):
            raise ShapeError(f"size={list(attrs.size)} must give {rank} positive lengths")
        if attrs.scales and (len(attrs.scales) != rank or any(s <= 0 for s in attrs.scales)):
            raise ShapeError(f"scales={list(attrs.scales)} must be empty or give {rank} positive factors")
        if len(attrs.roi) != 2 * rank:
            raise ShapeError(f"roi={list(attrs.roi)} must give {2 * rank} values (starts, then ends)")
        if attrs.method != "nearest_neighbor" and not data.dtype.startswith(("float", "bfloat")):
            raise ShapeError(f"{attrs.method} interpolation needs floating-point data, got {data.dtype}")
        shape = list(data.shape)
        for axis, size in zip(LAYOUTS[attrs.layout][1:], attrs.size):
            shape[axis] = size
        return TensorType(shape, attrs.out_dtype or data.dtype)
    return rel


def resize_attrs(rank: int) -> list[AttrField]:
    """The attributes of `image.resize{rank}d`: TVM's, plus ONNX's `scales`."""
    return [
        AttrField("size", "ints", doc="the output length of each spatial axis"),
        AttrField("roi", "floats", (0.0,) * 2 * rank, doc="tf_crop_and_resize's region: starts, then ends"),
        AttrField("layout", "str", DEFAULT_LAYOUTS[rank][0]),
        AttrField("method", "str", "linear", choices=METHODS),
        AttrField("coordinate_transformation_mode", "str", "half_pixel", choices=COORDINATE_MODES),
        AttrField("rounding_method", "str", "round_prefer_floor", choices=ROUNDING_METHODS),
        AttrField("cubic_alpha", "float", -0.5),
        AttrField("cubic_exclude", "int", 0, choices=(0, 1)),
        AttrField("antialias", "bool", False, doc="widen linear and cubic filters by 1 / scale on shrunk axes"),
        AttrField("extrapolation_value", "float", 0.0),
        AttrField("scales", "floats", (), doc="the factor of each spatial axis the coordinates use "
                                              "(ONNX's scales); empty: output length / input length"),
        AttrField("out_dtype", "str", ""),
    ]


for _rank in (1, 2, 3):
    register_op(f"image.resize{_rank}d", ["data"], resize_rel(_rank), OpPattern.INJECTIVE,
                attrs=resize_attrs(_rank),
                doc=f"Resize the {SPATIAL[_rank]} axes to `size` by nearest-neighbour, linear or cubic "
                    "interpolation.")
