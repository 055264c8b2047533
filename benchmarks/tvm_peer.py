"""The peer of `bench_patterns`: TVM Relax's C++ pattern matcher (`tvm.relax.dpl`) on the same models.

Only `bench_patterns` imports this module, and only when asked to, so nothing else needs TVM
(`pip install apache-tvm`; 0.27.0.post1 was measured). A model reaches Relax through ONNX:
`ir.frontend.to_onnx`, then `tvm.relax.frontend.onnx.from_onnx` with the weights kept as function
parameters, as the zoo keeps them, and the exporter's own constants bound back as constants.
Unused bindings (the batch-norm statistics) are removed, since the IR graph has none.

`relax_patterns` writes each pattern of `fusion_patterns.match_patterns` with Relax ops. Relax
spells some blocks differently: `nn.dense` + `nn.bias_add` arrives as `permute_dims`, `matmul`
and `add`; `nn.batch_matmul` as `matmul`. Relax ops carry no `TOpPattern`, so the op-attribute
pattern asks for another registry attribute of the op (`TMixedPrecisionPolicy`), and `relax.dpl`
has no dominator pattern.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import tvm
from tvm import relax
from tvm.relax.dpl import DFPattern, is_const, is_op, is_tuple_get_item, rewrite_call, wildcard
from tvm.relax.frontend.onnx import from_onnx

from ir.frontend import to_onnx
from ir.module import IRModule

__all__ = ["VERSION", "UNSUPPORTED", "RelaxGraph", "import_model", "relax_patterns", "count_matches",
           "count_single_pass_matches", "count_partitions"]

VERSION: str = f"apache-tvm {tvm.__version__}"

#: pattern name -> why Relax has no equivalent
UNSUPPORTED: Mapping[str, str] = {"dominator_diamond": "relax.dpl has no dominator pattern"}

#: `TMixedPrecisionPolicy` of ops that follow their input's dtype (relu, erf, add, ...): kFollow
_FOLLOWS_INPUT_DTYPE = 1


@dataclass(frozen=True)
class RelaxGraph:
    """A model imported into Relax: the module, its binding values in order, and `var -> value`."""

    module: tvm.IRModule
    values: tuple[relax.Expr, ...]
    var2val: Any  # a tvm Map, passed to the matcher as it is (converting it per call would be timed too)


def _binding_values(func: relax.Function) -> tuple[relax.Expr, ...]:
    return tuple(binding.value for block in func.body.blocks for binding in block.bindings)


def import_model(mod: IRModule, params: Mapping[str, np.ndarray]) -> RelaxGraph:
    """`mod` (with its weight values) exported to ONNX and imported into Relax; see the module docstring."""
    module = from_onnx(to_onnx(mod, params), keep_params_in_input=True)
    main = module["main"]
    inputs = int(main.attrs["num_input"])
    constants = {var.name: value for var, value in zip(main.params[inputs:], main.attrs["params"], strict=True)
                 if var.name not in params}
    module = relax.transform.BindParams("main", constants)(module)
    module = relax.transform.DeadCodeElimination(["main"])(module)
    main = module["main"]
    return RelaxGraph(module, _binding_values(main), relax.analysis.get_var2val(main))


def _op(name: str) -> Callable[..., DFPattern]:
    return lambda *args: is_op(f"relax.{name}")(*args)


def relax_patterns() -> dict[str, DFPattern]:
    """The Relax form of every supported pattern of `fusion_patterns.match_patterns`, by the same name."""
    add, multiply, matmul = _op("add"), _op("multiply"), _op("matmul")
    conv = _op("nn.conv2d")(wildcard(), wildcard())
    conv_bias = add(conv, wildcard())
    dense_bias = add(matmul(wildcard(), _op("permute_dims")(wildcard())), wildcard())
    gamma, x, mean, var, eps, beta = (wildcard() for _ in range(6))
    scores = _op("divide")(matmul(wildcard(), wildcard()), is_const())
    gelu_input = add(matmul(wildcard(), _op("permute_dims")(wildcard())), wildcard())
    return {
        "conv2d_bias_relu": conv_bias | _op("nn.relu")(conv_bias),
        "conv2d_bn_relu": _op("nn.relu")(is_tuple_get_item(
            _op("nn.batch_norm")(conv, wildcard(), wildcard(), wildcard(), wildcard()), 0)),
        "diamond": add(_op("nn.relu")(conv), _op("nn.leakyrelu")(conv)),
        "dense_bias": dense_bias,
        "batch_norm_arith": add(_op("divide")(multiply(gamma, _op("subtract")(x, mean)),
                                              _op("sqrt")(add(var, eps))), beta),
        "add_or_mul_const": add(wildcard(), is_const()) | multiply(wildcard(), is_const()),
        "relu_elemwise_attr": is_op("relax.nn.relu").has_attr(
            {"TMixedPrecisionPolicy": _FOLLOWS_INPUT_DTYPE})(wildcard()),
        "attention": matmul(_op("nn.softmax")(scores), wildcard()),
        "bias_gelu": multiply(multiply(is_const(), gelu_input),
                              add(is_const(), _op("erf")(multiply(gelu_input, is_const())))),
    }


def count_matches(graph: RelaxGraph, pattern: DFPattern) -> int:
    """How many binding values match `pattern`, asking the matcher once per binding (like `pattern.match`)."""
    return sum(bool(pattern.match(value, graph.var2val)) for value in graph.values)


def count_single_pass_matches(graph: RelaxGraph, pattern: DFPattern) -> int:
    """How many expressions match `pattern` in one C++ traversal (`rewrite_call` that keeps each match)."""
    found = []

    def keep(matched: relax.Expr, _bindings: Any) -> relax.Expr:
        found.append(matched)
        return matched

    rewrite_call(pattern, keep, graph.module["main"])
    return len(found)


def count_partitions(graph: RelaxGraph, name: str, pattern: DFPattern) -> int:
    """`FuseOpsByPattern` with `pattern`: the number of calls of the composite functions it made."""
    fused = relax.transform.FuseOpsByPattern([(name, pattern)], bind_constants=False)(graph.module)
    composites = {gv for gv, func in fused.functions.items()
                  if isinstance(func, relax.Function) and func.attrs is not None and "Composite" in func.attrs}
    return sum(isinstance(value, relax.Call) and value.op in composites
               for value in _binding_values(fused["main"]))
