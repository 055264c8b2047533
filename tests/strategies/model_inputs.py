"""Random inputs for a program's data parameters, and the error measure the model tests report."""

from __future__ import annotations

import numpy as np

import ir
from strategies.values import random_value

__all__ = ["random_inputs", "relative_error"]


def relative_error(out, ref) -> float:
    """The largest absolute difference over the largest reference magnitude, worst output first."""
    outs, refs = (out, ref) if isinstance(ref, tuple) else ((out,), (ref,))
    assert len(outs) == len(refs)
    return max(float(np.max(np.abs(o - r))) / max(float(np.max(np.abs(r))), 1e-30) for o, r in zip(outs, refs))


def random_inputs(func: ir.Function, skip: set[str]) -> dict[str, np.ndarray]:
    """Seeded random values for the parameters of `func` not named in `skip`."""
    rng = np.random.default_rng(0)
    return {p.name_hint: random_value(p.type_annotation, rng) for p in func.params if p.name_hint not in skip}
