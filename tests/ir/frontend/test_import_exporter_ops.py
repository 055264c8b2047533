"""Importers of the ops exporters emit (HardSigmoid, HardSwish, Gelu, Pow with a constant exponent, Reduce* with
axes as an input, Gemm in every form, Einsum): each hand-built node is imported and run on the reference
interpreter and on the ort target's executor against ONNX Runtime on the original model, and the import is
exported again and run in ONNX Runtime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import ir
from ir.frontend import FrontendError, from_onnx, to_onnx
from strategies import build as build_executable
from strategies.interpreter import evaluate
from tests.ir.frontend.ort_helpers import assert_outputs_close, flat_outputs, run_ort
from tests.ir.frontend.test_opsets import NEWEST, Spec, build, ints, node, spec_inputs

F = "float32"


def check(spec: Spec, opset: int, export_opset: int | None = None, rel: float = 1e-5) -> ir.IRModule:
    """Import `spec` at `opset`; the interpreter, the ort executor and the re-exported model agree with
    ONNX Runtime on the original. Returns the imported module."""
    original = build(spec, opset)
    inputs = spec_inputs(spec)
    expected = run_ort(original, inputs)
    mod, params = from_onnx(original)
    assert_outputs_close(expected, flat_outputs(evaluate(mod, inputs)), rel=rel)
    assert_outputs_close(expected, flat_outputs(build_executable(mod, "ort", params).run(**inputs)), rel=rel)
    assert_outputs_close(expected, run_ort(to_onnx(mod, params, opset=export_opset), inputs), rel=rel)
    return mod


def calls(mod: ir.IRModule) -> list[ir.Call]:
    return [n for n in ir.post_order(mod["main"]) if isinstance(n, ir.Call) and isinstance(n.op, ir.Op)]


def op_names(mod: ir.IRModule) -> list[str]:
    return sorted(c.op.name for c in calls(mod))


X = {"x": ((2, 3, 8), F)}


# -- activations ------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", [13, 17, NEWEST])
def test_hard_sigmoid_keeps_alpha_and_beta(opset):
    mod = check(Spec([node("HardSigmoid", ["x"], alpha=0.3, beta=0.4)], X, {"y": F}), opset)
    (call,) = calls(mod)
    assert call.op.name == "nn.hard_sigmoid" and (call.attrs.alpha, call.attrs.beta) == pytest.approx((0.3, 0.4))


@pytest.mark.parametrize("opset", [14, 17, NEWEST])
def test_hard_swish_is_one_op_and_exports_as_hard_swish(opset):
    spec = Spec([node("Mul", ["x", "four"], "big"), node("HardSwish", ["big"])], X, {"y": F},
                {"four": np.array(4.0, np.float32)})
    mod = check(spec, opset)
    assert op_names(mod) == ["multiply", "nn.hard_swish"]
    assert "HardSwish" in [n.op_type for n in to_onnx(mod).graph.node]


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_opset20(approximate):
    mod = check(Spec([node("Gelu", ["x"], approximate=approximate)], X, {"y": F}), 20, export_opset=20)
    (call,) = calls(mod)
    assert call.op.name == "nn.gelu" and call.attrs.approximate == approximate
    assert [n.op_type for n in to_onnx(mod, opset=20).graph.node] == ["Gelu"]


# -- Pow with a constant exponent -------------------------------------------------------------------

@pytest.mark.parametrize("exponent", [
    np.array(2.0, np.float32), np.array(0.5, np.float32), np.array(-0.5, np.float32), np.array(3, np.int64),
    np.array([1.5], np.float32), np.array([[1.0, 2.0, 0.5, -1.0, 3.0, 0.25, 2.0, 1.5]], np.float32),
    np.array(2.0, np.float64)], ids=["2", "0.5", "-0.5", "int64-3", "vector-1.5", "broadcast-row", "float64-2"])
def test_pow_with_a_constant_exponent_is_power_of_a_constant(exponent):
    mod = check(Spec([node("Pow", ["x", "e"])], {"x": ((2, 3, 8), F, "positive")}, {"y": F}, {"e": exponent}), 17)
    (call,) = calls(mod)
    assert call.op.name == "power" and isinstance(call.args[1], ir.Constant)
    np.testing.assert_array_equal(call.args[1].data, exponent.astype(F))


def test_pow_of_an_integer_base_truncates_a_float_power():
    spec = Spec([node("Abs", ["i"], "n"), node("Pow", ["n", "e"])], {"i": ((2, 5), "int32", "int")}, {"y": "int32"},
                {"e": np.array(1.5, np.float32)})
    assert op_names(check(spec, 17)) == ["abs", "cast", "cast", "power"]


def test_pow_with_a_runtime_exponent_casts_it():
    mod = check(Spec([node("Pow", ["x", "e"])], {"x": ((2, 3), F, "positive"), "e": ((3,), "float64")}, {"y": F}), 17)
    assert op_names(mod) == ["cast", "power"]


# -- reductions with axes as an input (opset 18) ----------------------------------------------------

@pytest.mark.parametrize("op_type", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                                     "ReduceSumSquare", "ReduceL1", "ReduceL2"])
def test_reduce_with_axes_input(op_type):
    nodes = [node(op_type, ["x", "axes"], "kept"), node(op_type, ["x", "last"], "dropped", keepdims=0),
             node(op_type, ["x"], "all", keepdims=0)]
    spec = Spec(nodes, X, dict.fromkeys(["kept", "dropped", "all"], F), {"axes": ints(0, -1), "last": ints(-1)})
    check(spec, 18)


@pytest.mark.parametrize("axes", [None, ints()], ids=["absent", "empty"])
def test_reduce_mean_noop_with_empty_axes(axes):
    inputs = ["x"] if axes is None else ["x", "axes"]
    spec = Spec([node("ReduceMean", inputs, "same", noop_with_empty_axes=1), node("ReduceMean", inputs, "all")], X,
                {"same": F, "all": F}, {} if axes is None else {"axes": axes})
    mod = check(spec, 18)
    assert op_names(mod) == ["mean"]  # only the second reduces (over every axis)


def test_reduce_mean_with_runtime_axes_names_the_input():
    graph = onnx.helper.make_graph([node("ReduceMean", ["x", "axes"])], "g",
                                   [onnx.helper.make_tensor_value_info("x", 1, (2, 3, 8)),
                                    onnx.helper.make_tensor_value_info("axes", 7, (1,))],
                                   [onnx.helper.make_tensor_value_info("y", 1, None)])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)])
    with pytest.raises(FrontendError, match="axes"):
        from_onnx(model)


# -- Gemm -------------------------------------------------------------------------------------------

M, K, N = 3, 4, 5


@pytest.mark.parametrize("c_shape", [(), (1,), (N,), (1, N), (M, 1), (M, N)], ids=str)
@pytest.mark.parametrize("trans_a, trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("constant_b", [True, False], ids=["const-b", "dynamic-b"])
def test_gemm(c_shape, trans_a, trans_b, constant_b):
    rng = np.random.default_rng(1)
    a_shape, b_shape = ((K, M) if trans_a else (M, K)), ((N, K) if trans_b else (K, N))
    inputs = {"a": (a_shape, F)} if constant_b else {"a": (a_shape, F), "b": (b_shape, F)}
    consts = {"c": rng.standard_normal(c_shape).astype(F)}
    if constant_b:
        consts["b"] = rng.standard_normal(b_shape).astype(F)
    spec = Spec([node("Gemm", ["a", "b", "c"], alpha=0.5, beta=1.5, transA=trans_a, transB=trans_b)], inputs,
                {"y": F}, consts)
    mod = check(spec, 13)
    assert {"nn.dense", "nn.matmul"} & set(op_names(mod))
    assert ("nn.bias_add" in op_names(mod)) == (c_shape == (N,))


def test_gemm_without_c_and_default_scales():
    spec = Spec([node("Gemm", ["a", "b"])], {"a": ((M, K), F), "b": ((K, N), F)}, {"y": F})
    assert op_names(check(spec, 13)) == ["nn.matmul"]


# -- Einsum -----------------------------------------------------------------------------------------

EINSUM = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], ["nn.matmul"]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)], ["nn.matmul"]),
    ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)], ["nn.matmul"]),
    ("bqhd,bkhd->bhqk", [(2, 4, 3, 5), (2, 6, 3, 5)], ["nn.matmul", "transpose", "transpose"]),
    ("bhqk,bkhd->bqhd", [(2, 3, 4, 6), (2, 6, 3, 5)], ["nn.matmul", "transpose", "transpose"]),
    ("ij,jk->ik", [(3, 4), (4, 5)], ["nn.matmul"]),
    ("bij,jk->bik", [(2, 3, 4), (4, 5)], ["nn.matmul"]),
    ("ij,kj->ik", [(3, 4), (5, 4)], ["nn.matmul"]),
    ("bsd,hd->bsh", [(2, 3, 4), (5, 4)], ["nn.matmul"]),
    ("ki,kj->ij", [(4, 3), (4, 5)], ["nn.matmul"]),
    ("ij,jk", [(3, 4), (4, 5)], ["nn.matmul"]),
    ("ij,jk->ki", [(3, 4), (4, 5)], ["nn.matmul", "transpose"]),
    ("abcd,cdef->abef", [(2, 3, 4, 5), (4, 5, 6, 2)], ["nn.matmul", "reshape", "reshape", "reshape"]),
    ("bij,bjk->ik", [(2, 3, 4), (2, 4, 5)], None),
    ("ij,ij->i", [(3, 4), (3, 4)], None),
    ("i,i->", [(4,), (4,)], None),
    ("i,j->ij", [(3,), (4,)], None),
    ("ijk,j->ik", [(2, 3, 4), (3,)], None),
    ("bij,bjk->", [(2, 3, 4), (2, 4, 5)], None),
    ("ij->ji", [(3, 4)], ["transpose"]),
    ("ij->j", [(3, 4)], ["sum"]),
    ("...ij,...jk->...ik", [(2, 3, 4), (1, 4, 5)], ["nn.matmul"]),
    ("b...d,hd->b...h", [(2, 3, 6, 4), (5, 4)], ["nn.matmul"]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], ["nn.matmul", "nn.matmul"]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)], None),
]


@pytest.mark.parametrize("equation, shapes, ops", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum_lowers_to_matmul(equation, shapes, ops):
    names = [f"x{i}" for i in range(len(shapes))]
    spec = Spec([node("Einsum", names, equation=equation)], {n: (s, F) for n, s in zip(names, shapes)}, {"y": F})
    mod = check(spec, 12)
    if ops is not None:
        assert op_names(mod) == ops
    assert "einsum" not in str(mod).lower()


@pytest.mark.parametrize("equation", ["bsd,hd->bsh", "ij,jk->ik", "bij,jk->bik"])
def test_einsum_with_a_constant_weight_is_dense(equation):
    rng = np.random.default_rng(2)
    a_shape = {"bsd,hd->bsh": (2, 3, 4), "ij,jk->ik": (3, 4), "bij,jk->bik": (2, 3, 4)}[equation]
    w_shape = (5, 4) if equation == "bsd,hd->bsh" else (4, 5)
    spec = Spec([node("Einsum", ["a", "w"], equation=equation)], {"a": (a_shape, F)}, {"y": F},
                {"w": rng.standard_normal(w_shape).astype(F)})
    assert op_names(check(spec, 12)) == ["nn.dense"]


def test_einsum_with_symbolic_batch():
    graph = onnx.helper.make_graph(
        [node("Einsum", ["q", "k"], equation="bhqd,bhkd->bhqk")], "g",
        [onnx.helper.make_tensor_value_info("q", 1, ("batch", 2, 3, 4)),
         onnx.helper.make_tensor_value_info("k", 1, ("batch", 2, 5, 4))],
        [onnx.helper.make_tensor_value_info("y", 1, None)])
    mod, _ = from_onnx(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 12)]))
    assert str(mod["main"].body.checked_type) == "Tensor[(batch, 2, 3, 5), float32]"


@pytest.mark.parametrize("equation, shapes, message", [
    ("ii->i", [(3, 3)], r"label\(s\) \['i'\] repeat within term 'ii'"),
    ("ij,jj->i", [(3, 4), (4, 4)], "diagonal or trace"),
    ("ij,jk->iq", [(3, 4), (4, 5)], r"output label\(s\) \['q'\]"),
    ("ijk,jk->i", [(3, 4), (4, 5)], "ranks"),
    ("ij,jk", [(3, 4)], "1 input"),
])
def test_einsum_it_cannot_lower_names_the_equation_and_node(equation, shapes, message):
    names = [f"x{i}" for i in range(len(shapes))]
    graph = onnx.helper.make_graph([onnx.helper.make_node("Einsum", names, ["y"], name="attn", equation=equation)],
                                   "g", [onnx.helper.make_tensor_value_info(n, 1, s) for n, s in zip(names, shapes)],
                                   [onnx.helper.make_tensor_value_info("y", 1, None)])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 12)])
    with pytest.raises(FrontendError, match=message) as err:
        from_onnx(model)
    assert "node 'attn' (Einsum" in str(err.value) and repr(equation.replace(" ", "")) in str(err.value)
