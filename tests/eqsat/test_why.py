"""why_not: one hand-made near miss per cause, each named, and a zoo model; the `eqsat why` command."""

from __future__ import annotations

import pytest

import eqsat
import ir
from eqsat.cli import main
from eqsat.optimize import saturate_program
from ir import relay
from eqsat import call, pvars, rule
from ir.dataflow_pattern import K_ELEMWISE, DFPatternCallback, dominates, is_op, wildcard


def saturated(body: ir.Expr, rules="default", limits: eqsat.Limits = eqsat.Limits(), **kwargs):
    return saturate_program(ir.IRModule.from_expr(relay.Function(ir.free_vars(body), body)), rules=rules,
                            limits=limits, **kwargs)


def var(name: str, *shape: int) -> ir.Var:
    return relay.var(name, shape=shape)


def test_wrong_attribute():
    sat = saturated(relay.nn.gelu(var("x", 1, 8, 16) + var("b", 16), approximate="tanh"))
    why = eqsat.why_not(sat, "bias-gelu", "%result")
    assert why.cause == "attr" and "approximate is 'tanh', not 'none'" in str(why)


def test_wrong_axis_among_every_form_of_the_class():
    sat = saturated(relay.nn.bias_add(relay.nn.conv2d(var("x", 1, 3, 8, 8), var("w", 4, 3, 3, 3)), var("b", 6), axis=3))
    why = eqsat.why_not(sat, "conv-bias", "%result")
    assert why.cause == "attr" and "axis is 3, not 1" in why.explanation.first_failure.reason
    assert len(why.explanation.miss.options) >= 2  # the lowered form and the add that bias-add-as-add made


def test_non_constant_weight():
    sat = saturated(relay.nn.matmul(var("a", 4, 8), var("m", 8, 5)) * relay.var("s", shape=()))
    why = eqsat.why_not(sat, "scaled-matmul", "%result")
    assert why.cause == "not_constant" and "%s in the input) is a variable, not a constant" in str(why)


def test_a_guard_returning_false():
    sat = saturated(relay.nn.dense(var("d", 4, 8), var("w", 5, 8)) + var("b", 4, 5))  # a matrix bias
    why = eqsat.why_not(sat, "dense-bias", "%result")
    assert why.cause == "guard" and "_vector_bias" in why.reason


def test_a_dtype_the_rule_does_not_hold_for():
    ints = {"dtype": "int32"}
    product = relay.nn.matmul(relay.var("a", shape=(4, 8), **ints), relay.var("m", shape=(8, 5), **ints))
    why = eqsat.why_not(saturated(product * relay.const(2, "int32")), "scaled-matmul", "%result")
    assert why.cause == "dtype_group" and "int32" in why.reason


def test_a_result_of_another_type():
    x, = pvars("x")
    wrong = rule("relu-as-transpose", call("nn.relu", x), call("transpose", x, axes=(1, 0)))
    why = eqsat.why_not(saturated(relay.nn.relu(var("y", 2, 3)), rules=[wrong]), wrong, "%result")
    assert why.cause == "type_rejected" and "(3, 2)" in why.reason


class _Unchanged(DFPatternCallback):
    def __init__(self):
        super().__init__()
        self.pattern = is_op("nn.relu")(wildcard())

    def callback(self, pre, post, node_map):
        return pre


def test_a_callback_that_declines_and_a_bare_pattern_that_matches():
    sat = saturated(relay.nn.relu(var("y", 2, 3)), rules=[_Unchanged()])
    assert eqsat.why_not(sat, _Unchanged(), "%result").cause == "declined"
    assert eqsat.why_not(sat, _Unchanged().pattern, "%result").cause == "matched"


def test_a_rule_the_scheduler_banned():
    d = var("d", 4, 8)
    heads = [relay.nn.bias_add(relay.nn.dense(d, var(f"w{i}", 5, 8)), var(f"b{i}", 5)) for i in range(3)]
    sat = saturated(relay.Tuple(heads), rules="fusion", limits=eqsat.Limits(iterations=2),
                    scheduler=eqsat.BackoffScheduler(match_limit=1))
    why = eqsat.why_not(sat, "bias-add-as-add", "%1")
    assert why.cause == "banned" and "iteration_limit" in why.reason


class _Diamond(DFPatternCallback):
    def __init__(self):
        super().__init__()
        unary = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())
        conv, add = is_op("nn.conv2d")(wildcard(), wildcard()), is_op("add")(wildcard(), wildcard())
        self.pattern = dominates(conv, unary, add)

    def callback(self, pre, post, node_map):
        return relay.nn.relu(pre)


def test_a_consumer_outside_the_region():
    x, w = var("x", 1, 3, 8, 8), var("w", 4, 3, 3, 3)
    conv = relay.nn.conv2d(x, w)
    relu = relay.nn.relu(conv)
    program = relay.Tuple([relu + relay.nn.leaky_relu(conv, alpha=0.0), relay.sigmoid(relu)])
    sat = saturated(program, rules=[_Diamond()])
    for question in (_Diamond(), _Diamond().pattern):
        why = eqsat.why_not(sat, question, "%3")
        assert why.cause == "outside_consumer" and "is also used by e-class" in str(why)


def test_a_dominator_path_node_fed_only_by_a_variable():
    y, x, w = var("y", 1, 4, 6, 6), var("x", 1, 3, 8, 8), var("w", 4, 3, 3, 3)
    relu_y = relay.nn.relu(y)  # %0: its only input is a variable, which a path skips
    sat = saturated(relu_y + relay.nn.leaky_relu(relay.nn.conv2d(x, w), alpha=0.1), rules=[])
    why = eqsat.why_not(sat, _Diamond().pattern, "%result")
    assert why.cause == "dominator_path"
    assert "(%0 in the input), which has only variables or constants as inputs" in str(why)


@pytest.fixture(scope="module")
def bert():
    return ir.models.get("bert", small=True)


def test_a_limit_hit_before_the_rule_ran(bert):
    mod, params = bert
    tanh = next(n for n in ir.post_order(mod["main"].body) if isinstance(n, ir.Call) and n.op.name == "tanh")
    node = ir.printer.node_names(mod)[tanh]
    stopped = eqsat.optimize(mod, params, limits=eqsat.Limits(iterations=2), verify=False)
    assert eqsat.why_not(stopped, "dense-bias-tanh", node).cause == "limit"
    earlier = eqsat.why_not(saturate_program(mod, params, limits=eqsat.Limits(iterations=1)), "dense-bias-tanh", node)
    assert earlier.cause == "op" and "iteration_limit" in earlier.notes[0]  # the form is not there yet
    assert eqsat.why_not(eqsat.optimize(mod, params, verify=False), "dense-bias-tanh", node).cause == "applied"


def test_an_applied_rule_says_whether_the_target_extracted_its_result(bert):
    mod, params = bert
    notes = {target: eqsat.why_not(eqsat.optimize(mod, params, target=target, verify=False), "skip-layer-norm",
                                   "%5").notes[0] for target in ("cpu", "cuda")}
    assert "uses it: nn.skip_layer_norm, made by skip-layer-norm" in notes["cuda"]
    assert "computes e-class" in notes["cpu"] and "with nn.layer_norm (from the input) instead" in notes["cpu"]


def test_a_zoo_model_relu6_is_not_the_relu_a_fusion_expects():
    mod, params = ir.models.get("mobilenet_v2", small=True)
    clip = next(n for n in ir.post_order(mod["main"].body) if isinstance(n, ir.Call) and n.op.name == "clip")
    why = eqsat.why_not(saturate_program(mod, params), "conv-bias-relu", ir.printer.node_names(mod)[clip])
    assert why.cause == "op" and "the call is of clip, not nn.relu" in str(why)


def test_bad_questions_are_named(bert):
    sat = saturate_program(*bert, limits=eqsat.Limits(iterations=1))
    with pytest.raises(eqsat.EqsatError, match="did you mean dense-bias"):
        eqsat.why_not(sat, "dense-bais", "%3")
    with pytest.raises(eqsat.EqsatError, match="no node %999"):
        eqsat.why_not(sat, "dense-bias", "%999")


def test_cli_why_with_a_rule_and_with_a_pattern_file(tmp_path, capsys):
    assert main(["why", "bert", "--small", "--quiet", "--iterations", "2", "--rule", "dense-bias-tanh",
                 "--node", "%86"]) == 0
    out = capsys.readouterr().out
    assert "node %86 = tanh(%85)" in out and "dense-bias-tanh at %86" in out and ": limit" in out
    pattern = tmp_path / "gelu.py"
    pattern.write_text('from ir.dataflow_pattern import *\npattern = is_op("nn.relu")(wildcard())\n')
    assert main(["why", "bert", "--small", "--quiet", "--pattern", str(pattern), "--node", "86"]) == 0
    assert "the call is of tanh, not nn.relu [op]" in capsys.readouterr().out


@pytest.mark.parametrize("argv, words", [
    (["--rule", "dense-bais", "--node", "%3"], "did you mean dense-bias"),
    (["--rule", "dense-bias", "--node", "%999"], "no node %999"),
    (["--node", "%3"], "one of the arguments --rule --pattern is required"),
    (["--rule", "dense-bias", "--pattern", __file__, "--node", "%3"], "not allowed with"),
])
def test_cli_why_rejects_bad_input_in_one_line(argv, words, capsys):
    assert main(["why", "bert", "--small", "--quiet", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("text, words", [
    ("x = 1\n", "must define `pattern`"),
    ("pattern = 3\n", "`pattern` as a int"),
    ("raise ValueError('boom')\n", "cannot run"),
])
def test_cli_why_names_a_bad_pattern_file(tmp_path, capsys, text, words):
    path = tmp_path / "p.py"
    path.write_text(text)
    assert main(["why", "bert", "--small", "--quiet", "--pattern", str(path), "--node", "%3"]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
