"""Dataflow patterns as e-matching: agreement with the direct matcher, callbacks as rules."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import ir
import strategies
from ir import relay
from ir.dataflow_pattern import (
    K_ELEMWISE, KINDS, DFPattern, DFPatternCallback, FunctionPattern, TypeCheck, dominates, explain_match,
    has_dtype, has_shape, is_constant, is_expr, is_if, is_let, is_op, is_tuple, is_tuple_get_item, is_var, rewrite,
    wildcard,
)
from ir.dataflow_pattern import find_matches as direct_matches
from ir.dataflow_pattern import semantics
from ir.dataflow_pattern.region import Region as RegionDecision
from ir.dataflow_pattern.region import decide_region
from ir.types import TensorType
from ir.visitor import bind_params_by_name, children, post_order

from eqsat.egraph.lower import add_expr, lift, lower
from eqsat.errors import PatternCompileError
from eqsat.extract import GreedyDagExtractor, IlpExtractor, OpCount, TreeExtractor, node_costs
from eqsat.extract.cost import function_cost
from eqsat.limits import Limits, StopReason
from eqsat.rules import dominator as rules_dominator
from eqsat.rules.callback import CallbackRule, find_matches
from eqsat.rules.pattern import avar, call, const_pat, pvars
from eqsat.rules.rule import rule, ruleset
from eqsat.runner import saturate
from tests.ir.dataflow_pattern.dominator_leaf_cases import leaf_cases, weighted_diamond


def guide_patterns() -> dict:
    """The patterns of the pattern-language guide (plus a few more corners)."""
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    is_conv2d = is_op("nn.conv2d")(is_var(), is_var())
    is_elemwise = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())
    x, var, mean, beta, gamma, eps = (wildcard() for _ in range(6))
    bn = is_op("nn.batch_norm")(wildcard(), wildcard(), wildcard(), wildcard(), wildcard())
    wc1, wc2 = wildcard(), wildcard()
    return {
        "add-or-subtract": (is_op("add") | is_op("subtract"))(wildcard(), wildcard()),
        "op-attr": is_op("nn.dense").has_attr({"TOpPattern": K_ELEMWISE})(wildcard(), wildcard()),
        "call-attr": conv.has_attr({"data_layout": "NHWC"}),
        "call-attr-list": is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"kernel_size": [3, 3]}),
        "optional": is_op("nn.bias_add")(conv, wildcard()).optional(lambda p: is_op("nn.relu")(p)),
        "dtype": has_dtype("float32"),
        "shape": has_shape((1, 8, 16, 16)),
        "call-shape": is_op("nn.relu")(conv).has_shape((1, 8, 32, 32)),
        "tuple": is_tuple((wildcard(), wildcard(), wildcard())),
        "any-tuple-concat": is_op("concatenate")(is_tuple(None)),
        "getitem": is_op("nn.relu")(is_tuple_get_item(bn, 0)),
        "getitem-any-index": is_tuple_get_item(wildcard()),
        "function": FunctionPattern([wc1, wc2], wc1 + wc2),
        "constant": is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), is_constant()), wildcard()),
        "expr": wildcard() + (is_expr(relay.const(0)) | is_expr(relay.const(0.0))),
        "composite": wildcard().has_attr({"Composite": "add"}),
        "diamond": is_op("add")(is_op("nn.relu")(is_conv2d), is_op("nn.leaky_relu")(is_conv2d)),
        "dominator": dominates(is_conv2d, is_elemwise, is_op("add")(wildcard(), wildcard())),
        "batchnorm-math": gamma * (x - mean) / is_op("sqrt")(var + eps) + beta,
        "any-call": wildcard()(None),
        "any-arity": is_op("nn.dense")(None),
        "commutative": is_op("multiply")(wildcard(), wildcard()) + wildcard(),
        "named-var": is_op("nn.conv2d")(is_var("data"), wildcard()),
        "dominator-any-elemwise": dominates(wildcard(), is_elemwise, is_elemwise),
        "dominator-conv-relu-or-add": dominates(
            is_op("nn.conv2d")(wildcard(), wildcard()),
            is_op("nn.relu")(wildcard()) | is_op("nn.bias_add")(wildcard(), wildcard()) | is_op("add")(wildcard(),
                                                                                                      wildcard()),
            wildcard()),
        "dominator-concat": dominates(wildcard(), wildcard(), is_op("concatenate")(None)),
        "dominator-nested": dominates(dominates(is_conv2d, is_elemwise, is_elemwise), is_elemwise, is_op("add")(
            wildcard(), wildcard())),
    }


def classes_of(egraph, body: ir.Expr) -> dict[int, int]:
    """id(IR node) -> canonical class, lowering node by node (every node is already in the e-graph)."""
    handle: dict[int, int] = {}
    for node in post_order(body):
        handle[id(node)] = add_expr(egraph, node, {id(c): handle[id(c)] for c in children(node)})
    egraph.refresh()
    return {k: egraph.canonical(h) for k, h in handle.items()}


@pytest.mark.parametrize("model", ir.models.list_models())
def test_ematching_finds_exactly_the_direct_matches(model):
    mod, params = ir.models.get(model, small=True)
    main = bind_params_by_name(mod["main"], params)
    low = lower(ir.IRModule({"main": main}))
    cls = classes_of(low.egraph, main.body)
    for name, pattern in guide_patterns().items():
        expected = sorted({cls[id(n)] for n in direct_matches(pattern, main.body)})
        assert find_matches(pattern, low.egraph) == expected, f"{model}: {name}"


def test_patterns_on_functions_if_and_let():
    x, y = relay.var("x", shape=(3,)), relay.var("y", shape=(3,))
    add = is_op("add")(wildcard(), wildcard())
    fused = add.partition(ir.infer_type(relay.nn.relu(x + y)), {"Composite": "add"})
    let_var = relay.var("let", shape=(3,), dtype="bool")
    program = relay.Tuple([fused, relay.If(relay.less(x, y), x, y), relay.Let(let_var, relay.less(x, y), let_var)])
    ir.infer_type(program)
    low = lower(ir.IRModule.from_expr(program))
    cls = classes_of(low.egraph, program)
    wc1, wc2 = wildcard(), wildcard()
    patterns = [
        FunctionPattern([wc1, wc2], wc1 + wc2), FunctionPattern(None, wildcard() * wildcard()),
        wildcard().has_attr({"Composite": "add"}), wildcard().has_attr({"Composite": "mul"}),
        is_var("x"), is_op("less")(is_var("x"), is_var("y")),
        is_if(is_op("less")(is_var("x"), is_var("y")), is_var("x"), is_var("y")),
        is_let(is_var("let"), is_op("less")(is_var("x"), is_var("y")), is_var("let")),
    ]
    for pattern in patterns:
        expected = sorted({cls[id(n)] for n in direct_matches(pattern, program)})
        assert find_matches(pattern, low.egraph) == expected, repr(pattern)


@pytest.mark.parametrize("case", leaf_cases(), ids=lambda case: case[0])
def test_dominator_paths_skip_variables_and_constants_as_the_direct_matcher_does(case):
    name, pattern, program, expected = case
    ir.infer_type(program)
    direct = direct_matches(pattern, program)
    assert len(direct) == len(expected) and all(d is e for d, e in zip(direct, expected)), name
    low = lower(ir.IRModule.from_expr(program))
    cls = classes_of(low.egraph, program)
    assert find_matches(pattern, low.egraph) == sorted({cls[id(n)] for n in direct}), name


@dataclass(frozen=True, eq=False)
class RankPattern(DFPattern):
    """A kind defined outside the library: what `pattern` matches, when it is a tensor of `rank` dimensions."""

    pattern: DFPattern
    rank: int

    def children(self) -> tuple[DFPattern, ...]:
        return (self.pattern,)


def rank_test(p: RankPattern, ty: ir.types.Type | None) -> tuple[str, str] | None:
    return None if isinstance(ty, TensorType) and len(ty.shape) == p.rank else ("shape", f"is not of rank {p.rank}")


def test_a_kind_added_by_one_table_entry_works_in_the_matcher_the_explainer_and_the_ematcher(monkeypatch):
    monkeypatch.setitem(KINDS, RankPattern, TypeCheck(rank_test))
    x = relay.var("x", shape=(2, 3))
    flat = relay.reshape(relay.nn.relu(x), (6,))
    program = relay.Tuple([flat, relay.sigmoid(x)])
    ir.infer_type(program)
    low = lower(ir.IRModule.from_expr(program))
    cls = classes_of(low.egraph, program)
    for pattern, expected in [(RankPattern(wildcard(), 2), 3), (is_op("nn.relu")(RankPattern(wildcard(), 2)), 1),
                              (RankPattern(is_op("reshape")(wildcard()), 1), 1), (RankPattern(is_var(), 1), 0)]:
        direct = direct_matches(pattern, program)
        assert len(direct) == expected, repr(pattern)
        assert find_matches(pattern, low.egraph) == sorted({cls[id(n)] for n in direct}), repr(pattern)
    expl = explain_match(RankPattern(wildcard(), 2), flat, graph=program)
    assert expl.cause == "shape" and "is not of rank 2" in expl.first_failure.reason
    assert explain_match(RankPattern(wildcard(), 1), flat, graph=program).matched


@dataclass(frozen=True, eq=False)
class OneArgument(DFPattern):
    """A kind with a handler of its own, defined outside the library: a `call` whose arguments are one value."""

    call: DFPattern

    def children(self) -> tuple[DFPattern, ...]:
        return (self.call,)


def one_argument(w, p: OneArgument, value, form: ir.Expr, depth: int):
    miss = w.visit_form(p.call, value, form, depth + 1)
    if miss is not None or (isinstance(form, ir.Call) and len({w.graph.value_of(a) for a in form.args}) == 1):
        return miss
    return w.fail(p, value, "binding", depth, lambda: f"{w.graph.describe(value)} takes different arguments")


def test_a_kind_with_a_handler_of_its_own_works_in_the_matcher_the_explainer_and_the_ematcher(monkeypatch):
    monkeypatch.setitem(KINDS, OneArgument, one_argument)
    x, y = relay.var("x", shape=(3,)), relay.var("y", shape=(3,))
    square = x * x
    program = relay.Tuple([square + square, x + y, relay.nn.relu(x)])
    ir.infer_type(program)
    low = lower(ir.IRModule.from_expr(program))
    cls = classes_of(low.egraph, program)
    add = is_op("add")(wildcard(), wildcard())
    for pattern, expected in [(OneArgument(wildcard()(None)), 3), (OneArgument(add), 1),
                              (is_op("add")(OneArgument(wildcard()(None)), wildcard()), 1),
                              (is_op("nn.relu")(OneArgument(wildcard()(None))), 0)]:
        direct = direct_matches(pattern, program)
        assert len(direct) == expected, repr(pattern)
        assert find_matches(pattern, low.egraph) == sorted({cls[id(n)] for n in direct}), repr(pattern)
    expl = explain_match(OneArgument(add), program.fields[1], graph=program)
    assert expl.cause == "binding" and "takes different arguments" in str(expl)


def test_a_pattern_that_cannot_be_compiled_is_named():
    low = lower(ir.IRModule.from_expr(relay.nn.relu(relay.var("x", shape=(2,)))))
    with pytest.raises(PatternCompileError, match="DFPattern|pattern"):
        find_matches("not a pattern", low.egraph)


class BatchnormCallback(DFPatternCallback):
    """The guide's callback: arithmetic that equals batch_norm becomes batch_norm."""

    def __init__(self, require_type=False):
        super().__init__(require_type)
        self.x, self.var, self.mean, self.beta, self.gamma, self.eps = (wildcard() for _ in range(6))
        self.pattern = self.gamma * (self.x - self.mean) / is_op("sqrt")(self.var + self.eps) + self.beta

    def callback(self, pre, post, node_map):
        x, var, mean, beta, gamma = (node_map[p][0] for p in (self.x, self.var, self.mean, self.beta, self.gamma))
        eps = node_map[self.eps][0]
        return relay.op.nn.batch_norm(x, gamma, beta, mean, var, epsilon=float(eps.data.numpy().item()))[0]


class FuseConvRelu(DFPatternCallback):
    """The guide's partition example as a callback: conv2d + relu become one composite function."""

    def __init__(self):
        super().__init__()
        self.pattern = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))

    def callback(self, pre, post, node_map):
        return self.pattern.partition(post, {"Composite": "conv_relu"})


def guide_program() -> ir.IRModule:
    x = relay.var("x", shape=(2, 4))
    var, mean, beta, gamma = (relay.var(n, shape=(4,)) for n in ("var", "mean", "beta", "gamma"))
    bn = gamma * (x - mean) / relay.op.sqrt(var + relay.const(1e-5)) + beta
    w = relay.var("w", shape=(4, 4, 1, 1))
    conv = relay.nn.conv2d(relay.reshape(bn, (1, 4, 2, 1)), w)
    return ir.IRModule.from_expr(relay.Tuple([relay.nn.relu(conv), relay.nn.relu(relay.nn.relu(conv))]))


def program_cost(mod: ir.IRModule) -> float:
    typed = ir.infer_type(mod)
    return function_cost(typed["main"], OpCount())


def test_guide_callbacks_saturate_to_a_program_that_is_equal_and_no_worse_than_rewrite():
    mod = guide_program()
    callbacks = [BatchnormCallback(), FuseConvRelu()]
    low = lower(mod)
    report = saturate(low.egraph, ruleset("guide", [CallbackRule(cb) for cb in callbacks]), Limits(iterations=10))
    assert report.stop_reason is StopReason.SATURATED
    view = low.view()
    choice = GreedyDagExtractor().extract(view, view.roots, OpCount())
    choice.check(view)
    out = lift(low, view, choice.node_of)
    direct = ir.IRModule.from_expr(rewrite(callbacks, mod["main"].body))
    assert choice.dag_cost(view, node_costs(view, OpCount())) <= program_cost(direct)
    rng = np.random.default_rng(0)
    inputs = {p.name_hint: rng.random(p.type_annotation.concrete_shape).astype("float32") + 0.5
              for p in mod["main"].params}
    for want, got in zip(strategies.evaluate(mod, inputs), strategies.evaluate(out, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_escaping_intermediates_become_extraction_constraints():
    # conv feeds relu (fused by the callback) and also a second user: fusing would compute conv twice
    x, w = relay.var("x", shape=(1, 2, 4, 4)), relay.var("w", shape=(2, 2, 1, 1))
    conv = relay.nn.conv2d(x, w)
    mod = ir.IRModule.from_expr(relay.Tuple([relay.nn.relu(conv), relay.sigmoid(conv)]))
    low = lower(mod)
    saturate(low.egraph, ruleset("fuse", [CallbackRule(FuseConvRelu())]), Limits(iterations=3))
    view = low.view()
    assert len(view.closed_regions) == 1
    for costs in (OpCount(), [0.0 if n.kind.value == "apply" else 1.0 for n in view.nodes]):
        choice = GreedyDagExtractor().extract(view, view.roots, costs)
        choice.check(view)
        assert not any(view.nodes[n].kind.value == "apply" for n in choice.node_of.values()
                       if view.nodes[n].eclass in choice.classes(view))


def transposes_to_negations():
    """A rule that gives transpose(transpose(x)) (an identity) an element-wise form: negative(negative(x))."""
    x, = pvars("x")

    def identity(m):
        return [m["p"][i] for i in m["q"]] == list(range(len(m["p"])))
    return rule("transposes-to-negations", call("transpose", call("transpose", x, axes=avar("p")), axes=avar("q")),
                call("negative", call("negative", x)), when=identity)


ELEMWISE = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())


def conv_region(extra_user: bool = False):
    """add(relu(conv), transpose(transpose(relu(conv)))): the second path is element-wise only after a rewrite."""
    x, w = relay.var("x", shape=(1, 2, 4, 4)), relay.var("w", shape=(2, 2, 1, 1))
    conv = relay.nn.conv2d(x, w)
    r = relay.nn.relu(conv)
    body = relay.add(r, relay.transpose(relay.transpose(r, (0, 1, 3, 2)), (0, 1, 3, 2)))
    if extra_user:
        body = relay.Tuple([body, relay.sigmoid(conv)])
    return ir.IRModule.from_expr(body)


DOMINATOR = dominates(is_op("nn.conv2d")(wildcard(), wildcard()), ELEMWISE, is_op("add")(wildcard(), wildcard()))


class FuseRegion(DFPatternCallback):
    """Partitions the region of a dominator pattern into one composite function."""

    def __init__(self, pattern=DOMINATOR):
        super().__init__()
        self.pattern = pattern
        self.seen = []

    def callback(self, pre, post, node_map):
        self.seen.append((pre, node_map))
        return self.pattern.partition(post, {"Composite": "region"})


def test_dominators_match_forms_that_rules_create():
    low = lower(conv_region())
    assert find_matches(DOMINATOR, low.egraph) == []  # transpose is not element-wise
    saturate(low.egraph, ruleset("neg", [transposes_to_negations()]), Limits(iterations=3))
    add = low.egraph.canonical(low.root)
    assert find_matches(DOMINATOR, low.egraph) == [add]


def test_a_dominator_callback_sees_the_region_in_the_forms_that_match():
    mod = conv_region()
    low = lower(mod)
    fuse = FuseRegion()
    report = saturate(low.egraph, ruleset("r", [transposes_to_negations(), CallbackRule(fuse)]), Limits(iterations=6))
    assert report.stop_reason is StopReason.SATURATED and report.applied_per_rule["FuseRegion"] == 1
    pre, node_map = fuse.seen[0]
    ops = [n.op.name for n in post_order(pre) if isinstance(n, ir.Call)]
    assert ops == ["nn.conv2d", "nn.relu", "negative", "negative", "add"]  # the region, not the lowered transposes
    assert [n.op.name for n in node_map[DOMINATOR.parent]] == ["nn.conv2d"]
    assert [n.op.name for n in node_map[DOMINATOR.path]] == ["nn.relu", "negative", "negative"]
    view = low.view()
    cheap_apply = [0.0 if n.kind.value == "apply" else 1.0 for n in view.nodes]
    choice = GreedyDagExtractor().extract(view, view.roots, cheap_apply)
    choice.check(view)
    out = lift(low, view, choice.node_of)
    assert isinstance(out["main"].body.op, ir.Function)
    inputs = {"x": np.ones((1, 2, 4, 4), "float32"), "w": np.full((2, 2, 1, 1), -0.5, "float32")}
    np.testing.assert_allclose(strategies.evaluate(out, inputs), strategies.evaluate(mod, inputs))


def test_post_dominance_is_an_extraction_constraint():
    # conv also feeds sigmoid: the fused region would compute conv a second time
    low = lower(conv_region(extra_user=True))
    saturate(low.egraph, ruleset("r", [transposes_to_negations(), CallbackRule(FuseRegion())]), Limits(iterations=6))
    view = low.view()
    assert any(n.kind.value == "apply" for n in view.nodes)  # the callback fired ...
    cheap_apply = [0.0 if n.kind.value == "apply" else 1.0 for n in view.nodes]
    for extractor in (GreedyDagExtractor(), TreeExtractor(), IlpExtractor(seconds=10)):
        choice = extractor.extract(view, view.roots, cheap_apply)
        choice.check(view)  # ... but its result is never extracted
        assert not any(view.nodes[choice.node_of[c]].kind.value == "apply" for c in choice.classes(view))


def test_a_variable_a_dominator_path_skips_stays_outside_the_region():
    # the bias feeds a path node and a node outside the region: it is an input, so the region may be extracted
    _, _, program, _ = next(case for case in leaf_cases() if case[0] == "shared-bias")
    mod = ir.IRModule.from_expr(relay.Function(ir.free_vars(program), program))
    low = lower(mod)
    fuse = FuseRegion(weighted_diamond)
    report = saturate(low.egraph, ruleset("r", [CallbackRule(fuse)]), Limits(iterations=4))
    assert report.applied_per_rule["FuseRegion"] == 1
    assert [n.op.name for n in fuse.seen[0][1][weighted_diamond.path]] == ["nn.bias_add", "nn.relu", "nn.leaky_relu"]
    view = low.view()
    (region,) = view.closed_regions
    bias_class = next(n.eclass for n in view.nodes if n.kind.value == "var" and n.payload == ("bias",))
    relu_class = next(n.eclass for n in view.nodes if n.kind.value == "call" and n.op == "nn.relu")
    assert relu_class in region.interior and bias_class not in region.interior
    cheap_apply = [0.0 if n.kind.value == "apply" else 1.0 for n in view.nodes]
    choice = GreedyDagExtractor().extract(view, view.roots, cheap_apply)
    choice.check(view)
    out = lift(low, view, choice.node_of)
    fused = out["main"].body.fields[0]
    assert isinstance(fused.op, ir.Function) and any(a.name_hint == "bias" for a in fused.args
                                                     if isinstance(a, ir.Var))
    rng = np.random.default_rng(0)
    inputs = {p.name_hint: rng.random(p.type_annotation.concrete_shape).astype("float32") for p in mod["main"].params}
    for want, got in zip(strategies.evaluate(mod, inputs), strategies.evaluate(out, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


class WrapRelu(DFPatternCallback):
    """relu(x) -> relu(x * 1): its result matches its own pattern, so it can rewrite forever."""

    def __init__(self, rewrite_once: bool):
        super().__init__(rewrite_once=rewrite_once)
        self.x = wildcard()
        self.pattern = is_op("nn.relu")(self.x)

    def callback(self, pre, post, node_map):
        return relay.nn.relu(node_map[self.x][0] * relay.const(1.0))


def test_rewrite_once_applies_a_callback_to_the_input_program_only():
    x = relay.var("x", shape=(2, 3))
    mod = ir.IRModule.from_expr(relay.nn.relu(relay.nn.relu(x)) + relay.sigmoid(x))
    counts = {}
    for once in (False, True):
        low = lower(mod)
        report = saturate(low.egraph, ruleset("wrap", [CallbackRule(WrapRelu(once))]), Limits(iterations=6))
        counts[once] = report
    assert counts[False].stop_reason is StopReason.ITERATION_LIMIT  # its own results match again and again
    assert counts[True].stop_reason is StopReason.SATURATED
    assert counts[True].applied_per_rule == {"WrapRelu": 2}  # the two relu e-nodes of the input, once each
    direct = rewrite(WrapRelu(True), mod["main"].body)
    assert sum(1 for n in post_order(direct) if isinstance(n, ir.Call) and n.op.name == "multiply") == 2


def test_a_leaf_class_holding_a_constant_reaches_the_callback_as_that_constant():
    a, b = relay.const(np.full(3, 2.0, "float32")), relay.const(np.full(3, 3.0, "float32"))
    mod = ir.IRModule.from_expr(relay.nn.relu(a + b))
    fold = rule("fold-add", call("add", const_pat("a"), const_pat("b")), lambda m: ir.const(m.const("a") + m.const("b")))
    seen = []

    class Probe(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.x = wildcard()
            self.pattern = is_op("nn.relu")(self.x)

        def callback(self, pre, post, node_map):
            seen.append(node_map[self.x][0])
            return post
    low = lower(mod)
    saturate(low.egraph, ruleset("fold", [fold]), Limits(iterations=3))
    saturate(low.egraph, ruleset("probe", [CallbackRule(Probe())]), Limits(iterations=3))
    assert len(seen) == 1 and isinstance(seen[0], ir.Constant)
    np.testing.assert_array_equal(seen[0].data, np.full(3, 5.0, "float32"))


def aliases() -> dict:
    """Patterns with a redirected wildcard but no cycle: each one is its target under another name."""
    conv, relu_op, conv_or_relu = wildcard(), wildcard(), wildcard()
    conv.redirect_to(is_op("nn.conv2d")(wildcard(), wildcard()))
    relu_op.redirect_to(is_op("nn.relu"))
    conv_or_relu.redirect_to(conv | is_op("nn.relu")(wildcard()))
    batch_norm = is_op("nn.batch_norm")(conv, wildcard(), wildcard(), wildcard(), wildcard())
    return {"conv": conv, "batch-norm-of-conv": batch_norm, "callee": relu_op(wildcard()),
            "alternative": is_op("add")(conv_or_relu, wildcard())}


def test_a_redirect_without_a_cycle_compiles_to_its_target():
    mod, params = ir.models.get("resnet50", small=True)
    main = bind_params_by_name(mod["main"], params)
    low = lower(ir.IRModule({"main": main}))
    cls = classes_of(low.egraph, main.body)
    for name, pattern in aliases().items():
        expected = sorted({cls[id(n)] for n in direct_matches(pattern, main.body)})
        assert expected and find_matches(pattern, low.egraph) == expected, name


class KeepChain(DFPatternCallback):
    """A callback on a chain of casts of any length (a recursive pattern)."""

    def __init__(self):
        super().__init__()
        rec = wildcard()
        self.pattern = is_op("cast")(rec)
        rec.redirect_to(self.pattern | is_var())

    def callback(self, pre, post, node_map):
        return post


def test_recursive_patterns_are_refused_by_name():
    x = relay.var("x", shape=(2,))
    chain = relay.cast(relay.cast(x, "float32"), "float32")
    callback = KeepChain()
    assert direct_matches(callback.pattern, chain) == [chain.args[0], chain]
    low = lower(ir.IRModule.from_expr(chain))
    refused = r"recursive patterns \(redirect_to\) .* cannot compile a cyclic pattern: %0 = wildcard\(\); "
    with pytest.raises(PatternCompileError, match=refused):
        find_matches(callback.pattern, low.egraph)
    with pytest.raises(PatternCompileError, match=refused):
        saturate(low.egraph, ruleset("chains", [CallbackRule(callback)]), Limits(iterations=2))


def test_the_direct_matcher_and_the_ematcher_decide_a_region_with_one_function(monkeypatch):
    # a path through bias_add skips the bias variable; both matchers call `decide_region` and agree
    _, pattern, program, expected = next(case for case in leaf_cases() if case[0] == "bias-add-variable")
    ir.infer_type(program)
    decided: dict[str, list] = {"direct": [], "egraph": []}

    def spy(side, module):
        def decide(inputs, graph):
            region = decide_region(inputs, graph)
            if isinstance(region, RegionDecision):
                decided[side].append(region)
            return region
        monkeypatch.setattr(module, "decide_region", decide)

    spy("direct", semantics)
    spy("egraph", rules_dominator)
    direct = direct_matches(pattern, program)
    assert direct == expected == [program]
    low = lower(ir.IRModule.from_expr(program))
    cls = classes_of(low.egraph, program)
    assert find_matches(pattern, low.egraph) == [cls[id(program)]]
    by_direct = {(cls[id(r.parent)], tuple(cls[id(n)] for n, _ in r.path)) for r in decided["direct"]}
    by_egraph = {(r.parent, tuple(c for c, _ in r.path)) for r in decided["egraph"]}
    assert len(by_direct) == 1 and by_direct == by_egraph
    ((_, path),) = by_direct
    assert len(path) == 3  # bias_add, relu and leaky_relu; the bias variable is skipped
