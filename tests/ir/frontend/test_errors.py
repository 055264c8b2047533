"""Bad input gives one clear error that names the culprit, never a wrong program."""

from __future__ import annotations

import os
import random

import numpy as np
import onnx
import pytest
from onnx import helper

import ir
from ir import relay
from ir.frontend import FrontendError, from_onnx, to_onnx

LIGHT_SQUEEZENET = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                                "light_squeezenet.onnx")


def model_of(nodes, inputs, outputs, initializers=(), opset=13, domains=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs], list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


F = onnx.TensorProto.FLOAT


def test_frontend_error_is_an_ir_error():
    assert issubclass(FrontendError, ir.IRError)


@pytest.mark.parametrize("data", [b"certainly not a model", b"\x08\x07\x12\xff\xff",
                                  bytes(random.Random(7).getrandbits(8) for _ in range(64))])
def test_malformed_bytes(data):
    with pytest.raises(FrontendError, match="could not be parsed"):
        from_onnx(data)


def test_truncated_file(tmp_path):
    data = open(LIGHT_SQUEEZENET, "rb").read()
    path = tmp_path / "half.onnx"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(FrontendError, match=r"could not be parsed") as err:
        from_onnx(path)
    assert "half.onnx" in str(err.value)


def test_value_that_no_node_defines():
    dangling = model_of([helper.make_node("Relu", ["nowhere"], ["y"], name="r")], [("x", F, [2])], [("y", F, [2])])
    with pytest.raises(FrontendError, match=r"node 'r' \(Relu, opset 13\): value 'nowhere' is used but never defined"):
        from_onnx(dangling)


def test_wrong_argument_type():
    with pytest.raises(TypeError, match="ModelProto, a path or bytes"):
        from_onnx(42)


@pytest.mark.parametrize("op_type", ["FrobnicateTensor", "Unique"])
def test_unsupported_op_names_op_node_and_opset(op_type):
    model = model_of([helper.make_node(op_type, ["x"], ["y"], name="the_node")], [("x", F, [2])], [("y", F, None)])
    with pytest.raises(FrontendError, match=rf"unsupported ONNX op '{op_type}' in node 'the_node' \(opset 13\)"):
        from_onnx(model)


def test_unsupported_op_suggests_close_names():
    model = model_of([helper.make_node("Rellu", ["x"], ["y"], name="n")], [("x", F, [2])], [("y", F, None)])
    with pytest.raises(FrontendError, match="did you mean Relu"):
        from_onnx(model)


def test_op_of_another_domain_is_named_with_its_domain():
    node = helper.make_node("FusedConv", ["x"], ["y"], name="fc", domain="com.microsoft")
    model = model_of([node], [("x", F, [2])], [("y", F, None)], domains=["com.microsoft"])
    with pytest.raises(FrontendError, match="'com.microsoft.FusedConv' in node 'fc'"):
        from_onnx(model)


def test_opset_too_new():
    newest = onnx.defs.onnx_opset_version()
    model = model_of([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2])], [("y", F, [2])], opset=newest + 1)
    with pytest.raises(FrontendError, match=f"opset {newest + 1} is not supported"):
        from_onnx(model)


def test_mismatched_shapes_name_op_node_and_shapes():
    model = model_of([helper.make_node("Add", ["a", "b"], ["y"], name="bad_add")],
                     [("a", F, [2, 3]), ("b", F, [4, 5])], [("y", F, None)])
    with pytest.raises(ir.TypeInferenceError, match=r"node 'bad_add' \(Add, opset 13\): add: .*\(2, 3\).*\(4, 5\)"):
        from_onnx(model)


def test_mismatched_matmul_names_the_ir_op():
    model = model_of([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
                     [("a", F, [2, 3]), ("b", F, [4, 5])], [("y", F, None)])
    with pytest.raises(ir.TypeInferenceError, match=r"node 'mm' \(MatMul.*nn.matmul: .*3 vs 4"):
        from_onnx(model)


def test_conv_channel_mismatch():
    weight = onnx.numpy_helper.from_array(np.zeros((4, 5, 3, 3), np.float32), "w")
    model = model_of([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], [("x", F, [1, 3, 8, 8])],
                     [("y", F, None)], [weight])
    with pytest.raises(ir.TypeInferenceError, match=r"node 'conv'.*nn.conv2d: data has 3 channels"):
        from_onnx(model)


@pytest.mark.parametrize("node, opset, culprit", [
    (helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap", name="p"), 19, "mode='wrap'"),
    (helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_SOMEWHERE", name="p"), 13, "auto_pad='SAME_SOMEWHERE'"),
    (helper.make_node("Gelu", ["x"], ["y"], approximate="erf", name="p"), 20, "approximate='erf'"),
])
def test_unsupported_attribute_value(node, opset, culprit):
    inits = [onnx.numpy_helper.from_array(np.zeros(8, np.int64), "pads"),
             onnx.numpy_helper.from_array(np.zeros((2, 2, 1, 1), np.float32), "w")]
    model = model_of([node], [("x", F, [1, 2, 3, 3])], [("y", F, None)], inits, opset=opset)
    with pytest.raises(FrontendError, match=rf"node 'p' \({node.op_type}, opset {opset}\): attribute {culprit}"):
        from_onnx(model)


def test_only_1d_to_3d_convolution():
    weight = onnx.numpy_helper.from_array(np.zeros((4, 3, 1, 1, 1, 1), np.float32), "w")
    model = model_of([helper.make_node("Conv", ["x", "w"], ["y"], name="conv4d")], [("x", F, [1, 3, 2, 2, 2, 2])],
                     [("y", F, None)], [weight])
    with pytest.raises(FrontendError, match=r"node 'conv4d'.*1-D, 2-D and 3-D windows.*\(1, 3, 2, 2, 2, 2\)"):
        from_onnx(model)


def test_unknown_shape_override():
    model = model_of([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2])], [("y", F, [2])])
    with pytest.raises(FrontendError, match=r"shape= names \['data'\].*the inputs are \['x'\]"):
        from_onnx(model, shape={"data": (1, 2)})


def test_input_without_shape():
    model = model_of([helper.make_node("Relu", ["x"], ["y"])], [("x", F, None)], [("y", F, None)])
    with pytest.raises(FrontendError, match=r"graph input 'x' has no shape.*shape=\{'x'"):
        from_onnx(model)
    assert from_onnx(model, shape={"x": (5,)})[0]["main"].checked_type.ret_type == ir.TensorType((5,))


def test_using_an_unsupported_output():
    nodes = [helper.make_node("MaxPool", ["x"], ["y", "indices"], kernel_shape=[2, 2], name="pool"),
             helper.make_node("Cast", ["indices"], ["z"], to=F)]
    model = model_of(nodes, [("x", F, [1, 1, 4, 4])], [("z", F, None)])
    with pytest.raises(FrontendError, match=r"'indices' \(output 1 of node 'pool'\) is not supported"):
        from_onnx(model)


# -- export ---------------------------------------------------------------------------------------------

def test_export_rejects_unknown_and_ill_shaped_params():
    x, w = relay.var("x", shape=(2, 3)), relay.var("w", shape=(4, 3))
    mod = ir.IRModule.from_expr(relay.nn.dense(x, w))
    with pytest.raises(FrontendError, match=r"params \['v'\] are not parameters of main"):
        to_onnx(mod, {"v": np.zeros((4, 3), np.float32)})
    with pytest.raises(FrontendError, match=r"params\['w'\] has shape \(3, 4\).*Tensor\[\(4, 3\), float32\]"):
        to_onnx(mod, {"w": np.zeros((3, 4), np.float32)})


def test_export_rejects_unsupported_opsets():
    mod = ir.IRModule.from_expr(relay.nn.relu(relay.var("x", shape=(2,))))
    with pytest.raises(FrontendError, match="cannot export to opset 11"):
        to_onnx(mod, opset=11)


def test_export_rejects_an_if_on_a_non_scalar_condition():
    c, x = relay.var("c", shape=(2,), dtype="bool"), relay.var("x", shape=(2,))
    with pytest.raises(FrontendError, match=r"If condition must hold one bool value.*\(2,\)"):
        to_onnx(ir.IRModule.from_expr(relay.If(c, x, relay.negative(x))))


def test_export_rejects_free_variables_and_function_values():
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    with pytest.raises(FrontendError, match="variable %y is not a parameter of main"):
        to_onnx(relay.Function([x], relay.add(x, y)))
    inner = relay.Function([y], relay.nn.relu(y))
    with pytest.raises(FrontendError, match="function value"):
        to_onnx(relay.Function([x], relay.Tuple([x, inner])))


def test_export_error_names_the_op_and_input_shapes():
    x = relay.var("x", shape=("n", 4))
    mod = ir.IRModule.from_expr(relay.topk(x, 0, axis=0, ret_type="values"))
    with pytest.raises(FrontendError, match=r"topk \(inputs Tensor\[\(n, 4\), float32\].*static axis 0"):
        to_onnx(mod)


def test_export_rejects_duplicate_input_names():
    a, b = relay.var("x", shape=(2,)), relay.var("x", shape=(2,))
    with pytest.raises(FrontendError, match="two graph inputs or parameters are named 'x'"):
        to_onnx(relay.Function([a, b], relay.add(a, b)))
