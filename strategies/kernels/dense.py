"""Competing dense / matmul / batch_matmul kernels (numpy + BLAS), with fused epilogues.

- `gemm`: one BLAS GEMM per matrix (dense flattens the leading axes into rows first);
- `blocked`: dense as GEMMs over blocks of `tile_rows` rows; a fused epilogue (bias, activation)
  runs on each block while it is still in cache;
- `stacked`: numpy's stacked matmul on contiguous copies (one C loop over many small matrices,
  instead of one Python-level BLAS call each);
- `einsum`: numpy's einsum contraction (its own loops, no BLAS).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ir.attrs import Attrs

from .conv2d import epilogue
from .gemm import gemm

__all__ = ["dense", "dense_bias_act", "matmul", "fused_matmul"]


def _cast(attrs: Attrs, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    if not attrs.out_dtype:
        return arrays
    return tuple(a.astype(attrs.out_dtype, copy=False) for a in arrays)


def _dense(algorithm: str, data: np.ndarray, weight: np.ndarray, config: Mapping[str, Any],
           bias: np.ndarray | None = None, activation: str = "none", alpha: float = 0.0) -> np.ndarray:
    out_shape = data.shape[:-1] + (weight.shape[0],)
    if algorithm == "einsum":
        out = np.einsum("...k,uk->...u", data, weight)
        if bias is not None:
            out += bias
            epilogue(out, activation, alpha)
        return out
    rows = data.reshape(-1, data.shape[-1])
    out = np.empty((rows.shape[0], weight.shape[0]), dtype=np.result_type(data, weight))
    tile = config.get("tile_rows", 256) if algorithm == "blocked" else max(1, rows.shape[0])
    for start in range(0, rows.shape[0], tile):
        block = np.matmul(rows[start:start + tile], weight.T, out=out[start:start + tile])
        if bias is not None:
            block += bias
            epilogue(block, activation, alpha)
    return out.reshape(out_shape)


def dense(algorithm: str, attrs: Attrs, data: np.ndarray, weight: np.ndarray, config: Mapping[str, Any]) -> np.ndarray:
    """`nn.dense` (data @ weight.T) with the named algorithm."""
    return _dense(algorithm, *_cast(attrs, data, weight), config)


def dense_bias_act(algorithm: str, attrs: Attrs, data: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                   config: Mapping[str, Any]) -> np.ndarray:
    """`nn.dense_bias_act`: activation(data @ weight.T + bias), the epilogue fused per algorithm."""
    data, weight = _cast(attrs, data, weight)
    return _dense(algorithm, data, weight, config, bias, attrs.activation, attrs.alpha)


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
