"""image.resize1d/2d/3d reference kernels against per-element loop formulas, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay
from ir.errors import AttrsError, TypeInferenceError

from .naive_resize import resize_loop
from .test_reference import rand, run

OPS = {1: "image.resize1d", 2: "image.resize2d", 3: "image.resize3d"}


MODES = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
         "tf_half_pixel_for_nn"]
SHAPES = [  # (input shape, output size, scales or None)
    ((1, 2, 5), (8,), None),
    ((1, 2, 6), (4,), (0.7,)),
    ((1, 1, 3, 4), (5, 3), None),
    ((2, 1, 4, 3), (2, 7), (0.6, 2.5)),
    ((1, 1, 2, 3, 3), (3, 1, 5), None),
]


@pytest.mark.parametrize("shape, size, scales", SHAPES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method, rounding", [("linear", ""), ("cubic", ""), ("cubic", "exclude")] + [
    ("nearest_neighbor", r) for r in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")])
def test_resize_against_loops(shape, size, scales, mode, method, rounding):
    x = rand(*shape, dtype="float64")
    extra = {"scales": scales} if scales else {}
    if method == "nearest_neighbor":
        extra["rounding_method"] = rounding
    exclude = rounding == "exclude"
    out = run(OPS[len(size)], x, size=size, method=method, coordinate_transformation_mode=mode, cubic_alpha=-0.75,
              cubic_exclude=int(exclude), **extra)
    stored = [float(np.float32(s)) for s in scales] if scales else None  # float attributes hold float32 values
    expected = resize_loop(x, size, method, mode, rounding or "round_prefer_floor", stored, exclude=exclude)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape, size, scales", [((1, 2, 9), (4,), None), ((1, 1, 7, 8), (3, 5), (0.4, 0.7)),
                                                  ((1, 1, 6, 2, 5), (2, 3, 2), None)])
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("method, exclude", [("linear", False), ("cubic", False), ("cubic", True)])
def test_antialias_against_loops(shape, size, scales, mode, method, exclude):
    x = rand(*shape, dtype="float64")
    extra = {"scales": scales} if scales else {}
    out = run(OPS[len(size)], x, size=size, method=method, coordinate_transformation_mode=mode, antialias=True,
              cubic_alpha=-0.5, cubic_exclude=int(exclude), **extra)
    stored = [float(np.float32(s)) for s in scales] if scales else None
    expected = resize_loop(x, size, method, mode, scales=stored, alpha=-0.5, exclude=exclude, antialias=True)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    plain = run(OPS[len(size)], x, size=size, method=method, coordinate_transformation_mode=mode, **extra)
    assert not np.allclose(out, plain)  # the wider filter averages more inputs


@pytest.mark.parametrize("method", ["linear", "nearest_neighbor", "cubic"])
def test_tf_crop_and_resize_extrapolates_outside_the_crop(method):
    x = rand(1, 2, 4, 5, dtype="float64")
    roi = (0.25, -0.375, 1.25, 0.875)  # exact in float32, as the attribute stores it
    out = run("image.resize2d", x, size=(4, 3), roi=roi, method=method, extrapolation_value=7.5,
              coordinate_transformation_mode="tf_crop_and_resize", cubic_alpha=-0.5)
    np.testing.assert_allclose(out, resize_loop(x, (4, 3), method, "tf_crop_and_resize", roi=list(roi),
                                                extrapolation=7.5, alpha=-0.5), rtol=1e-12, atol=1e-12)
    assert (out == 7.5).any()
    one = run("image.resize1d", x[:, :, 0], size=(1,), roi=(0.25, 0.75), method=method,
              coordinate_transformation_mode="tf_crop_and_resize")
    np.testing.assert_allclose(one, resize_loop(x[:, :, 0], (1,), method, "tf_crop_and_resize", roi=[0.25, 0.75]))


def test_channels_last_layout_and_dtypes():
    x = rand(1, 3, 4, 2)
    out = run("image.resize2d", x, size=(5, 6), layout="NHWC")
    expected = run("image.resize2d", x.transpose(0, 3, 1, 2), size=(5, 6)).transpose(0, 2, 3, 1)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    ints = np.arange(24, dtype="int32").reshape(1, 2, 3, 4)
    nearest = run("image.resize3d", ints[None], size=(2, 6, 2), method="nearest_neighbor", layout="NCDHW")
    assert nearest.dtype == np.int32 and nearest.shape == (1, 1, 2, 6, 2)


@pytest.mark.parametrize("build, message", [
    (lambda x: relay.image.resize2d(x, size=(3,)), "size=.* must give 2 positive lengths"),
    (lambda x: relay.image.resize2d(x, size=(3, 0)), "must give 2 positive lengths"),
    (lambda x: relay.image.resize1d(x, size=(3,)), "needs 3-D data"),
    (lambda x: relay.image.resize2d(x, size=(3, 3), layout="NCW"), "layout 'NCW'"),
    (lambda x: relay.image.resize2d(x, size=(3, 3), scales=(2.0,)), "scales=.* 2 positive factors"),
    (lambda x: relay.image.resize2d(x, size=(3, 3), roi=(0.0, 1.0)), "roi=.* 4 values"),
    (lambda x: relay.image.resize2d(relay.var("i", shape=(1, 1, 2, 2), dtype="int32"), size=(3, 3)),
     "linear interpolation needs floating-point data"),
    (lambda x: relay.image.resize2d(relay.var("i", shape=(1, 1, 2, 2), dtype="int8"), size=(3, 3), method="cubic"),
     "cubic interpolation needs floating-point data"),
])
def test_resize_type_errors(build, message):
    with pytest.raises(TypeInferenceError, match=message):
        ir.infer_type(build(relay.var("x", shape=(1, 2, 4, 4))))


def test_unknown_method_and_rounding_are_refused_by_name():
    x = relay.var("x", shape=(1, 2, 4, 4))
    with pytest.raises(AttrsError, match="'method' must be one of .*got 'area'"):
        relay.image.resize2d(x, size=(3, 3), method="area")
    with pytest.raises(AttrsError, match="'rounding_method' must be one of .*got 'round'"):
        relay.image.resize2d(x, size=(3, 3), rounding_method="round")


def test_cubic_weights_sum_to_one_and_reproduce_a_ramp():
    """Keys' kernel is a partition of unity and reproduces a linear ramp away from the edges."""
    ramp = np.arange(8, dtype="float64").reshape(1, 1, 8)
    out = run("image.resize1d", ramp, size=(16,), method="cubic", cubic_alpha=-0.5,
              coordinate_transformation_mode="align_corners")
    np.testing.assert_allclose(out[0, 0, 3:13], np.linspace(0, 7, 16)[3:13], rtol=1e-12)  # 4 neighbours inside
    ones = run("image.resize1d", np.ones((1, 1, 5)), size=(9,), method="cubic", cubic_exclude=1)
    np.testing.assert_allclose(ones, 1.0, rtol=1e-12)
