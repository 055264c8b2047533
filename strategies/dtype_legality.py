"""Legality per dtype: the element types a target's kernels run, per op.

ONNX Runtime's CPU kernels (the `ort` target) cover fewer dtypes than the IR's ops accept: no
int16 / int64 / unsigned `Relu`, no int8 `MatMul`, no int8 / int16 / unsigned `ReduceSum`, no
float64 `Erf`/`Gelu`, and no bfloat16 at all (the exporter writes none). `ORT_CPU_DTYPES`
lists, per IR op, the dtypes of its first input for which the exported form of the op (as
`ir.frontend.to_onnx(..., contrib=True)` writes it) runs in ONNX Runtime 1.32 on CPU, probed with
one-node models (`tests/eqsat/soundness/test_dtype_exactness.py` probes them again). Ops not listed run every
dtype the IR accepts, except bfloat16. The cost model makes an illegal (op, dtype) pair cost
infinity, so extraction never picks it. The `cpu` target's numpy kernels have no bfloat16
contraction (`NUMPY_NO_BFLOAT16`).
"""

from __future__ import annotations

from typing import Mapping

from ir.types import TensorType, TupleType, Type

from .target import Target

__all__ = ["ORT_CPU_DTYPES", "NUMPY_NO_BFLOAT16", "all_dtypes", "dtype_problem", "first_dtype"]

_F = frozenset({"float16", "float32", "float64"})
_F32 = frozenset({"float16", "float32"})
_S = frozenset({"int8", "int32", "int64"})
_U = frozenset({"uint8", "uint32", "uint64"})

ORT_CPU_DTYPES: Mapping[str, frozenset[str]] = {
    "nn.relu": _F | {"int8", "int32"},
    "negative": _F | {"int8", "int16", "int32", "int64"},
    "erf": _F32, "nn.gelu": _F32,
    "nn.leaky_relu": _F, "nn.softmax": _F, "nn.log_softmax": _F, "nn.dense": _F,
    "clip": _F | _S | _U, "maximum": _F | _S | _U, "minimum": _F | _S | _U,
    "max": _F | _S | {"uint8"}, "min": _F | _S | {"uint8"},
    "sum": _F | {"int32", "int64"}, "mean": _F | {"int32", "int64"}, "prod": _F | {"int32", "int64"},
    "power": _F | {"int32", "int64"},
    "nn.matmul": _F | {"int32", "int64", "uint32", "uint64"},
    "nn.batch_matmul": _F | {"int32", "int64", "uint32", "uint64"},
    "nn.fused_matmul": _F | {"int32", "int64", "uint32", "uint64"},
}
"""per IR op, the dtypes of its first input that ONNX Runtime's CPU kernels run (ops not listed:
every dtype but bfloat16)."""


NUMPY_NO_BFLOAT16 = frozenset({"nn.dense", "nn.dense_bias_act", "nn.feed_forward", "nn.conv1d", "nn.conv2d",
                               "nn.conv3d", "nn.conv2d_bias_act", "nn.conv1d_transpose", "nn.conv2d_transpose",
                               "nn.conv3d_transpose"})
"""ops whose numpy kernels (the `cpu` target's) contract with `np.einsum`, which has no bfloat16."""


def first_dtype(types: tuple[Type, ...] | list[Type]) -> str | None:
    """The dtype of the first tensor among `types` (tuple fields included)."""
    for ty in types:
        if isinstance(ty, TupleType):
            found = first_dtype(list(ty.fields))
            if found is not None:
                return found
        elif isinstance(ty, TensorType):
            return ty.dtype
    return None


def all_dtypes(types: tuple[Type, ...] | list[Type]) -> set[str]:
    """The dtypes of every tensor among `types` (tuple fields included)."""
    out: set[str] = set()
    for ty in types:
        if isinstance(ty, TupleType):
            out |= all_dtypes(ty.fields)
        elif isinstance(ty, TensorType):
            out.add(ty.dtype)
    return out


def dtype_problem(op: str, in_types: tuple[Type, ...], out_type: Type, target: Target) -> str | None:
    """Why `target` cannot run `op` on these dtypes (None when it can): the `ort` target's kernels
    are ONNX Runtime's (`ORT_CPU_DTYPES`); the `cpu` target's numpy kernels run every dtype but
    bfloat16 in the einsum contractions (`NUMPY_NO_BFLOAT16`)."""
    if "ort" not in target.keys:
        if "cpu" in target.keys and op in NUMPY_NO_BFLOAT16 and first_dtype(in_types) == "bfloat16":
            return f"{op} on bfloat16: numpy's einsum (the cpu kernels' contraction) has no bfloat16"
        return None
    if "bfloat16" in all_dtypes((*in_types, out_type)):
        return f"{op} on bfloat16: ONNX Runtime's CPU kernels (and the ONNX export) have no bfloat16"
    allowed = ORT_CPU_DTYPES.get(op)
    dtype = first_dtype(in_types)
    if allowed is None or dtype is None or dtype in allowed:
        return None
    return f"{op} on {dtype}: ONNX Runtime's CPU kernels run it for {', '.join(sorted(allowed))} only"
