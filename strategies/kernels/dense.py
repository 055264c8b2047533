"""Competing dense / matmul / batch_matmul kernels (numpy + BLAS), with fused epilogues.

- `gemm`: one BLAS GEMM per matrix (dense flattens the leading axes into rows first, and reads
  its weight through a transposed view, [K, units]: BLAS takes a transposed operand as it is);
- `blocked`: dense as GEMMs over blocks of `tile_rows` rows; a fused epilogue (bias, activation)
  runs on each block while it is still in cache;
- `stacked`: numpy's stacked matmul on contiguous copies (one C loop over many small matrices,
  instead of one Python-level BLAS call each);
- `einsum`: numpy's einsum contraction (its own loops, no BLAS).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ir.attrs import Attrs
from ir.types import Type

from .elementwise import epilogue
from .gemm import gemm
from .prepared import Kernel, PreparedCompute

__all__ = ["dense_compute", "matmul", "fused_matmul"]


def _cast(attrs: Attrs, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    if not attrs.out_dtype:
        return arrays
    return tuple(a.astype(attrs.out_dtype, copy=False) for a in arrays)


def _dense(algorithm: str, data: np.ndarray, weight_t: np.ndarray, config: Mapping[str, Any],
           bias: np.ndarray | None = None, attrs: Attrs | None = None) -> np.ndarray:
    """activation(data @ weight_t + bias) over the last axis of `data` (the activation of the fused
    form's `attrs`); `weight_t` is [K, units]."""
    out_shape = data.shape[:-1] + (weight_t.shape[1],)
    if algorithm == "einsum":
        out = np.einsum("...k,ku->...u", data, weight_t)
        if bias is not None:
            out += bias
            epilogue(out, attrs)
        return out
    rows = data.reshape(-1, data.shape[-1])
    out = np.empty((rows.shape[0], weight_t.shape[1]), dtype=np.result_type(data, weight_t))
    tile = config.get("tile_rows", 256) if algorithm == "blocked" else max(1, rows.shape[0])
    for start in range(0, rows.shape[0], tile):
        block = np.matmul(rows[start:start + tile], weight_t, out=out[start:start + tile])
        if bias is not None:
            block += bias
            epilogue(block, attrs)
    return out.reshape(out_shape)


def dense_compute(algorithm: str, fused: bool = False) -> PreparedCompute:
    """`nn.dense` (data @ weight.T), or, `fused`, `nn.dense_bias_act`, by the named algorithm.

    A constant weight is cast (to `out_dtype`) once, when the call is prepared, and read through a
    transposed view: no copy of it is made (BLAS packs its operands for a GEMM either way, so a
    transposed one costs no more per call, and a build that runs a few times does not pay for a
    transposed copy of every weight).
    """
    def prepare(attrs: Attrs, constants: Sequence[Any], out_type: Type, config: Mapping[str, Any]) -> Kernel:
        weight_t = _cast(attrs, constants[1])[0].T if constants[1] is not None else None

        def kernel(inputs: Sequence[Any], donated) -> np.ndarray:
            (data,) = _cast(attrs, inputs[0])
            w_t = weight_t if weight_t is not None else _cast(attrs, inputs[1])[0].T
            if not fused:
                return _dense(algorithm, data, w_t, config)
            return _dense(algorithm, data, w_t, config, inputs[2], attrs)
        return kernel

    return PreparedCompute(prepare, f"dense{'_bias_act' if fused else ''}_{algorithm}")


def matmul(algorithm: str, attrs: Attrs, a: np.ndarray, b: np.ndarray, config: Mapping[str, Any]) -> np.ndarray:
    """`nn.matmul` / `nn.batch_matmul` with the named algorithm."""
    a, b = _cast(attrs, a, b)
    a = np.swapaxes(a, -1, -2) if attrs.transpose_a else a
    b = np.swapaxes(b, -1, -2) if attrs.transpose_b else b
    if algorithm == "einsum":
        return np.einsum("...ij,...jk->...ik", a, b)
    if algorithm == "stacked":
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.ascontiguousarray(np.broadcast_to(a, batch + a.shape[-2:]))
        b = np.ascontiguousarray(np.broadcast_to(b, batch + b.shape[-2:]))
        return np.matmul(a, b)
    return gemm(a, b)


def fused_matmul(algorithm: str, attrs: Attrs, a: np.ndarray, b: np.ndarray, config: Mapping[str, Any]) -> np.ndarray:
    """`nn.fused_matmul`: alpha * matmul(a, b), the scale applied in place."""
    out = matmul(algorithm, attrs, a, b, config)
    out *= out.dtype.type(attrs.alpha)
    return out
