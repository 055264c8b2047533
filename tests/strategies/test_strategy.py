"""Targets, generic functions, specialized conditions, strategies and the selection rules."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay
from strategies import (ConfigSpace, GenericFunc, InputDim, OpStrategy, SpecializedCondition, Target, build,
                        generic_func, register_strategy, select_implementation)
from strategies.errors import NoImplementationError, TargetError
from strategies.records import TuningHistory, TuningRecord
from strategies.registry import op_strategy, register_injective_schedule
from strategies.workload import Workload


def noop_compute(attrs, inputs, out_type, config):
    return inputs[0]


def noop_schedule(attrs, in_types, out_type, target):
    return ConfigSpace()


# -- targets ------------------------------------------------------------------------------------
def test_shipped_targets_have_keys_ending_in_generic():
    assert Target("cpu").keys == ("cpu", "generic")
    assert Target("cuda").keys == ("cuda", "gpu", "generic")
    assert Target("ort").keys == ("ort", "cpu", "generic")
    assert Target("llvm") == Target("cpu")
    custom = Target("mytarget", keys=("mytarget",))
    assert custom.keys == ("mytarget", "generic") and custom.device == "cpu"


def test_unknown_target_names_the_known_ones():
    with pytest.raises(TargetError, match="unknown target 'tpu'.*'cpu', 'cuda', 'ort'"):
        Target("tpu")


def test_current_target_nests_and_restores():
    assert Target.current() is None
    with Target("cpu") as cpu:
        assert Target.current() is cpu
        with Target("cuda"):
            assert Target.current().kind == "cuda"
        assert Target.current() is cpu
    assert Target.current() is None
    with pytest.raises(TargetError, match="no target is current"):
        Target.current(allow_none=False)


# -- generic functions --------------------------------------------------------------------------
def test_generic_func_dispatches_on_the_first_matching_key():
    @generic_func
    def pick(x):
        return f"generic {x}"

    @pick.register(["cuda", "gpu"])
    def pick_gpu(x):
        return f"gpu {x}"

    with Target("cuda"):
        assert pick(1) == "gpu 1"
    with Target("cpu"):
        assert pick(2) == "generic 2"
    with Target("mygpu", keys=("mygpu", "gpu")):
        assert pick(3) == "gpu 3"
    assert pick.dispatch("cpu") == (pick.default, "generic")


def test_generic_func_rejects_double_registration_unless_overridden():
    f = GenericFunc("f", lambda: 0)
    f.register("cpu", lambda: 1)
    with pytest.raises(ValueError, match="already has a variant for key 'cpu'"):
        f.register("cpu", lambda: 2)
    f.register("cpu", lambda: 3, override=True)
    with Target("cpu"):
        assert f() == 3


def test_generic_func_without_default_names_the_target():
    f = GenericFunc("only_gpu")
    f.register("gpu", lambda: 1)
    with Target("cpu"), pytest.raises(NoImplementationError, match="only_gpu has no variant for target cpu"):
        f()


# -- specialized conditions ---------------------------------------------------------------------
def test_condition_is_cnf_over_shapes_and_undecided_while_symbolic():
    rows, cols = InputDim(0, 0), InputDim(0, -1)
    cond = SpecializedCondition([rows > 16, (cols % 8 == 0) | (cols < 4)])
    assert cond.decide([(32, 16)]) is True
    assert cond.decide([(32, 3)]) is True
    assert cond.decide([(32, 12)]) is False      # second clause: neither predicate holds
    assert cond.decide([(8, 16)]) is False       # first clause fails
    n = ir.SizeVar("n")
    assert cond.decide([(n, 16)]) is None        # rows unknown
    assert cond.decide([(n, 12)]) is False       # the second clause already fails
    assert str(cond) == "(in0.shape[0] > 16) and ((in0.shape[-1] % 8) == 0 or in0.shape[-1] < 4)"


def test_condition_arithmetic_over_several_inputs():
    cond = SpecializedCondition(InputDim(0, 0) * InputDim(1, 1) + 1 >= 10)
    assert cond.decide([(3, 1), (1, 3)]) is True
    assert cond.decide([(2, 1), (1, 4)]) is False


def test_strategy_groups_implementations_by_condition():
    strategy = OpStrategy()
    strategy.add_implementation(noop_compute, noop_schedule, "always", plevel=10)
    with SpecializedCondition(InputDim(0, 0) >= 64):
        strategy.add_implementation(noop_compute, noop_schedule, "large_a", plevel=15)
        strategy.add_implementation(noop_compute, noop_schedule, "large_b", plevel=5)
    assert SpecializedCondition.current() is None
    assert [len(s.implementations) for s in strategy.specializations] == [1, 2]
    valid, undecided = strategy.applicable([(128, 4)])
    assert [i.name for i in valid] == ["always", "large_a", "large_b"] and not undecided
    valid, undecided = strategy.applicable([(ir.SizeVar("m"), 4)])
    assert [i.name for i in valid] == ["always"] and [i.name for i in undecided] == ["large_a", "large_b"]
    with pytest.raises(ValueError, match="'always' is used twice"):
        strategy.add_implementation(noop_compute, noop_schedule, "always")


def test_config_space_enumerates_deterministically_default_first():
    space = ConfigSpace(tile=(64, 32), order=("ij", "ji"))
    assert space.default() == {"order": "ij", "tile": 64}
    assert list(space.configs())[0] == space.default()
    assert space.size == 4 and len(list(space.configs())) == 4
    assert {"order": "ji", "tile": 32} in space and {"tile": 16, "order": "ij"} not in space
    assert list(ConfigSpace().configs()) == [{}]


# -- selection ----------------------------------------------------------------------------------
def dense_workload(rows: int) -> Workload:
    call = relay.nn.dense(relay.var("x", shape=(rows, 32)), relay.var("w", shape=(16, 32)))
    ir.infer_type(call)
    return Workload.of_call(call)


def test_selection_takes_the_highest_plevel_whose_condition_holds():
    small, large = dense_workload(8), dense_workload(512)
    assert select_implementation(small, "cpu").implementation.name == "dense_gemm.cpu"
    names = select_implementation(large, "cpu").candidates
    assert "dense_blocked.cpu" in names and "dense_blocked.cpu" not in select_implementation(small, "cpu").candidates
    chosen = select_implementation(small, "cpu")
    assert chosen.reason == "plevel" and chosen.config == {}


def test_selection_prefers_the_best_tuned_record():
    workload = dense_workload(8)
    history = TuningHistory([
        TuningRecord("cpu", workload.key, "nn.dense", "dense_einsum.cpu", {}, (5.0, 5.0)),
        TuningRecord("cpu", workload.key, "nn.dense", "dense_gemm.cpu", {}, (9.0,)),
        TuningRecord("cpu", workload.key, "nn.dense", "dense_gemm.cpu", {}, (1.0,), error=1),  # failed: ignored
    ])
    chosen = select_implementation(workload, "cpu", history)
    assert (chosen.implementation.name, chosen.reason, chosen.measured_us) == ("dense_einsum.cpu", "tuned", 5.0)


def test_fused_contrib_forms_are_legal_only_where_the_keys_say_so():
    x, b = relay.var("x", shape=(2, 8)), relay.var("b", shape=(8,))
    call = relay.nn.bias_gelu(x, b)
    ir.infer_type(call)
    workload = Workload.of_call(call)
    with pytest.raises(NoImplementationError, match="nn.bias_gelu has no implementation for target cpu"):
        select_implementation(workload, "cpu")
    assert select_implementation(workload, "ort").implementation.name == "bias_gelu.ort"
    assert select_implementation(workload, "cuda").implementation.name == "nn.bias_gelu.cuda"


def test_custom_target_falls_back_to_generic():
    workload = dense_workload(8)
    choice = op_strategy("nn.dense", workload.attrs, workload.in_types, workload.out_type,
                         Target("mytarget", keys=("mytarget",)))
    assert choice.fallback and choice.key == "generic"
    chosen = select_implementation(workload, Target("mytarget", keys=("mytarget",)))
    assert chosen.reason == "fallback" and chosen.implementation.name == "nn.dense.reference"
    assert not op_strategy("nn.dense", workload.attrs, workload.in_types, workload.out_type, "cpu").fallback


@pytest.fixture
def restore_strategy():
    op = ir.get_op("nn.relu")
    saved = op.get_attr("FTVMStrategy")
    yield op
    op.set_attr("FTVMStrategy", saved)


def test_register_strategy_replaces_only_with_override(restore_strategy):
    with pytest.raises(ValueError, match="nn.relu already has a strategy"):
        register_strategy("nn.relu", lambda *a: OpStrategy())

    def doubled(attrs, in_types, out_type, target):
        s = OpStrategy()
        s.add_implementation(lambda attrs, xs, out_type, config: xs[0] * 2, noop_schedule, "relu_doubled")
        return s

    register_strategy("nn.relu", doubled, override=True)
    call = relay.nn.relu(relay.var("x", shape=(3,)))
    np.testing.assert_array_equal(build(call, "cpu").run(x=np.ones(3, "float32")), [2, 2, 2])


def test_register_injective_schedule_uses_the_op_compute(restore_strategy):
    register_injective_schedule("nn.relu", override=True)
    call = relay.nn.relu(relay.var("x", shape=(3,)))
    ir.infer_type(call)
    impl = select_implementation(Workload.of_call(call), "cpu").implementation
    assert impl.name == "nn.relu.schedule_injective.generic"
    np.testing.assert_array_equal(impl.compute(call.attrs, [np.array([-1.0, 2.0, -3.0])], call.checked_type, {}),
                                  [0, 2, 0])
