"""Random input sets for checking programs: typical, edge and non-finite values, per dtype, at several
sizes of the symbolic dimensions.

Input set `k` is of kind `INPUT_KINDS[k % len(INPUT_KINDS)]` (`strategies.values` draws them).

Every size variable of an input set takes one length (`symbolic_sizes` chooses them per set), so a
rule that holds at one length only (a `mean` rewritten as a `sum` scaled by 4, say) is seen.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

import ir
from ir import IRModule
from ir.dtype_info import float_info, is_float, numpy_dtype
from ir.types import DimExpr, FloorDiv, MinDim, SizeVar, TensorType, dim_value
from ir.visitor import rebuild
from strategies.values import INPUT_KINDS, random_tensor

from ..errors import VerificationError

__all__ = ["ARITHMETIC_OPS", "INPUT_KINDS", "random_inputs", "symbolic_sizes", "has_symbolic_inputs",
           "size_variables", "size_assignments", "masked_rows", "SIGNS", "perturbed", "perturb_array",
           "perturbed_program", "itemsize", "tensor_bytes"]

SMALL_PRIME = 3
"""the first length a size variable takes; then 1, then a prime above every static input dimension."""


def itemsize(dtype: str) -> int:
    return numpy_dtype(dtype).itemsize


def _input_types(mod: IRModule, skip: Sequence[str]) -> list[tuple[str, TensorType]]:
    out = []
    for p in mod["main"].params:
        if p.name_hint in skip:
            continue
        ty = p.checked_type if p.type_inferred else p.type_annotation
        if not isinstance(ty, TensorType):
            raise VerificationError(f"cannot make a random value for input {p.name_hint!r} of type {ty}")
        out.append((p.name_hint, ty))
    return out


def has_symbolic_inputs(mod: IRModule, skip: Sequence[str] = ()) -> bool:
    return any(not isinstance(d, (int, np.integer)) for _, ty in _input_types(mod, skip) for d in ty.shape)


def size_variables(mod: IRModule, skip: Sequence[str] = ()) -> list[str]:
    """The names of the size variables in the inputs' shapes, in order of first appearance."""
    names: dict[str, None] = {}
    for _, ty in _input_types(mod, skip):
        for d in ty.shape:
            for var in _vars_of(d):
                names.setdefault(var)
    return list(names)


def _vars_of(d: object) -> list[str]:
    if isinstance(d, SizeVar):
        return [d.name]
    if isinstance(d, FloorDiv):
        return _vars_of(d.numerator) + _vars_of(d.denominator)
    if isinstance(d, MinDim):
        return [n for e in d.dims for n in _vars_of(e)]
    if isinstance(d, DimExpr):
        return [n for m, _ in d.terms for a in m for n in _vars_of(a)]
    return []


def size_assignments(names: Sequence[str], size: int) -> list[dict[str, int]]:
    """Lengths to try for the size variables `names` at `size`, in turn: all `size`, then one at
    a time at twice `size` (a total length that is the sum of two others: past + new tokens)."""
    return [{}] + [{name: 2 * size} for name in names]


def _next_prime(n: int) -> int:
    n = max(n, 2)
    while any(n % k == 0 for k in range(2, int(n ** 0.5) + 1)):
        n += 1
    return n


def symbolic_sizes(mod: IRModule, skip: Sequence[str], fits: Callable[[int], bool]) -> tuple[int, ...]:
    """The lengths size variables take, one per input set in turn: `SMALL_PRIME`, 1, and the smallest
    prime above every static dimension of the inputs (a smaller prime above `SMALL_PRIME` when that
    one's tensors would not `fit`)."""
    static = [int(d) for _, ty in _input_types(mod, skip) for d in ty.shape if isinstance(d, (int, np.integer))]
    above = _next_prime(max(static, default=SMALL_PRIME) + 1)
    while above > SMALL_PRIME + 2 and not fits(above):
        above = _next_prime(above // 2)
    return (SMALL_PRIME, 1, max(above, SMALL_PRIME + 2))


def random_inputs(mod: IRModule, skip: Sequence[str] = (), seed: int = 0, kind: str = "normal",
                  size: int = SMALL_PRIME, named: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
    """Seeded random values of `kind` (see `INPUT_KINDS`) for `main`'s parameters not in `skip`;
    booleans are fair coins; every symbolic dimension has length `size`, or its entry in `named`."""
    if kind not in INPUT_KINDS:
        raise ValueError(f"unknown input kind {kind!r}; choose from {INPUT_KINDS}")
    rng = np.random.default_rng(seed)
    out = {name: random_tensor(rng, tuple(dim_value(d, size, named) for d in ty.shape), ty.dtype, kind)
           for name, ty in _input_types(mod, skip)}
    return masked_rows(out) if kind == "edge" else out


def masked_rows(values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Integer and bool inputs of two or more axes (attention masks, among others) with their first
    row all zero and their second zero at its first place, one otherwise (a fully masked row and a
    left-padded one: where attention kernels and their spellings part ways)."""
    out = dict(values)
    for name, v in values.items():
        if (v.dtype.kind in "iub") and v.ndim >= 2 and v.shape[0] >= 1 and v.shape[-1] >= 1:
            v = v.copy()
            v[0] = 0
            if v.shape[0] >= 2:
                v[1] = 1
                v[1, ..., 0] = 0
            out[name] = v
    return out


SIGNS = (1.0, -1.0)
"""the two ways values are moved, in the order verification runs them."""


def perturbed(values: Mapping[str, np.ndarray], relative: Callable[[np.dtype], float], seed: int,
              sign: float = 1.0) -> dict[str, np.ndarray]:
    """`values` with every float element scaled by 1 + sign * u * relative(dtype), u uniform in
    (-1, 1), the same u for both signs (finite values stay finite): how much an output moves then is
    the scale of its rounding noise (see `verify`, which moves both ways: a kink such as relu's
    moves one way only)."""
    rng = np.random.default_rng(seed + 0x5EED)
    return {name: perturb_array(value, relative, rng, sign) for name, value in values.items()}


_CHUNK = 1 << 16
"""elements moved at a time (`perturb_array`): the work values of a chunk stay in cache."""


def perturb_array(value: np.ndarray, relative: Callable[[np.dtype], float], rng: np.random.Generator,
                  sign: float = 1.0) -> np.ndarray:
    """`value` with every float element scaled by 1 + sign * u * relative(dtype), u uniform in (-1, 1)
    (`_draws`: the same u for both signs from generators in the same state), computed in float32
    (float64 for float64 values) and clipped to the dtype's finite range; a non-finite element stays
    as it is. A moved array is new and read-only (`ir.frozen`: a constant holds it without a copy);
    `value` of another dtype comes back as it is."""
    value = np.asarray(value)
    if not is_float(value.dtype):
        return value
    r = relative(value.dtype)
    work = np.float64 if value.dtype == np.float64 else np.float32
    draws, scale, offset = _draws(rng, value.size, work, sign * r)
    flat = value.reshape(-1)
    out = np.empty_like(flat)
    step = np.empty(min(_CHUNK, flat.size), work)
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, flat.size, _CHUNK):
            part = slice(start, min(start + _CHUNK, flat.size))
            moved = np.multiply(draws[part], scale, out=step[:part.stop - start], dtype=work)
            moved += offset
            wide = flat[part].astype(work, copy=False)
            moved *= wide  # sign * u * r * value
            np.add(wide, moved, out=out[part], casting="same_kind")
    out = out.reshape(value.shape)
    top = float(float_info(value.dtype).max) / (1 + 2 * r)
    if value.size and -top < float(value.min()) and float(value.max()) < top:  # finite, and none can overflow
        return ir.frozen(out)
    finite = np.isfinite(value)
    overflowed = ~np.isfinite(out) & finite  # a finite value moved past the dtype's range
    if overflowed.any():
        top = float(float_info(value.dtype).max)
        out[overflowed] = np.clip(out[overflowed], -top, top)
    return ir.frozen(out if finite.all() else np.where(finite, out, value))


def _draws(rng: np.random.Generator, size: int, work: type, r: float) -> tuple[np.ndarray, Any, Any]:
    """Random draws for `size` elements and the scale and offset that make `u * r` of them, u uniform
    in (-1, 1) (the same draws for `r` and `-r`). For float32, 16 random bits per element (the
    generator's raw 64-bit words split in four: a tenth of the cost of drawing floats), centred on
    a grid 2**-15 apart: `1 + u * r` on that grid is finer than float32 or any narrower dtype holds
    it (3e-8 apart for float32's `r` of 1e-3, where an ulp of 1 is 1.2e-7); float64 draws float64s."""
    if work is np.float64:
        return rng.random(size), np.float64(2 * r), np.float64(-r)
    bits = rng.bit_generator.random_raw(-(-size // 4)).view(np.uint16)[:size]  # 64 raw bits: four draws
    return bits, np.float32(r * 2.0 ** -15), np.float32(r * (2.0 ** -16 - 1.0))


ARITHMETIC_OPS = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div"}
"""ops whose scalar float operands are perturbed too (IR name -> ONNX name): where terms that share
their inputs cancel (GELU's `0.5 x + 0.5 x tanh(z)`, or `1 + tanh(z)`, as tanh(z) nears -1), moving
the inputs moves every term alike, and only a term's own constant moved shows the rounding noise
of the terms."""


def perturbed_program(mod: IRModule, params: Mapping[str, np.ndarray], relative: Callable[[np.dtype], float],
                      seed: int, sign: float = 1.0) -> tuple[IRModule, dict[str, np.ndarray]]:
    """`mod` and `params` with every float tensor constant and parameter value perturbed like
    `perturbed`; other scalar constants than the operands of `ARITHMETIC_OPS` are left alone
    (exponents, bounds, fill values: a `pow(x, 2.0)` moved off 2 is NaN for every negative x)."""
    rng = np.random.default_rng(seed + 0xC0457)

    def move(old: ir.Expr, new: ir.Expr) -> ir.Expr | None:
        if isinstance(old, ir.Constant) and is_float(old.data.dtype) and old.data.size > 1:
            return ir.Constant(perturb_array(old.data, relative, rng, sign))
        if isinstance(new, ir.Call) and getattr(new.op, "name", None) in ARITHMETIC_OPS:
            args = [ir.Constant(perturb_array(a.data, relative, rng, sign))
                    if isinstance(a, ir.Constant) and is_float(a.data.dtype) and a.data.size == 1 else a
                    for a in new.args]
            return ir.Call(new.op, args, new.attrs) if any(a is not b for a, b in zip(args, new.args)) else None
        return None

    main = mod["main"]
    body = rebuild(main.body, move)
    out = IRModule({**{name: mod[name] for name in mod}, "main": ir.Function(main.params, body, main.ret_type,
                                                                             main.attrs)})
    ir.infer_type(out)
    return out, perturbed(params, relative, seed, sign)


def tensor_bytes(mod: IRModule, size: int) -> int:
    """Bytes of every tensor `mod` makes (inputs and intermediates), size variables at `size`."""
    total = 0
    for node in ir.post_order(mod["main"]):
        ty = getattr(node, "_checked_type", None)
        for t in (ty.fields if isinstance(ty, ir.TupleType) else (ty,)):
            if isinstance(t, TensorType):
                count = int(np.prod([dim_value(d, size) for d in t.shape], dtype=np.float64))
                total += count * itemsize(t.dtype)
    return total
