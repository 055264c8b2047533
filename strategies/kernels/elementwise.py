"""Element-wise kernels that can write their output into a donated input; fused activations; a float32 erf.

`elementwise_compute(op)` gives the op's compute as a `PreparedCompute`
(`strategies.kernels.prepared`): for a float output it applies the same numpy operations as the
reference kernel, in the same order, so the values are identical, but it writes into a donated
input of the output's shape and dtype when the executor offers one, instead of a new array (one
memory pass and one allocation fewer per op). Other dtypes run the reference function unchanged.

`epilogue` applies a fused form's activation in place with the same in-place forms.

`erf_float32` is an erf computed in float32 throughout (Abramowitz & Stegun 7.1.26): its absolute
error stays below 1e-6 while scipy's erf, which evaluates in float64, is several times slower.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ir.attrs import Attrs
from ir.op.activation import HARD_SWISH_ALPHA, HARD_SWISH_BETA
from ir.op.shapes import normalize_axis
from ir.types import Type

from .prepared import Kernel, PreparedCompute, donated_buffer, static_shape
from .reference import BINARY_FUNCTIONS, UNARY_FUNCTIONS, along_axis, cast_to_type, reference_kernel

__all__ = ["elementwise_compute", "ops_with_in_place_form", "epilogue", "erf_float32", "ERF_FLOAT32"]

#: fn(*inputs, out=None | array) -> array; `out` may be one of the inputs
InPlace = Callable[..., np.ndarray]


def _relu(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return np.maximum(x, 0, out=out)


def _sigmoid(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    out = np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


def _rsqrt(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    out = np.sqrt(x, out=out)
    return np.reciprocal(out, out=out)


def _bias_add(attrs: Attrs, ndim: int) -> InPlace:
    axis = normalize_axis(attrs.axis, ndim)
    return lambda x, bias, out=None: np.add(x, along_axis(bias, axis, ndim), out=out)


def _clip(attrs: Attrs, ndim: int) -> InPlace:
    def clip(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out = np.maximum(x, attrs.a_min, out=out)
        return np.minimum(out, attrs.a_max, out=out)
    return clip


def _hard_sigmoid(alpha: float, beta: float) -> InPlace:
    def hard_sigmoid(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out = np.multiply(x, x.dtype.type(alpha), out=out)
        out += x.dtype.type(beta)
        np.maximum(out, 0, out=out)
        return np.minimum(out, 1, out=out)
    return hard_sigmoid


def _hard_swish(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    gate = _hard_sigmoid(HARD_SWISH_ALPHA, HARD_SWISH_BETA)(x)  # a temporary: `out` may be `x`
    return np.multiply(x, gate, out=out)


def _sigmoid_gate(alpha: float) -> InPlace:
    def sigmoid_gate(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        gate = x.copy() if alpha == 1.0 else np.multiply(x, x.dtype.type(alpha))  # a temporary: `out` may be `x`
        return np.multiply(x, _sigmoid(gate, out=gate), out=out)
    return sigmoid_gate


def _leaky_relu(alpha: float) -> InPlace:
    def leaky_relu(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        scaled = ~(x > 0)  # NaN is scaled too, as in the reference's where(x > 0, x, x * alpha)
        out = x.copy() if out is None else out  # a unary op's donated buffer is its input
        return np.multiply(out, alpha, out=out, where=scaled)
    return leaky_relu


#: in-place forms of the ops whose reference function is no ufunc (a ufunc is its own in-place form)
_FIXED_FORMS: dict[str, InPlace] = {"nn.relu": _relu, "sigmoid": _sigmoid, "rsqrt": _rsqrt, "divide": np.divide,
                                    "nn.hard_swish": _hard_swish, "nn.silu": _sigmoid_gate(1.0)}
_ATTR_FORMS: dict[str, Callable[[Attrs, int], InPlace]] = {
    "nn.bias_add": _bias_add, "clip": _clip, "nn.leaky_relu": lambda attrs, ndim: _leaky_relu(attrs.alpha),
    "nn.hard_sigmoid": lambda attrs, ndim: _hard_sigmoid(attrs.alpha, attrs.beta),
    "nn.quick_gelu": lambda attrs, ndim: _sigmoid_gate(attrs.alpha)}
#: the activations of the fused forms (`ir.op.fused.ACTIVATIONS`)
_ACTIVATIONS: dict[str, InPlace] = {"relu": _relu, "sigmoid": _sigmoid, "tanh": np.tanh}


def epilogue(out: np.ndarray, attrs: Attrs) -> np.ndarray:
    """Apply a fused form's activation (`attrs.activation`, with its parameters) to `out` in place (a
    fresh, writable float array)."""
    activation = attrs.activation
    if activation == "none":
        return out
    if activation == "leaky_relu":
        return _leaky_relu(attrs.alpha)(out, out=out)
    if activation in ("clip", "hard_sigmoid"):  # the op's form reads the same attribute names
        return _ATTR_FORMS["clip" if activation == "clip" else "nn.hard_sigmoid"](attrs, out.ndim)(out, out=out)
    if activation not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}")
    return _ACTIVATIONS[activation](out, out=out)


def _float_ufunc(function: Callable) -> bool:
    """A numpy ufunc with a float32 loop that gives float32 (comparisons give bools)."""
    return isinstance(function, np.ufunc) and f"{'f' * function.nin}->f" in function.types


def _in_place_form(op_name: str, attrs: Attrs, ndim: int) -> InPlace | None:
    if op_name in _ATTR_FORMS:
        return _ATTR_FORMS[op_name](attrs, ndim)
    if op_name in _FIXED_FORMS:
        return _FIXED_FORMS[op_name]
    function = UNARY_FUNCTIONS.get(op_name) or BINARY_FUNCTIONS.get(op_name)
    return function if _float_ufunc(function) else None


def ops_with_in_place_form() -> list[str]:
    """The ops `elementwise_compute` covers, sorted."""
    ufuncs = [name for name, fn in {**UNARY_FUNCTIONS, **BINARY_FUNCTIONS}.items() if _float_ufunc(fn)]
    return sorted({*ufuncs, *_FIXED_FORMS, *_ATTR_FORMS})


def elementwise_compute(op_name: str) -> PreparedCompute:
    """The compute of an element-wise op that writes a float output into a donated input when offered one.

    Raises `KeyError` for an op outside `ops_with_in_place_form()`.
    """
    if op_name not in ops_with_in_place_form():
        raise KeyError(f"{op_name} has no in-place element-wise form; covered: {ops_with_in_place_form()}")
    reference = reference_kernel(op_name)

    def prepare(attrs: Attrs, constants: Sequence[Any], out_type: Type, config: Mapping[str, Any]) -> Kernel:
        dtype = np.dtype(out_type.dtype)
        form = _in_place_form(op_name, attrs, out_type.ndim) if dtype.kind == "f" else None
        if form is None:
            return lambda inputs, donated: cast_to_type(reference(attrs, *inputs), out_type)
        shape = static_shape(out_type)

        def kernel(inputs: Sequence[Any], donated) -> Any:
            out = donated_buffer(inputs, donated, shape, dtype)
            return cast_to_type(form(*inputs, out=out), out_type)
        return kernel

    return PreparedCompute(prepare, f"in_place_{op_name.replace('.', '_')}", uses_donations=True)


# -- erf in float32 -----------------------------------------------------------------------------

_ERF_P = np.float32(0.3275911)
#: a1..a5 of Abramowitz & Stegun 7.1.26, highest degree first (Horner order)
_ERF_A = tuple(np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


#: elements per block of `erf_float32`: its three float32 temporaries stay in a core's L2 cache
_ERF_BLOCK = 32768


def erf_float32(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """erf(x) = 1 - (a1 t + ... + a5 t^5) exp(-x^2), t = 1 / (1 + p |x|), with the sign of x.

    Every step is a float32 numpy operation, run block by block so the temporaries stay in cache;
    the absolute error is below 1e-6 everywhere (1.5e-7 from the approximation, the rest float32
    rounding); erf(+-inf) = +-1 and NaN stays NaN. `out` may be `x` itself.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    result = out if out is not None and out.flags.c_contiguous else np.empty_like(x)
    flat_x, flat_out = x.reshape(-1), result.reshape(-1)
    magnitude, t, poly = (np.empty(min(_ERF_BLOCK, flat_x.size), np.float32) for _ in range(3))
    for start in range(0, flat_x.size, _ERF_BLOCK):
        xs = flat_x[start:start + _ERF_BLOCK]
        m, tb, p = magnitude[:xs.size], t[:xs.size], poly[:xs.size]
        np.abs(xs, out=m)
        np.multiply(m, _ERF_P, out=tb)
        tb += 1
        np.reciprocal(tb, out=tb)
        np.multiply(tb, _ERF_A[0], out=p)
        for a in _ERF_A[1:]:
            p += a
            p *= tb
        with np.errstate(over="ignore"):  # |x| past 1.8e19: x^2 is inf and exp(-x^2) the exact 0
            np.square(m, out=m)
        np.negative(m, out=m)
        np.exp(m, out=m)
        p *= m
        np.subtract(np.float32(1), p, out=p)
        np.copysign(p, xs, out=flat_out[start:start + _ERF_BLOCK])
    if out is not None and result is not out:
        np.copyto(out, result)
        return out
    return result


def _prepare_erf(attrs: Attrs, constants: Sequence[Any], out_type: Type, config: Mapping[str, Any]) -> Kernel:
    shape = static_shape(out_type)
    dtype = np.dtype(np.float32)

    def kernel(inputs: Sequence[Any], donated) -> np.ndarray:
        out = donated_buffer(inputs, donated, shape, dtype)
        return erf_float32(inputs[0], out)
    return kernel


#: the compute of `erf` on float32 tensors by `erf_float32`
ERF_FLOAT32 = PreparedCompute(_prepare_erf, "erf_float32", uses_donations=True)
