"""ONNX in, ONNX out: the one call for users whose models are ONNX files.

The `ort` target's program is ONNX Runtime's program: it is written with ONNX Runtime's contrib
ops and blocked-layout kernels unless the caller asks for standard ONNX only, in which case the
blocked-layout rules are left out, so no blocked layout is ever written as transposes.
"""

from __future__ import annotations

import os
from typing import Any

import ir

from .optimize import Optimized, optimize

__all__ = ["optimize_onnx", "exports_contrib", "to_onnx"]


def exports_contrib(target: str, standard_onnx: bool = False, onnx_contrib: bool = False) -> bool:
    """Whether a program extracted for `target` is written with ONNX Runtime's contrib ops: always
    for `ort` (its kernels) unless `standard_onnx`, and for other targets when `onnx_contrib`."""
    if standard_onnx and onnx_contrib:
        raise ValueError("standard_onnx and onnx_contrib contradict each other: give one of them")
    return onnx_contrib or (target == "ort" and not standard_onnx)


def to_onnx(res: Optimized, standard_onnx: bool = False, onnx_contrib: bool = False) -> Any:
    """`res`'s program as an `onnx.ModelProto`, written for its target (see `exports_contrib`)."""
    return ir.frontend.to_onnx(res.mod, res.params, contrib=exports_contrib(res.target, standard_onnx, onnx_contrib))


def optimize_onnx(model: Any, *, target: str = "ort", standard_onnx: bool = False, **options: Any) -> Any:
    """Optimize an ONNX model (an `onnx.ModelProto` or a path) and return the optimized `onnx.ModelProto`.

    `target` defaults to ONNX Runtime ("ort"), whose kernels the result uses unless `standard_onnx`;
    the other `options` are `eqsat.optimize`'s (`limits`, `extractor`, `verify`, `log`, ...). The
    result is verified where it will run before it is returned (see `eqsat.optimize`).
    """
    source = os.fspath(model) if isinstance(model, (str, os.PathLike)) else model
    mod, params = ir.frontend.from_onnx(source)
    res = optimize(mod, params, target=target, standard_onnx=standard_onnx, **options)
    return to_onnx(res, standard_onnx)
