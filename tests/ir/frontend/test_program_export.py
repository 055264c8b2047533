"""Program structure through export and import: tuples, inner functions, Let, If, sharing, symbolic
dims, parameters, opsets."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import numpy as np
import onnx
import pytest

import ir
from ir import relay
from ir.frontend import DEFAULT_OPSET, from_onnx, to_onnx
from strategies.interpreter import evaluate
from tests.ir.frontend.ort_helpers import assert_outputs_close, flat_outputs, graph_inputs, run_ort



def op_counts(model: onnx.ModelProto) -> Counter:
    return Counter(n.op_type for n in model.graph.node)


def check_against_interpreter(mod: ir.IRModule, params=None, seed: int = 0) -> list[np.ndarray]:
    """Export, run in ONNX Runtime, compare with the interpreter and with the re-imported program."""
    params = params or {}
    ir.infer_type(mod)
    model = to_onnx(mod, params)
    inputs = graph_inputs(mod["main"], params, seed)
    outputs = run_ort(model, inputs)
    expected = evaluate(mod, inputs, params)
    assert_outputs_close(flat_outputs(expected), outputs, rel=1e-5)
    again, again_params = from_onnx(model, freeze_params=False)
    assert set(params) <= set(again_params)  # constants the exporter made are initializers too
    assert_outputs_close(outputs, run_ort(to_onnx(again, again_params), inputs), rel=1e-6)
    return outputs


def test_onnx_is_only_imported_by_the_frontend():
    code = "import sys, ir; from ir import relay; assert 'onnx' not in sys.modules; print('clean')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "clean"


def test_tuple_outputs_split_and_batch_norm_items():
    x = relay.var("x", shape=(2, 6, 3, 3))
    parts = relay.split(x, 2, axis=1)
    g, b, m, v = (relay.var(n, shape=(3,)) for n in "gbmv")
    bn = relay.nn.batch_norm(parts[1], g, b, m, relay.abs(v))
    body = relay.Tuple([parts[0], bn[0], relay.Tuple([bn[2], relay.nn.relu(parts[0])])])
    outputs = check_against_interpreter(ir.IRModule.from_expr(body))
    assert [o.shape for o in outputs] == [(2, 3, 3, 3), (2, 3, 3, 3), (3,), (2, 3, 3, 3)]  # nested tuple flattened


def test_calls_of_inner_functions_are_inlined_per_call():
    a, w = relay.var("a", shape=(1, 3, 5, 5)), relay.var("w", shape=(3, 3, 1, 1))
    composite = relay.Function([a, w], relay.nn.relu(relay.nn.conv2d(a, w))).with_attr("Composite", "conv_relu")
    x = relay.var("x", shape=(1, 3, 5, 5))
    w1, w2 = relay.var("w1", shape=(3, 3, 1, 1)), relay.var("w2", shape=(3, 3, 1, 1))
    body = composite(composite(x, w1), w2)
    params = {"w2": np.random.default_rng(3).standard_normal((3, 3, 1, 1)).astype(np.float32)}
    mod = ir.IRModule({"main": relay.Function([x, w1, w2], body)})
    check_against_interpreter(mod, params)
    counts = op_counts(to_onnx(mod, params))
    assert counts["Conv"] == 2 and counts["Relu"] == 2


def test_let_is_inlined_and_its_value_exported_once():
    x = relay.var("x", shape=(2, 3))
    v = relay.var("v")
    body = relay.Let(v, relay.exp(x), relay.add(v, relay.multiply(v, v)))
    check_against_interpreter(ir.IRModule.from_expr(body))
    assert op_counts(to_onnx(ir.IRModule.from_expr(body)))["Exp"] == 1


def test_shared_nodes_are_exported_once():
    x = relay.var("x", shape=(4,))
    shared = relay.nn.relu(relay.sigmoid(x))
    body = relay.add(relay.multiply(shared, shared), shared)
    counts = op_counts(to_onnx(ir.IRModule.from_expr(body)))
    assert counts["Relu"] == 1 and counts["Sigmoid"] == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_if_becomes_an_onnx_if_and_comes_back(seed):
    x = relay.var("x", shape=(2, 3))
    cond = relay.greater(relay.sum(x), relay.const(0.0))
    shared = relay.exp(x)  # used in both branches and outside: exported once, in the outer graph
    branch_a = relay.Tuple([relay.nn.relu(shared), relay.add(shared, x)])
    branch_b = relay.Tuple([relay.negative(shared), relay.multiply(x, x)])
    body = relay.Tuple([relay.If(cond, branch_a, branch_b)[1], shared])
    mod = ir.IRModule.from_expr(body)
    check_against_interpreter(mod, seed=seed)
    model = to_onnx(mod)
    assert op_counts(model)["If"] == 1 and op_counts(model)["Exp"] == 1
    again, _ = from_onnx(model)
    assert any(isinstance(n, ir.If) for n in ir.post_order(again["main"]))


def test_symbolic_dims_become_dim_params_and_come_back():
    x = relay.var("x", shape=(ir.SizeVar("batch"), 3, ir.Any))
    model = to_onnx(ir.IRModule.from_expr(relay.nn.relu(relay.sum(x, axis=[2]))))
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and dims[1].dim_value == 3
    assert not dims[2].HasField("dim_param") and not dims[2].HasField("dim_value")
    mod, _ = from_onnx(model)
    assert mod["main"].params[0].checked_type.shape == (ir.SizeVar("batch"), 3, ir.Any)
    assert mod["main"].checked_type.ret_type.shape == (ir.SizeVar("batch"), 3)
    for batch in (1, 4):
        data = np.random.default_rng(batch).standard_normal((batch, 3, 5)).astype(np.float32)
        np.testing.assert_allclose(run_ort(model, {"x": data})[0], np.maximum(data.sum(axis=2), 0), rtol=1e-5)


def test_shape_override_replaces_symbolic_dims():
    x = relay.var("x", shape=(ir.SizeVar("n"), 3))
    model = to_onnx(ir.IRModule.from_expr(relay.nn.relu(x)))
    mod, _ = from_onnx(model, shape={"x": (7, 3)})
    assert mod["main"].checked_type.ret_type == ir.TensorType((7, 3))


def test_params_become_initializers_and_other_params_inputs():
    x, w = relay.var("x", shape=(2, 3)), relay.var("w", shape=(4, 3))
    model = to_onnx(ir.IRModule.from_expr(relay.nn.dense(x, w)), {"w": np.ones((4, 3), np.float32)})
    assert [i.name for i in model.graph.input] == ["x"]
    assert [i.name for i in model.graph.initializer] == ["w"]
    frozen, params = from_onnx(model)
    assert [p.name_hint for p in frozen["main"].params] == ["x"] and params == {}
    unfrozen, params = from_onnx(model, freeze_params=False)
    assert [p.name_hint for p in unfrozen["main"].params] == ["x", "w"] and list(params) == ["w"]


def test_outputs_that_are_inputs_or_repeat_get_their_own_names():
    x = relay.var("x", shape=(2,))
    y = relay.nn.relu(x)
    model = to_onnx(ir.IRModule.from_expr(relay.Tuple([x, y, y])))
    names = [o.name for o in model.graph.output]
    assert len(set(names)) == 3 and "x" not in names
    data = np.array([-1.0, 2.0], np.float32)
    outputs = run_ort(model, {"x": data})
    np.testing.assert_array_equal(outputs[0], data)
    np.testing.assert_array_equal(outputs[1], outputs[2])


def test_large_uniform_constants_export_as_fills():
    x = relay.var("x", shape=(64, 64))
    fill = relay.const(np.full((64, 64), 0.25, np.float32))
    model = to_onnx(ir.IRModule.from_expr(relay.add(x, fill)))
    assert op_counts(model)["ConstantOfShape"] == 1 and all(i.name != "const_0" or i.dims == [2]
                                                           for i in model.graph.initializer)
    mod, _ = from_onnx(model)
    constants = [n for n in ir.post_order(mod["main"]) if isinstance(n, ir.Constant)]
    assert len(constants) == 1 and constants[0].shape == (64, 64) and float(constants[0].data[3, 5]) == 0.25


def test_default_opset_uses_layer_normalization_and_older_opsets_decompose_it():
    x, g, b = relay.var("x", shape=(2, 8)), relay.var("g", shape=(8,)), relay.var("b", shape=(8,))
    mod = ir.IRModule.from_expr(relay.nn.layer_norm(x, g, b))
    model = to_onnx(mod)
    assert model.opset_import[0].version == DEFAULT_OPSET == 17
    assert op_counts(model)["LayerNormalization"] == 1
    old = to_onnx(mod, opset=13)
    assert op_counts(old)["LayerNormalization"] == 0 and op_counts(old)["ReduceMean"] == 2
    inputs = graph_inputs(mod["main"], {})
    assert_outputs_close(run_ort(model, inputs), run_ort(old, inputs), rel=1e-5)


@pytest.mark.parametrize("opset", [13, 18, onnx.defs.onnx_opset_version()])
def test_export_opsets_agree(opset):
    x = relay.var("x", shape=(2, 6, 4))
    parts = relay.split(x, 3, axis=1)
    body = relay.Tuple([relay.mean(relay.squeeze(relay.expand_dims(parts[0], 0), axis=[0]), axis=[2]),
                        relay.nn.gelu(relay.sum(parts[2], axis=[1], keepdims=True))])
    mod = ir.IRModule.from_expr(body)
    inputs = graph_inputs(ir.infer_type(mod)["main"], {})
    assert_outputs_close(flat_outputs(evaluate(mod, inputs)), run_ort(to_onnx(mod, opset=opset), inputs), rel=1e-5)
    assert not op_counts(to_onnx(mod))["Gelu"]  # GELU is written as its erf formula


def test_a_bare_expression_exports_over_its_free_variables():
    x = relay.var("x", shape=(3,))
    model = to_onnx(relay.nn.relu(x))
    assert [i.name for i in model.graph.input] == ["x"]


def test_symbolic_batch_flows_through_an_imported_cnn():
    rng = np.random.default_rng(7)
    weights = {"w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
               "fc": rng.standard_normal((5, 4 * 4 * 4)).astype(np.float32)}
    nodes = [onnx.helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             onnx.helper.make_node("Relu", ["c"], ["r"]), onnx.helper.make_node("Flatten", ["r"], ["f"]),
             onnx.helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    graph = onnx.helper.make_graph(
        nodes, "cnn", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", 5])],
        [onnx.numpy_helper.from_array(v, k) for k, v in weights.items()])
    original = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)])
    mod, _ = from_onnx(original)
    assert mod["main"].checked_type.ret_type == ir.TensorType((ir.SizeVar("batch"), 5))
    exported = to_onnx(mod)
    for batch in (1, 3):
        data = {"x": rng.standard_normal((batch, 3, 8, 8)).astype(np.float32)}
        assert_outputs_close(run_ort(original, data), run_ort(exported, data), rel=1e-5)


def test_a_concatenation_of_weights_is_one_initializer():
    """Weights a merge rule concatenated are joined at export time; a computed part keeps the Concat."""
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(2, 5))
    w1, w2 = (rng.standard_normal((n, 5)).astype("float32") for n in (3, 4))
    merged = relay.nn.dense(x, relay.concatenate([relay.const(w1), relay.const(w2)], axis=0))
    mod = ir.IRModule.from_expr(relay.Tuple([merged, relay.concatenate([x, relay.const(w1[:2])], axis=0)]))
    model = to_onnx(mod)
    assert op_counts(model)["Concat"] == 1  # only the one with a graph input
    assert [tuple(i.dims) for i in model.graph.initializer if tuple(i.dims) == (7, 5)] == [(7, 5)]
    check_against_interpreter(mod)


@pytest.mark.parametrize("contrib", [False, True])
def test_an_imported_matmuls_weight_is_written_as_it_was_read(contrib):
    """A MatMul's (depth, units) weight is a dense layer's weight through a transposed view: the
    Gemm reads that array as it is (transB 0), so no transposed copy of it is written."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 16)).astype(np.float32)
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 8])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 16])],
        [onnx.numpy_helper.from_array(w, "w")])
    original = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    mod, params = from_onnx(original)
    exported = to_onnx(mod, params, contrib=contrib)
    (gemm,) = [n for n in exported.graph.node if n.op_type == "Gemm"]
    assert {a.name: a.i for a in gemm.attribute}.get("transB", 0) == 0
    (weight,) = [onnx.numpy_helper.to_array(t) for t in exported.graph.initializer if t.name == gemm.input[1]]
    assert weight.shape == (8, 16) and np.array_equal(weight, w)
    data = {"x": rng.standard_normal((4, 8)).astype(np.float32)}
    assert np.array_equal(run_ort(original, data)[0], run_ort(exported, data)[0])


@pytest.mark.parametrize("conv", ["conv1d", "conv3d", "conv1d_transpose", "conv3d_transpose"])
def test_a_constant_channel_bias_becomes_the_convolutions_own_input(conv):
    rank = int(conv[4])
    x = relay.var("x", shape=(1, 4) + (5,) * rank)
    transposed = conv.endswith("transpose")
    w = relay.var("w", shape=(4, 6) + (3,) * rank if transposed else (6, 4) + (3,) * rank)
    out = relay.nn.bias_add(getattr(relay.nn, conv)(x, w, padding=(1,) * (2 * rank)), relay.var("b", shape=(6,)))
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal(w.type_annotation.concrete_shape).astype("float32"),
              "b": rng.standard_normal(6).astype("float32")}
    mod = ir.IRModule.from_expr(out)
    check_against_interpreter(mod, params)
    model = to_onnx(mod, params)
    assert op_counts(model) == {"ConvTranspose" if transposed else "Conv": 1}
    assert list(model.graph.node[0].input) == ["x", "w", "b"]


def test_a_bias_stays_an_add_when_the_convolution_has_another_reader_or_the_bias_is_an_input():
    x = relay.var("x", shape=(1, 4, 7))
    w = relay.var("w", shape=(6, 4, 3))
    conv = relay.nn.conv1d(x, w)
    params = {"w": np.random.default_rng(1).standard_normal((6, 4, 3)).astype("float32"),
              "b": np.arange(6, dtype="float32")}
    shared = ir.IRModule.from_expr(relay.Tuple([relay.nn.bias_add(conv, relay.var("b", shape=(6,))), conv]))
    check_against_interpreter(shared, params)
    assert op_counts(to_onnx(shared, params))["Add"] == 1
    fed = ir.IRModule.from_expr(relay.nn.bias_add(conv, relay.var("b", shape=(6,))))
    check_against_interpreter(fed, {"w": params["w"]})
    assert op_counts(to_onnx(fed, {"w": params["w"]}))["Add"] == 1


def test_weights_written_as_held_in_memory_run_in_onnx_runtime_as_the_inline_model_does():
    """`to_onnx(external=...)` keeps the weights out of the model (no copy) and ONNX Runtime takes the
    arrays themselves; a reshape's small target stays in the model, where ONNX Runtime reads it."""
    pytest.importorskip("onnxruntime")
    from strategies.ort_timing import ort_session
    x = relay.var("x", shape=(2, 8))
    w = relay.var("w", shape=(64, 8))  # 2 KiB: held in memory
    mod = ir.IRModule.from_expr(relay.Function([x, w], relay.reshape(relay.nn.dense(x, w), [16, 8])))
    params = {"w": np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32)}
    external: dict[str, np.ndarray] = {}
    model = to_onnx(mod, params, external=external)
    assert set(external) == {"w"} and np.array_equal(external["w"], params["w"])
    written = {t.name: t for t in model.graph.initializer}
    assert written["w"].data_location == onnx.TensorProto.EXTERNAL and not written["w"].raw_data
    assert all(t.raw_data for n, t in written.items() if n != "w")  # the reshape's target
    feed = {"x": np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)}
    inline = ort_session(to_onnx(mod, params), threads=1).run(None, feed)
    held = ort_session(model, threads=1, external=external, prepack=False).run(None, feed)
    assert np.array_equal(inline[0], held[0]) and np.abs(inline[0]).max() > 0


@pytest.mark.parametrize("dtype", ["float16", "float32", "int64", "bool"])
def test_a_where_whose_condition_is_true_throughout_is_an_expand(dtype):
    """`where(True, x, zeros(c))`, the e-graph's static expand: one `Expand` of x, the same values."""
    x = relay.var("x", shape=(2, 1, 3, 1), dtype=dtype)
    mod = ir.IRModule.from_expr(relay.where(relay.const(True), x, relay.const(np.zeros((1, 4, 1, 5), dtype))))
    model = to_onnx(mod)
    assert [n.op_type for n in model.graph.node] == ["Expand"]
    value = (np.arange(6).reshape(2, 1, 3, 1) % 2).astype(dtype)
    got = run_ort(model, {"x": value})[0]
    np.testing.assert_array_equal(got, np.asarray(evaluate(mod, {"x": value})))
    assert got.shape == (2, 4, 3, 5)


@pytest.mark.parametrize("odd", [-0.0, np.nan], ids=["negative-zero", "nan"])
def test_a_large_constant_is_a_fill_only_when_every_element_has_the_same_bits(odd):
    """A constant of zeros but one -0.0 (or NaN) is not `ConstantOfShape(0)`: dividing by it tells the
    signs apart. A transposed one is read in place (the check makes no copy) and exported alike."""
    data = np.zeros((48, 40), np.float32)
    data[3, 5] = odd
    x = relay.var("x", shape=(40, 48), dtype="float32")
    for const in (data.T, np.zeros((40, 48), np.float32)):
        body = relay.divide(relay.const(1.0), relay.add(x, ir.Constant(const)))
        mod = ir.IRModule.from_expr(relay.Function([x], body))
        ir.infer_type(mod)
        model = to_onnx(mod, {})
        splat = not np.isnan(const).any() and not np.signbit(const).any()
        assert (op_counts(model)["ConstantOfShape"] == 1) == splat
        zeros = {"x": np.zeros((40, 48), np.float32)}
        got = run_ort(model, zeros)[0]
        want = 1.0 / (zeros["x"] + const)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
