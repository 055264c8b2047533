"""Lowering IR into the e-graph and lifting it back: structure, sharing, types, scale."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings

import ir
from ir import relay
from ir.dataflow_pattern import is_op, wildcard
from ir.types import TensorType, TupleType

from eqsat.egraph.lower import lift, lower
from eqsat.egraph.terms import Kind
from eqsat.errors import LoweringError
from tests.ir.random_graphs import graphs

from ..graphs import synthetic


def round_trip(mod: ir.IRModule, params=None) -> ir.IRModule:
    low = lower(mod, params)
    view = low.view()
    return lift(low, view, {c: ns[0] for c, ns in view.classes.items()})


def count_nodes(expr: ir.Expr) -> int:
    return sum(1 for _ in ir.post_order(expr))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(graphs())
def test_lower_then_lift_is_structurally_equal(expr):
    mod = ir.IRModule.from_expr(expr)
    assert ir.structural_equal(round_trip(mod), mod)


def test_tuples_tuple_valued_ops_and_inner_functions_round_trip():
    x = relay.var("x", shape=(1, 4, 6, 6))
    gamma, beta, mean, var = (relay.const(np.full(4, v, "float32")) for v in (1.0, 0.0, 0.5, 2.0))
    bn = relay.nn.batch_norm(x, gamma, beta, mean, var)
    halves = relay.split(bn[0], 2, axis=1)
    relu = ir.infer_type(relay.nn.relu(halves[0]))  # typed, so the partitioned function is typed too
    fused = is_op("nn.relu")(wildcard()).partition(relu, {"Composite": "relu"})
    assert isinstance(fused.op, ir.Function)
    cond = relay.var("c", shape=(), dtype="bool")
    body = relay.If(cond, fused, halves[1])
    y = relay.var("y", shape=(1, 2, 6, 6))
    program = relay.Let(y, body, relay.Tuple([y, bn[1], relay.concatenate([y, y], axis=1)]))
    mod = ir.IRModule.from_expr(program)
    assert ir.structural_equal(round_trip(mod), mod)


def test_sharing_is_preserved_both_ways():
    x = relay.var("x", shape=(2, 3))
    shared = relay.nn.relu(x)
    twin = relay.nn.relu(x)              # structurally equal: becomes the same e-class
    mod = ir.IRModule.from_expr(relay.add(relay.add(shared, shared), twin))
    low = lower(mod)
    view = low.view()
    assert sum(1 for n in view.nodes if n.op == "nn.relu") == 1
    out = lift(low, view, {c: ns[0] for c, ns in view.classes.items()})
    assert ir.structural_equal(out, mod)
    assert count_nodes(out["main"].body) == 4  # x, relu, add, add: the two relus are one node


def test_constants_are_hash_consed_by_value_dtype_and_shape():
    x = relay.var("x", shape=(3,))
    ones = [relay.const(np.ones(3, "float32")) for _ in range(2)]
    other = [relay.const(np.ones(3, "float64").astype("float32").reshape(3)), relay.const(np.ones((3,), "int32"))]
    e = relay.Tuple([x + ones[0], x + ones[1], x + other[0], relay.cast(x, "int32") + other[1]])
    view = lower(ir.IRModule.from_expr(e)).view()
    assert sum(1 for n in view.nodes if n.kind is Kind.CONST) == 2  # float32 ones (3 times) and int32 ones


def test_params_are_bound_as_constants():
    x, w = relay.var("x", shape=(2, 3)), relay.var("w", shape=(4, 3))
    mod = ir.IRModule.from_expr(relay.nn.dense(x, w))
    out = round_trip(mod, {"w": np.ones((4, 3), "float32")})
    assert [p.name_hint for p in out["main"].params] == ["x"]
    assert isinstance(out["main"].body.args[1], ir.Constant)


def test_types_are_an_eclass_analysis():
    x = relay.var("x", shape=(1, 4, 6, 6))
    mod = ir.IRModule.from_expr(relay.split(relay.nn.relu(x), 2, axis=1)[1])
    view = lower(mod).view()
    relu = next(n for n in view.nodes if n.op == "nn.relu")
    split = next(n for n in view.nodes if n.op == "split")
    assert view.types[relu.eclass] == TensorType((1, 4, 6, 6))
    assert view.types[split.eclass] == TupleType([TensorType((1, 2, 6, 6))] * 2)


def test_untyped_program_is_rejected_with_the_variable_named():
    x = relay.var("x")
    with pytest.raises(LoweringError, match="x"):
        lower(ir.IRModule.from_expr(relay.nn.relu(x)))


def test_distinct_variables_with_one_name_stay_distinct():
    a, b = relay.var("x", shape=(2,)), relay.var("x", shape=(2,))
    mod = ir.IRModule.from_expr(a + b)
    out = round_trip(mod)
    assert ir.structural_equal(out, mod)
    assert out["main"].body.args[0] is a and out["main"].body.args[1] is b


def test_ten_thousand_node_graph_round_trips_quickly():
    mod = synthetic(10_000, seed=1)
    start = time.perf_counter()
    out = round_trip(mod)
    seconds = time.perf_counter() - start
    assert ir.structural_equal(out, mod)
    assert count_nodes(out["main"].body) <= count_nodes(mod["main"].body)  # no tree blow-up
    assert seconds < 20, f"10k-node round trip took {seconds:.1f} s"


def test_names_with_blanks_tabs_and_line_breaks_survive_the_trip():
    names = [" lead", "trail ", "tab\there", "line\nbreak", "", "quote\"d", "x"]
    vs = [relay.var(n, shape=(2,)) for n in names]
    body = vs[0]
    for v in vs[1:]:
        body = body + v
    mod = ir.IRModule.from_expr(body)
    out = round_trip(mod)
    assert ir.structural_equal(out, mod)
    assert [p.name_hint for p in out["main"].params] == names
