"""`CostModel`: per-call costs without IR, legality, constants, sharing, tuned latencies, per-target preferences."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ir
from ir import relay
from ir.types import TensorType
from strategies import CostModel, Target
from strategies.ort_timing import nchwc_block_size
from strategies.records import TuningRecord
from strategies.workload import Workload

T = TensorType


def test_node_cost_needs_no_ir_and_is_deterministic():
    args = ("nn.conv2d", {"padding": (1, 1)}, [T((1, 64, 56, 56)), T((64, 64, 3, 3))], T((1, 64, 56, 56)))
    first, second = CostModel("cpu").node_cost(*args), CostModel("cpu").node_cost(*args)
    assert 0 < first < math.inf and first == second
    assert CostModel("cuda").node_cost(*args) < first  # microseconds on a GPU roofline


@pytest.mark.parametrize("op, attrs, in_types, out_type, legal_on", [
    ("nn.bias_gelu", {}, [T((2, 8)), T((8,))], T((2, 8)), {"ort", "cuda"}),
    ("nn.skip_layer_norm", {}, [T((2, 8)), T((2, 8)), T((8,)), T((8,))], T((2, 8)), {"ort", "cuda"}),
    ("nn.fused_matmul", {"alpha": 2.0}, [T((2, 4)), T((4, 3))], T((2, 3)), {"ort", "cuda"}),
    ("nn.feed_forward", {}, [T((2, 4)), T((8, 4)), T((8,)), T((4, 8)), T((4,))], T((2, 4)), {"ort", "cuda"}),
    ("nn.conv2d_bias_act", {"activation": "relu"}, [T((1, 4, 6, 6)), T((8, 4, 1, 1)), T((8,))], T((1, 8, 6, 6)),
     {"cpu", "ort", "cuda"}),
    ("nn.dense", {}, [T((2, 4)), T((3, 4))], T((2, 3)), {"cpu", "ort", "cuda", "mytarget"}),
])
def test_legality_is_a_hard_constraint(op, attrs, in_types, out_type, legal_on):
    for target in ("cpu", "ort", "cuda", Target("mytarget", keys=("mytarget",))):
        model = CostModel(target)
        cost = model.node_cost(op, attrs, in_types, out_type)
        legal = str(model.target) in legal_on
        assert (cost < math.inf) == legal == model.is_legal(op, attrs, in_types, out_type), (op, str(target))


def test_constant_only_subgraphs_cost_nothing_and_shared_nodes_count_once():
    x = relay.var("x", shape=(8, 16))
    folded_weight = relay.transpose(relay.const(np.ones((16, 4), "float32")))
    dense = relay.nn.dense(x, folded_weight)
    model = CostModel("cpu")
    assert model.cost(folded_weight) == 0.0
    assert model.program_cost(dense) == pytest.approx(model.cost(dense))
    shared = relay.nn.relu(x)
    twice = relay.add(shared, shared)
    assert model.program_cost(twice) == pytest.approx(model.cost(shared) + model.cost(twice))
    assert sum(model.breakdown(twice).values()) == pytest.approx(model.program_cost(twice))


def test_tuned_latency_replaces_the_estimate_for_its_target_only():
    call = relay.nn.dense(relay.var("x", shape=(8, 16)), relay.var("w", shape=(4, 16)))
    ir.infer_type(call)
    key = Workload.of_call(call).key
    log = [TuningRecord("cpu", key, "nn.dense", "dense_einsum.cpu", {}, (42.0, 40.0, 44.0))]
    assert CostModel("cpu", log=log).cost(call) == 42.0
    assert CostModel("cpu", log=log).implementation("nn.dense", call.attrs, [a.checked_type for a in call.args],
                                                    call.checked_type) == "dense_einsum.cpu"
    assert CostModel("cpu").cost(call) != 42.0
    assert CostModel("cuda", log=log).cost(call) == CostModel("cuda").cost(call)


def test_symbolic_dimensions_get_an_assumed_size():
    n = ir.SizeVar("n")
    small = CostModel("cpu", assumed_dim=4).node_cost("nn.dense", {}, [T((n, 64)), T((64, 64))], T((n, 64)))
    large = CostModel("cpu", assumed_dim=4096).node_cost("nn.dense", {}, [T((n, 64)), T((64, 64))], T((n, 64)))
    assert 0 < small < large < math.inf


def test_targets_prefer_different_programs():
    """Three parallel convolutions vs one merged convolution and a split (TASO's kernel enlarging):
    the merge multiplies the 1x1 branch's FLOPs by 9 but starts one kernel instead of three."""
    x = relay.var("x", shape=(1, 64, 28, 28))
    ws = [relay.var(f"w{i}", shape=(32, 64, k, k)) for i, k in enumerate((1, 3, 3))]
    separate = relay.Tuple([relay.nn.conv2d(x, ws[0]), relay.nn.conv2d(x, ws[1], padding=1),
                            relay.nn.conv2d(x, ws[2], padding=1)])
    merged = relay.split(relay.nn.conv2d(x, relay.var("w", shape=(96, 64, 3, 3)), padding=1), 3, axis=1)
    cpu, cuda = CostModel("cpu"), CostModel("cuda")
    assert cpu.program_cost(separate) < cpu.program_cost(merged)
    assert cuda.program_cost(merged) < cuda.program_cost(separate)


def test_fusion_pays_more_on_cuda():
    x, w, b = relay.var("x", shape=(1, 64, 28, 28)), relay.var("w", shape=(32, 64, 3, 3)), relay.var("b", shape=(32,))
    unfused = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=1), b))
    fused = relay.nn.conv2d_bias_act(x, w, b, padding=1, activation="relu")
    gain = {t: CostModel(t).program_cost(unfused) / CostModel(t).program_cost(fused) for t in ("cpu", "cuda")}
    assert 1.0 < gain["cpu"] < gain["cuda"]


def test_a_symbolic_dimension_costs_as_its_expression_at_the_assumed_size():
    from ir.types import SizeVar
    from strategies.work import ASSUMED_DIM, numel
    n = SizeVar("N")
    assert numel(ir.TensorType((n * 4, 3), "float32")) == ASSUMED_DIM * 4 * 3


def test_the_feed_forward_block_costs_less_than_its_three_ops_on_ort():
    """Its hidden values stay inside, so the ort target extracts it where a rule made it."""
    model = CostModel("ort")
    x, w1, b1, w2, b2, hidden = T((128, 768)), T((3072, 768)), T((3072,)), T((768, 3072)), T((768,)), T((128, 3072))
    fused = model.node_cost("nn.feed_forward", {}, [x, w1, b1, w2, b2], x)
    dense = {"units": None, "out_dtype": "", "activation": "none", "alpha": 0.01}
    parts = (model.node_cost("nn.dense_bias_act", dense, [x, w1, b1], hidden)
             + model.node_cost("nn.gelu", {"approximate": "none"}, [hidden], hidden)
             + model.node_cost("nn.dense_bias_act", dense, [hidden, w2, b2], x))
    assert fused < parts


def test_the_channel_padding_and_crop_of_onnx_runtime_s_reorders_cost_nothing_on_ort():
    """A zero pad of channels to whole blocks (ReorderInput pads so) and a crop back (ReorderOutput crops
    so) are free on ort where a reorder does them, and priced as copies elsewhere; other pads and slices
    keep their price."""
    block = nchwc_block_size()
    if block is None:
        pytest.skip("ONNX Runtime's NCHWc kernels are not available")
    plain, padded = TensorType((1, block + 4, 14, 14)), TensorType((1, 2 * block, 14, 14))
    pad = {"pad_width": ((0, 0), (0, block - 4), (0, 0), (0, 0))}
    crop = {"begin": [0], "end": [block + 4], "axes": [1]}
    ort, cpu = CostModel("ort"), CostModel("cpu")
    assert ort.node_cost("nn.pad", pad, [plain], padded) == 0 < cpu.node_cost("nn.pad", pad, [plain], padded)
    assert ort.node_cost("strided_slice", crop, [padded], plain) == 0 < cpu.node_cost("strided_slice", crop, [padded],
                                                                                       plain)
    wider = {"pad_width": ((0, 0), (0, 2 * block - 4), (0, 0), (0, 0))}
    assert ort.node_cost("nn.pad", wider, [plain], TensorType((1, 3 * block, 14, 14))) > 0
    half = {"begin": [0], "end": [block], "axes": [1]}
    assert ort.node_cost("strided_slice", half, [padded], TensorType((1, block, 14, 14))) > 0


def test_onnx_runtime_s_reorders_cost_less_than_a_copy_and_its_plain_convolutions_more_than_the_cpu_s():
    block = nchwc_block_size()
    if block is None:
        pytest.skip("ONNX Runtime's NCHWc kernels are not available")
    plain, blocked = TensorType((1, 8 * block, 28, 28)), TensorType((1, 8, 28, 28, block))
    reorder = {"src_layout": "NCHW", "dst_layout": f"NCHW{block}c"}
    ort, cpu = CostModel("ort"), CostModel("cpu")
    assert ort.node_cost("layout_transform", reorder, [plain], blocked) < cpu.node_cost("layout_transform", reorder,
                                                                                      [plain], blocked) * 0.6
    conv = (plain, TensorType((8 * block, 8 * block, 1, 1)))
    assert ort.node_cost("nn.conv2d", {}, conv, plain) > cpu.node_cost("nn.conv2d", {}, conv, plain)
