"""Building patterns: each builder's node kind and fields, readable text, and clear errors."""

from __future__ import annotations

import dataclasses

import pytest

import ir
from ir import relay
from ir.dataflow_pattern import *  # noqa: F403


def test_builders_make_one_node_kind_each():
    wc1, wc2 = wildcard(), wildcard()
    call = is_op("add")(wc1, wc2)
    assert isinstance(call, CallPattern) and call.args == (wc1, wc2)
    assert isinstance(call.op, ExprPattern) and call.op.expr is ir.get_op("add")
    assert isinstance(is_var("x"), VarPattern) and is_var("x").name == "x"
    assert isinstance(is_constant(), ConstantPattern)
    assert isinstance(is_expr(relay.const(1)), ExprPattern)
    func = FunctionPattern([wc1, wc2], call)
    assert func.params == (wc1, wc2) and func.body is call
    tup = is_tuple([wc1, wc2])
    assert isinstance(tup, TuplePattern) and tup[1] is wc2 and len(tup) == 2
    item = is_tuple_get_item(tup, 1)
    assert isinstance(item, TupleGetItemPattern) and item.tuple is tup and item.index == 1
    assert is_tuple_get_item(tup).index is None
    assert isinstance(is_op("add") | is_op("subtract"), AltPattern)
    assert has_type(relay.TensorType((10, 10), "float32")).type == relay.TensorType((10, 10), "float32")
    assert has_dtype("float16").dtype == "float16"
    assert has_shape([10, 10]).shape == (10, 10)
    assert is_op("add").has_attr({"TOpPattern": K_ELEMWISE}).attrs["TOpPattern"] == K_ELEMWISE
    assert isinstance(is_if(wc1, wc1, wc2), IfPattern) and isinstance(is_let(wc1, wc2, wc1), LetPattern)
    dom = dominates(wc1, wc2, call)
    assert (dom.parent, dom.path, dom.child) == (wc1, wc2, call)


def test_operators_build_op_calls():
    a, b = wildcard(), wildcard()
    for pattern, op in ((a + b, "add"), (a - b, "subtract"), (a * b, "multiply"), (a / b, "divide")):
        assert pattern.op.expr.name == op and pattern.args == (a, b)
    assert wildcard()(None).args is None
    assert wildcard()().args == ()


def test_expressions_become_expr_patterns_in_calls():
    x = relay.var("x")
    pattern = is_op("add")(wildcard(), x)
    assert isinstance(pattern.args[1], ExprPattern) and pattern.args[1].expr is x


def test_optional_and_method_dominates():
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    opt = conv.optional(lambda p: is_op("nn.relu")(p))
    assert isinstance(opt, AltPattern) and opt.left is conv and opt.right.args == (conv,)
    dom = is_op("add")(wildcard(), wildcard()).dominates(conv)
    assert isinstance(dom.path, WildcardPattern) and dom.parent is conv


def test_patterns_are_immutable_and_identity_hashed():
    a, b = wildcard(), wildcard()
    assert a != b and len({a, b}) == 2
    call = a(b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.args = (a,)  # type: ignore[misc]


def test_text_names_shared_subpatterns():
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    diamond = is_op("add")(is_op("nn.relu")(conv), is_op("nn.leaky_relu")(conv))
    assert repr(diamond) == ('%0 = is_op("nn.conv2d")(wildcard(), wildcard())\n'
                             'is_op("add")(is_op("nn.relu")(%0), is_op("nn.leaky_relu")(%0))')
    wc = wildcard()
    assert str(wc + wc) == '%0 = wildcard()\nis_op("add")(%0, %0)'


def test_text_of_every_kind():
    x = relay.var("x")
    cases = {
        is_var("x"): 'is_var("x")',
        is_var(): "is_var()",
        is_constant(): "is_constant()",
        is_expr(x): "is_expr(%x)",
        is_tuple(None): "is_tuple(None)",
        is_tuple([wildcard()]): "is_tuple([wildcard()])",
        is_tuple_get_item(wildcard(), 0): "is_tuple_get_item(wildcard(), 0)",
        wildcard()(None): "wildcard()(None)",
        FunctionPattern(None, wildcard()): "FunctionPattern(None, wildcard())",
        is_if(is_var(), is_var(), is_var()): "is_if(is_var(), is_var(), is_var())",
        is_let(is_var(), wildcard(), is_var()): "is_let(is_var(), wildcard(), is_var())",
        is_op("add") | is_op("subtract"): '(is_op("add") | is_op("subtract"))',
        has_dtype("float32"): 'wildcard().has_dtype("float32")',
        has_shape((1, "n")): "wildcard().has_shape([1, n])",
        has_type(relay.TensorType((2,), "int32")): "wildcard().has_type(Tensor[(2,), int32])",
        has_attr({"Composite": "add"}): "wildcard().has_attr({'Composite': 'add'})",
        dominates(is_var(), wildcard(), is_constant()): "dominates(is_var(), wildcard(), is_constant())",
    }
    for pattern, text in cases.items():
        assert repr(pattern) == text


def test_unknown_op_is_named():
    with pytest.raises(ir.OpNotFoundError, match=r"is_op: unknown op 'nn.conv4d'.*nn.conv2d"):
        is_op("nn.conv4d")
    with pytest.raises(InvalidPatternError, match="is_op expects an op name"):
        is_op(ir.get_op("add"))


@pytest.mark.parametrize("build, message", [
    (lambda: is_tuple_get_item(wildcard(), "x"), r"is_tuple_get_item: the index must be .* str 'x'"),
    (lambda: is_tuple_get_item(wildcard(), -1), "non-negative"),
    (lambda: is_tuple_get_item("t", 0), "the tuple of is_tuple_get_item"),
    (lambda: wildcard()(wildcard(), 3), r"item 1 must be a pattern or an IR expression, got int 3"),
    (lambda: wildcard()(wildcard(), None), "item 1 is None; pass None alone"),
    (lambda: wildcard() + 1.5, "is_expr"),
    (lambda: wildcard().has_attr(["data_layout"]), "has_attr expects a dict"),
    (lambda: has_attr({1: "x"}), "has_attr expects a dict"),
    (lambda: has_type((10, 10)), "has_type expects an IR type"),
    (lambda: has_dtype("notatype"), "has_dtype expects a dtype name"),
    (lambda: has_shape([2, -1]), "has_shape expects a list of dimensions"),
    (lambda: is_tuple(wildcard()), "the fields of is_tuple must be a list"),
    (lambda: FunctionPattern(wildcard(), wildcard()), "parameters of a FunctionPattern must be a list"),
    (lambda: is_var(3), "is_var expects a name"),
    (lambda: is_expr("x"), "is_expr expects an IR expression"),
    (lambda: wildcard() | "x", "the right side of |"),
    (lambda: dominates(wildcard(), None, wildcard()), "the path of dominates"),
    (lambda: wildcard().optional(3), "optional expects a function"),
])
def test_bad_arguments_are_named(build, message):
    with pytest.raises(InvalidPatternError, match=message):
        build()


def test_invalid_pattern_error_is_a_type_error():
    assert issubclass(InvalidPatternError, TypeError) and issubclass(InvalidPatternError, ir.IRError)


def test_kinds_are_tvm_numbers():
    assert (K_ELEMWISE, K_BROADCAST, K_INJECTIVE, K_COMM_REDUCE, K_OUT_ELEMWISE_FUSABLE, K_TUPLE, K_OPAQUE) == \
        (0, 1, 2, 3, 4, 7, 8)


def test_relay_namespace_exports_the_same_objects():
    import ir.dataflow_pattern as dfp
    from ir.relay import dataflow_pattern as relay_dfp
    assert relay.dataflow_pattern.rewrite is dfp.rewrite
    assert set(relay_dfp.__all__) == set(dfp.__all__)
    assert all(getattr(relay_dfp, name) is getattr(dfp, name) for name in dfp.__all__)
