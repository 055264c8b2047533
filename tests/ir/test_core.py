"""Expressions, attributes, the op registry, builders, modules and the printer."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay
from ir.errors import ArityError, AttrsError, OpNotFoundError


def test_nodes_are_immutable_and_identity_hashed():
    x = relay.var("x", shape=(2,))
    a, b = relay.nn.relu(x), relay.nn.relu(x)
    assert a is not b and a != b and len({a, b}) == 2
    assert ir.structural_equal(a, b)
    with pytest.raises(AttributeError, match="immutable"):
        a.args = ()


def test_constants_are_private_read_only_copies():
    data = np.ones((2, 2), "float32")
    c = relay.const(data)
    data[0, 0] = 5
    assert c.data[0, 0] == 1
    with pytest.raises(ValueError):
        c.data[0, 0] = 3
    assert c.data.numpy().sum() == 4  # TVM's `.data.numpy()` spelling works


def test_a_constants_digest_names_its_dtype_shape_and_bits():
    w = np.arange(12, dtype="float32").reshape(3, 4)
    digest = ir.Constant(w).digest
    assert ir.Constant(np.ascontiguousarray(w.T).T).digest == digest  # a strided view of the same values
    assert ir.Constant(w.T).digest != digest and ir.Constant(w.reshape(4, 3)).digest != digest
    assert ir.Constant(w.astype("int32")).digest != digest
    assert ir.Constant(np.float32(0.0)).digest != ir.Constant(np.float32(-0.0)).digest
    nan = ir.Constant(np.full(3, np.nan, "float32"))
    assert nan.digest == ir.Constant(np.full(3, np.nan, "float32")).digest  # the same bits
    a, b = relay.const(w), relay.const(w.copy())
    assert ir.structural_equal(relay.add(a, a), relay.add(b, b)) and not ir.structural_equal(a, relay.const(w.T))


def test_a_constants_read_only_data_is_shared_not_copied():
    c = relay.const(np.arange(6, dtype="float32"))
    assert ir.Constant(c.data).data is c.data
    w = relay.var("w", shape=(6,))
    bound = ir.bind_params_by_name(relay.Function([w], relay.exp(w)), {"w": c.data})
    constants = [n for n in ir.post_order(bound) if isinstance(n, ir.Constant)]
    assert len(constants) == 1 and constants[0].data is c.data
    fresh = np.ones(3, "float32")
    frozen = ir.frozen(fresh)
    assert ir.Constant(frozen).data is frozen and not frozen.flags.writeable


@pytest.mark.parametrize("value, dtype", [(0, "int32"), (0.0, "float32"), (np.float64(1.5), "float32"),
                                          (np.zeros(3, "int64"), "int64"), (True, "bool")])
def test_const_dtypes_follow_tvm(value, dtype):
    assert relay.const(value).dtype == dtype


def test_op_singletons_and_attributes():
    assert relay.op.get("add") is ir.get_op("add") is relay.op.op.get("add")
    assert ir.get_op("nn.relu").get_attr("TOpPattern") == ir.OpPattern.ELEMWISE
    assert ir.get_op("nn.conv2d").get_attr("TOpPattern") == ir.OpPattern.OUT_ELEMWISE_FUSABLE
    assert relay.op.nn.conv2d is relay.nn.conv2d


def test_unknown_op_suggests_names():
    with pytest.raises(OpNotFoundError, match=r"unknown op 'nn.conv4d'.*nn.conv2d"):
        relay.op.get("nn.conv4d")


def test_attributes_are_validated_and_defaulted():
    x, w = relay.var("x", shape=(1, 3, 8, 8)), relay.var("w", shape=(4, 3, 3, 3))
    conv = relay.nn.conv2d(x, w, kernel_size=[3, 3], padding=1)
    assert conv.attrs.padding == (1, 1, 1, 1)
    assert conv.attrs["kernel_size"] == (3, 3)
    assert conv.attrs.data_layout == "NCHW" and conv.attrs.groups == 1
    with pytest.raises(AttrsError, match=r"nn.conv2d: unknown attribute\(s\) \['stride'\]"):
        relay.nn.conv2d(x, w, stride=2)
    with pytest.raises(AttrsError, match="'groups' must be an int, got str"):
        relay.nn.conv2d(x, w, groups="2")
    with pytest.raises(AttrsError, match="'padding': expected 1, 2 or 4 values, got 3"):
        relay.nn.conv2d(x, w, padding=(1, 1, 1))
    with pytest.raises(AttrsError, match="must be one of"):
        relay.nn.gelu(x, approximate="fast")
    with pytest.raises(AttrsError, match="'newshape' is required"):
        relay.reshape(x)


def test_arity_is_checked():
    x = relay.var("x", shape=(2,))
    with pytest.raises(ArityError, match="add takes 2 input"):
        ir.Call(relay.op.get("add"), [x])
    with pytest.raises(TypeError, match="argument 1 of a call to add must be an IR expression"):
        ir.Call(relay.op.get("add"), [x, "y"])


def test_positional_attributes_follow_tvm_signatures():
    x = relay.var("x", shape=(4, 6))
    assert relay.reshape(x, (2, 12)).attrs.newshape == (2, 12)
    assert relay.nn.leaky_relu(x, 0.3).attrs.alpha == pytest.approx(0.3)
    assert relay.clip(x, 0.0, 6.0).attrs.a_max == 6.0
    assert relay.sum(x, 1, True).attrs.keepdims is True


def test_operator_sugar_builds_calls():
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    e = (x + y) * 2.0 - x / y
    assert e.op.name == "subtract" and e.args[0].op.name == "multiply"
    assert (x < y).op.name == "less" and (-x).op.name == "negative"
    assert (1.0 + x).args[0].data.item() == 1.0


def test_module_from_expr_and_assignment():
    x = relay.var("x", shape=(2,))
    mod = ir.IRModule.from_expr(relay.nn.relu(x))
    assert isinstance(mod["main"], relay.Function) and mod["main"].params == (x,)
    mod["main"] = relay.Function([x], relay.sigmoid(x))
    assert mod["main"].body.op.name == "sigmoid"
    with pytest.raises(KeyError, match="no function 'other'"):
        mod["other"]


def test_bind_params_by_name_makes_constants():
    x, w = relay.var("x", shape=(1, 3, 4, 4)), relay.var("w", shape=(2, 3, 1, 1))
    f = relay.Function([x, w], relay.nn.conv2d(x, w))
    g = relay.build_module.bind_params_by_name(f, {"w": np.ones((2, 3, 1, 1), "float32")})
    assert g.params == (x,) and isinstance(g.body.args[1], ir.Constant)
    with pytest.raises(ValueError, match="no parameter named"):
        relay.build_module.bind_params_by_name(f, {"v": np.ones(1)})


def test_printer_golden():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    conv = relay.nn.conv2d(x, w, padding=(1, 1))
    act = relay.nn.relu(conv)
    out = relay.add(act, conv)  # conv is shared: printed once
    f = relay.Function([x, w], relay.Tuple([out, relay.multiply(out, relay.const(0.5))]))
    text = ir.IRModule.from_expr(f).astext(show_types=False)
    assert text == (
        "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {\n"
        "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);\n"
        "  %1 = nn.relu(%0);\n"
        "  %2 = add(%1, %0);\n"
        "  %3 = multiply(%2, 0.5f);\n"
        "  (%2, %3)\n"
        "}\n")
    typed = ir.infer_type(ir.IRModule.from_expr(f)).astext()
    assert "%0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]) /* ty=Tensor[(1, 4, 8, 8), float32] */;" in typed


def test_printer_nested_functions_and_name_clashes():
    a1, a2 = relay.var("a", shape=(2,)), relay.var("a", shape=(2,))
    p = relay.var("p", shape=(2,))
    inner = relay.Function([p], relay.nn.relu(p)).with_attr("Composite", "relu")
    body = relay.add(inner(a1), relay.const(np.arange(2, dtype="float32"))) + a2
    text = ir.astext(body, show_types=False)
    assert text.splitlines()[:2] == ["free_var %a: Tensor[(2,), float32];", "free_var %a_1: Tensor[(2,), float32];"]
    assert '%0 = fn (%p: Tensor[(2,), float32], Composite="relu") {' in text
    assert "meta[relay.Constant][0]" in text


def test_large_graph_prints_one_line_per_node():
    x = relay.var("x", shape=(1, 8))
    y = x
    for i in range(500):
        y = relay.nn.relu(y) if i % 2 else relay.add(y, x)
    text = ir.astext(ir.infer_type(y))
    assert len(text.splitlines()) == 501 and "%498 = " in text


def test_attrs_pickle_and_copy():
    import copy
    import pickle
    attrs = relay.nn.conv2d(relay.var("x", shape=(1, 3, 8, 8)), relay.var("w", shape=(4, 3, 3, 3)), padding=1).attrs
    assert pickle.loads(pickle.dumps(attrs)) == attrs
    assert copy.deepcopy(attrs).padding == (1, 1, 1, 1)
