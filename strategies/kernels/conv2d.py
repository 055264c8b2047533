"""Competing 2-D convolution algorithms (numpy + BLAS), and the fused bias/activation epilogue.

Every algorithm works in NCHW / OIHW (other layouts are converted on the way in and out), makes
its GEMMs through `gemm` (one BLAS call per matrix) and computes in the input dtype. Each has a
`pack` step that turns the OIHW weight into the form its GEMMs read, and a `run` step that
convolves with the packed weight; `conv2d_compute` packs a constant weight once, when the program
is built (`strategies.kernels.prepared`), and any other weight on every call.

- `im2col`: write each tap's shifted view of the input into a column matrix, then one GEMM per
  group (knob `fold_batch`: the whole batch in one GEMM's columns instead of one GEMM per image).
  The columns come straight from the unpadded input; the padding strips are zeroed, never copied;
- `direct`: accumulate one GEMM per kernel tap, never building the column matrix (knob
  `oc_block`: output channels per accumulation block); depthwise convolutions become a
  multiply-add per tap. Any spatial rank: it also runs `nn.conv1d` and `nn.conv3d`;
- `winograd`: F(2x2, 3x3) for 3x3 kernels with stride 1, dilation 1 and one group: 16 GEMMs on
  transformed 4x4 tiles, 2.25x fewer multiplications than the direct form. The weights are
  transformed when packed; the input and output transforms run on strided slices of the whole
  tensor (rows first, then columns), eight numpy calls each way plus the output's interleave;
- `gemm_1x1`: a 1x1 kernel without padding is a plain GEMM over the (strided) pixels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ir.attrs import Attrs
from ir.types import Type

from .elementwise import epilogue
from .gemm import gemm
from .layout import from_nchw, inside_range, pad_spatial, to_nchw, weight_to_oihw
from .prepared import Kernel, PreparedCompute

__all__ = ["ALGORITHMS", "Algorithm", "conv2d_compute", "winograd_applies", "gemm_1x1_applies", "is_depthwise"]


@dataclass(frozen=True)
class Algorithm:
    """A convolution algorithm: `pack(attrs, oihw_weight)` once per weight, `run(attrs, nchw, packed, config)`."""

    pack: Callable[[Attrs, np.ndarray], Any]
    run: Callable[[Attrs, np.ndarray, Any, Mapping[str, Any]], np.ndarray]


def _out_size(size: int, kernel: int, stride: int, dilation: int) -> int:
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def _grouped(attrs: Attrs, w: np.ndarray) -> np.ndarray:
    """The weight as a contiguous [G, OCg, Cg, k...]."""
    oc = w.shape[0]
    return np.ascontiguousarray(w).reshape(attrs.groups, oc // attrs.groups, *w.shape[1:])


# -- im2col -------------------------------------------------------------------------------------

Region = tuple[slice, slice]
#: per kernel tap (p, q): the output regions that fall in the padding, and (output region, input region) or None
TapPlan = tuple[int, int, tuple[Region, ...], "tuple[Region, Region] | None"]


@lru_cache(maxsize=512)
def _column_plan(in_hw: tuple[int, int], kernel_hw: tuple[int, int], out_hw: tuple[int, int],
                 strides: tuple[int, int], dilation: tuple[int, int], top_left: tuple[int, int]) -> tuple[TapPlan, ...]:
    """Where each kernel tap's columns are zero (padding) and where they copy the input from (memoized)."""
    plan = []
    (h, w), (oh, ow), (sh, sw), (dh, dw), (top, left) = in_hw, out_hw, strides, dilation, top_left
    for p in range(kernel_hw[0]):
        r0, r1, i0 = inside_range(oh, h, top, p * dh, sh)
        for q in range(kernel_hw[1]):
            c0, c1, j0 = inside_range(ow, w, left, q * dw, sw)
            if r0 == r1 or c0 == c1:
                plan.append((p, q, ((slice(None), slice(None)),), None))
                continue
            strips = ((0, r0, 0, ow), (r1, oh, 0, ow), (r0, r1, 0, c0), (r0, r1, c1, ow))  # rows, columns
            zeros = tuple((slice(a, b), slice(c, d)) for a, b, c, d in strips if a < b and c < d)
            source = (slice(i0, i0 + (r1 - r0 - 1) * sh + 1, sh), slice(j0, j0 + (c1 - c0 - 1) * sw + 1, sw))
            plan.append((p, q, zeros, ((slice(r0, r1), slice(c0, c1)), source)))
    return tuple(plan)


def _columns(attrs: Attrs, x: np.ndarray, kh: int, kw: int, oh: int, ow: int) -> np.ndarray:
    """[N, C, KH, KW, OH, OW]: each tap's input pixels, zero where the tap falls in the padding."""
    n, c, h, w = x.shape
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    for p, q, zeros, copy in _column_plan((h, w), (kh, kw), (oh, ow), attrs.strides, attrs.dilation,
                                          attrs.padding[:2]):
        tap = cols[:, :, p, q]
        for rows, columns in zeros:
            tap[:, :, rows, columns] = 0
        if copy is not None:
            (rows, columns), (in_rows, in_columns) = copy
            tap[:, :, rows, columns] = x[:, :, in_rows, in_columns]
    return cols


def _im2col(attrs: Attrs, x: np.ndarray, w: np.ndarray, config: Mapping[str, Any]) -> np.ndarray:
    n, _, h, wd = x.shape
    groups, ocg, cg, kh, kw = w.shape
    oh = _out_size(h + attrs.padding[0] + attrs.padding[2], kh, attrs.strides[0], attrs.dilation[0])
    ow = _out_size(wd + attrs.padding[1] + attrs.padding[3], kw, attrs.strides[1], attrs.dilation[1])
    cols = _columns(attrs, x, kh, kw, oh, ow)
    weights = w.reshape(groups, ocg, cg * kh * kw)
    if config.get("fold_batch") and n > 1:
        folded = cols.reshape(n, groups, cg * kh * kw, oh * ow).transpose(1, 2, 0, 3).reshape(groups, cg * kh * kw, -1)
        out = gemm(weights, folded).reshape(groups * ocg, n, oh, ow)
        return np.ascontiguousarray(out.transpose(1, 0, 2, 3))
    return gemm(weights, cols.reshape(n, groups, cg * kh * kw, oh * ow)).reshape(n, groups * ocg, oh, ow)


# -- direct -------------------------------------------------------------------------------------

def is_depthwise(attrs: Attrs, in_channels: int) -> bool:
    """One input channel per group (each output channel sees a single input channel)."""
    return attrs.groups > 1 and attrs.groups == in_channels


def _pack_direct(attrs: Attrs, w: np.ndarray) -> np.ndarray:
    """[k..., G, OCg, Cg]: each tap's weights are one contiguous block of matrices."""
    grouped = _grouped(attrs, w)
    rank = grouped.ndim - 3
    return np.ascontiguousarray(grouped.transpose(*range(3, 3 + rank), 0, 1, 2))


def _direct(attrs: Attrs, x: np.ndarray, weights: np.ndarray, config: Mapping[str, Any]) -> np.ndarray:
    """One GEMM per kernel tap, of any spatial rank (1-D, 2-D, 3-D)."""
    xp = pad_spatial(x, attrs.padding)
    n = xp.shape[0]
    *kernel, groups, ocg, cg = weights.shape
    out_sizes = [_out_size(size, k, s, d) for size, k, s, d in zip(xp.shape[2:], kernel, attrs.strides,
                                                                   attrs.dilation)]
    pixels_out = math.prod(out_sizes)
    out = np.zeros((n, groups, ocg, pixels_out), dtype=np.result_type(x, weights))
    block = config.get("oc_block") or ocg
    for tap in np.ndindex(*kernel):
        where = tuple(slice(t * d, t * d + s * (o - 1) + 1, s)
                      for t, d, s, o in zip(tap, attrs.dilation, attrs.strides, out_sizes))
        pixels = xp[(slice(None), slice(None)) + where].reshape(n, groups, cg, pixels_out)
        if cg == 1:  # depthwise-like: a broadcast multiply-add, no GEMM
            out += weights[tap][None] * pixels
            continue
        for start in range(0, ocg, block):
            out[:, :, start:start + block] += gemm(weights[tap][:, start:start + block], pixels)
    return out.reshape(n, groups * ocg, *out_sizes)


# -- winograd F(2x2, 3x3) -----------------------------------------------------------------------

def winograd_applies(attrs: Attrs, kernel_hw: tuple[int, int]) -> bool:
    """F(2x2, 3x3) needs a 3x3 kernel, stride 1, dilation 1 and a single group."""
    return kernel_hw == (3, 3) and attrs.strides == (1, 1) and attrs.dilation == (1, 1) and attrs.groups == 1


def _pack_winograd(attrs: Attrs, g: np.ndarray) -> np.ndarray:
    """G g G^T of every [3, 3] kernel, as 16 contiguous [OC, C] matrices (one per tile position)."""
    half = g.dtype.type(0.5)
    t = np.stack([g[..., 0, :], half * (g[..., 0, :] + g[..., 1, :] + g[..., 2, :]),
                  half * (g[..., 0, :] - g[..., 1, :] + g[..., 2, :]), g[..., 2, :]], axis=-2)
    u = np.stack([t[..., 0], half * (t[..., 0] + t[..., 1] + t[..., 2]),
                  half * (t[..., 0] - t[..., 1] + t[..., 2]), t[..., 2]], axis=-1)
    return np.ascontiguousarray(u.transpose(2, 3, 0, 1).reshape(16, *g.shape[:2]))


def _transform_pairs(rows: Sequence[np.ndarray], out: np.ndarray) -> None:
    """out[k] = (B^T rows)[k] for k = 0..3, where B^T = [[1,0,-1,0], [0,1,1,0], [0,-1,1,0], [0,1,0,-1]]."""
    np.subtract(rows[0], rows[2], out=out[0])
    np.add(rows[1], rows[2], out=out[1])
    np.subtract(rows[2], rows[1], out=out[2])
    np.subtract(rows[1], rows[3], out=out[3])


def _winograd(attrs: Attrs, x: np.ndarray, u: np.ndarray, config: Mapping[str, Any]) -> np.ndarray:
    top, left, bottom, right = attrs.padding
    n, c, h, wd = x.shape
    oc = u.shape[1]
    oh, ow = h + top + bottom - 2, wd + left + right - 2
    th, tw = (oh + 1) // 2, (ow + 1) // 2
    # zero-padded so that the 4x4 tiles (stride 2) cover the output exactly
    xp = np.zeros((n, c, 2 * th + 2, 2 * tw + 2), dtype=x.dtype)
    xp[:, :, top:top + h, left:left + wd] = x
    # input transform B^T d B: rows of every tile at once, then columns
    rows_t = np.empty((4, n, c, th, 2 * tw + 2), dtype=x.dtype)
    _transform_pairs([xp[:, :, i:i + 2 * th:2] for i in range(4)], rows_t)
    v = np.empty((4, 4, c, n, th, tw), dtype=x.dtype)
    v_nc = v.transpose(1, 0, 3, 2, 4, 5)  # [col, row, N, C, th, tw] view for the writes
    _transform_pairs([rows_t[..., j:j + 2 * tw:2] for j in range(4)], v_nc)
    m = gemm(u, v.reshape(16, c, n * th * tw)).reshape(4, 4, oc, n, th, tw)
    # output transform A^T m A, A^T = [[1,1,1,0], [0,1,-1,-1]]: rows, then columns into the interleave
    first = m[0] + m[1]
    first += m[2]
    second = m[1] - m[2]
    second -= m[3]
    y = np.empty((n, oc, 2 * th, 2 * tw), dtype=m.dtype)
    y_tiles = y.reshape(n, oc, th, 2, tw, 2).transpose(3, 5, 1, 0, 2, 4)  # [row, col, OC, N, th, tw]
    for row, t in enumerate((first, second)):
        np.add(t[0], t[1], out=y_tiles[row, 0])
        y_tiles[row, 0] += t[2]
        np.subtract(t[1], t[2], out=y_tiles[row, 1])
        y_tiles[row, 1] -= t[3]
    return y if (oh, ow) == y.shape[2:] else np.ascontiguousarray(y[:, :, :oh, :ow])


# -- 1x1 as GEMM --------------------------------------------------------------------------------

def gemm_1x1_applies(attrs: Attrs, kernel_hw: tuple[int, int]) -> bool:
    """A 1x1 kernel with no padding and one group is a GEMM over the (strided) pixels."""
    return kernel_hw == (1, 1) and attrs.padding == (0, 0, 0, 0) and attrs.groups == 1


def _pack_1x1(attrs: Attrs, w: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(w.reshape(w.shape[0], w.shape[1]))


def _gemm_1x1(attrs: Attrs, x: np.ndarray, w: np.ndarray, config: Mapping[str, Any]) -> np.ndarray:
    sh, sw = attrs.strides
    if (sh, sw) != (1, 1):
        x = x[:, :, ::sh, ::sw]
    n, c, h, wd = x.shape
    return gemm(w, x.reshape(n, c, h * wd)).reshape(n, w.shape[0], h, wd)


ALGORITHMS: dict[str, Algorithm] = {
    "im2col": Algorithm(_grouped, _im2col),
    "direct": Algorithm(_pack_direct, _direct),
    "winograd": Algorithm(_pack_winograd, _winograd),
    "gemm_1x1": Algorithm(_pack_1x1, _gemm_1x1),
}


# -- the op computes ----------------------------------------------------------------------------

def _cast(attrs: Attrs, value: np.ndarray) -> np.ndarray:
    return value.astype(attrs.out_dtype, copy=False) if attrs.out_dtype else value


def conv2d_compute(algorithm: str, fused: bool = False) -> PreparedCompute:
    """`nn.conv2d` (or, `fused`, `nn.conv2d_bias_act`; or, by `direct`, `nn.conv1d` / `nn.conv3d`) by the named
    algorithm, in the call's layouts.

    A constant weight is packed once when the call is prepared; a constant bias is shaped once.
    """
    algo = ALGORITHMS[algorithm]

    def pack(attrs: Attrs, weight: np.ndarray) -> Any:
        return algo.pack(attrs, _cast(attrs, weight_to_oihw(weight, attrs.kernel_layout)))

    def prepare(attrs: Attrs, constants: Sequence[Any], out_type: Type, config: Mapping[str, Any]) -> Kernel:
        packed = pack(attrs, constants[1]) if constants[1] is not None else None
        bias = constants[2].reshape(1, -1, 1, 1) if fused and constants[2] is not None else None

        def kernel(inputs: Sequence[Any], donated) -> np.ndarray:
            x = _cast(attrs, to_nchw(inputs[0], attrs.data_layout))
            out = algo.run(attrs, x, packed if packed is not None else pack(attrs, inputs[1]), config)
            if fused:
                out += bias if bias is not None else inputs[2].reshape(1, -1, 1, 1)
                epilogue(out, attrs)
            return from_nchw(out, attrs.data_layout)
        return kernel

    suffix = "_bias_act" if fused else ""
    return PreparedCompute(prepare, f"conv2d{suffix}_{algorithm}")
