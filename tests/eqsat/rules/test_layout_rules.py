"""The layout rules on a ResNet: the ort target extracts blocked regions that ONNX Runtime runs with the
original's outputs, blocked layouts never reach a graph input or output, and the cpu target keeps NCHW;
ReLU6 and grouped convolutions run blocked too."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import eqsat
import ir
from eqsat.optimize import saturate_program
from eqsat.rules.library import default_rules
from eqsat.rules.library import layout
from eqsat.rules.library.layout import block_size
from ir import relay
from ir.frontend import to_onnx
from ir.frontend.export_nchwc import NCHWC_DOMAIN
from ir.op.layout import BLOCKED_CONVS
from strategies.interpreter import evaluate
from strategies.kernels.nchwc import transform_layout
from tests.ir.frontend.ort_helpers import run_ort

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def resnet():
    mod, params = ir.models.get("resnet50", small=True)
    return mod, params, eqsat.optimize(mod, params, target="ort", rules="default+layout")


def _ops(mod: ir.IRModule) -> collections.Counter:
    return collections.Counter(n.op.name for n in ir.post_order(mod["main"]) if isinstance(n, ir.Call))


def test_ort_extracts_blocked_regions_that_run_in_ort(resnet):
    mod, params, res = resnet
    assert sum(_ops(res.mod)[name] for name in BLOCKED_CONVS) >= 40
    model = to_onnx(res.mod, res.params, contrib=True)
    nchwc = collections.Counter(n.op_type for n in model.graph.node if n.domain == NCHWC_DOMAIN)
    assert nchwc["Conv"] >= 50 and nchwc["MaxPool"] == nchwc["GlobalAveragePool"] == 1
    assert nchwc["ReorderOutput"] == 1 and nchwc["ReorderInput"] == 1  # the output's, and the block-size guard
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype("float32")
    want = evaluate(mod, {"data": x}, params)
    got = run_ort(model, {"data": x})[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())


def test_blocked_layouts_stay_inside(resnet):
    mod, _, res = resnet
    before, after = mod["main"], res.mod["main"]
    assert [p.checked_type for p in after.params if p.name_hint == "data"] == [before.params[0].checked_type]
    assert after.body.checked_type == before.body.checked_type
    uses = [n for n in ir.post_order(after) if isinstance(n, ir.Call) and any(a is after.params[0] for a in n.args)]
    assert all(n.op.name not in BLOCKED_CONVS or n.attrs.data_layout == "NCHW" for n in uses)


def test_cpu_keeps_nchw():
    mod, params = ir.models.get("resnet50", small=True)
    res = eqsat.optimize(mod, params, target="cpu", rules="default+layout")
    assert not {"layout_transform", *BLOCKED_CONVS} & set(_ops(res.mod))


def test_the_ort_target_lays_out_blocks_by_default_and_the_others_do_not():
    mod, params = ir.models.get("squeezenet", small=True)
    assert default_rules("ort") == "default+layout" and default_rules("cpu") == default_rules("cuda") == "default"
    assert sum(_ops(eqsat.optimize(mod, params, target="ort").mod)[name] for name in BLOCKED_CONVS) > 0
    assert not set(BLOCKED_CONVS) & set(_ops(eqsat.optimize(mod, params, target="ort", rules="default").mod))


def test_squeezenet_concatenates_blocked_branches_in_ort():
    mod, params = ir.models.get("squeezenet", small=True)
    res = eqsat.optimize(mod, params, target="ort", rules="default+layout")
    blocked_concats = [n for n in ir.post_order(res.mod["main"]) if isinstance(n, ir.Call)
                       and n.op.name == "concatenate" and len(n.checked_type.shape) == 5]
    assert blocked_concats
    model = to_onnx(res.mod, res.params, contrib=True)
    x = np.random.default_rng(1).standard_normal(mod["main"].params[0].checked_type.concrete_shape).astype("float32")
    want = evaluate(mod, {mod["main"].params[0].name_hint: x}, params)
    got = run_ort(model, {mod["main"].params[0].name_hint: x})[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())


def _conv_clip(data: ir.Expr, channels: int, seed: int, groups: int = 1) -> ir.Expr:
    """ReLU6(conv2d(data) + bias) on typed `data`."""
    rng = np.random.default_rng(seed)
    weight = relay.const(rng.standard_normal((channels, data.checked_type.shape[1] // groups, 3, 3)).astype("float32"))
    bias = relay.const(rng.standard_normal(channels).astype("float32"))
    return ir.infer_type(relay.clip(relay.nn.bias_add(relay.nn.conv2d(data, weight, padding=1, groups=groups), bias),
                                    0.0, 6.0))


def test_relu6_and_grouped_convolutions_run_blocked_in_ort():
    block = block_size()
    x = relay.var("x", shape=(1, 2 * block, 6, 6))
    body = _conv_clip(_conv_clip(ir.infer_type(x), 4 * block, 0, groups=2), 2 * block, 1)
    mod = ir.infer_type(ir.IRModule.from_expr(body))
    res = eqsat.optimize(mod, {}, target="ort", rules="default+layout")
    convs = [n for n in ir.post_order(res.mod["main"]) if isinstance(n, ir.Call) and n.op.name in BLOCKED_CONVS]
    assert [(n.attrs.groups, n.attrs.activation, n.attrs.a_max) for n in convs] == [(2, "clip", 6.0), (1, "clip", 6.0)]
    assert "clip" not in _ops(res.mod)
    inputs = {"x": np.random.default_rng(2).standard_normal((1, 2 * block, 6, 6)).astype("float32")}
    want = evaluate(mod, inputs)
    got = run_ort(to_onnx(res.mod, res.params, contrib=True), inputs)[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())


def test_a_squeeze_and_excitation_block_with_hard_swish_stays_blocked_in_ort():
    """MobileNet-v3's block: conv + hard swish, then a gate (global pool, 1x1 convs, hard sigmoid) multiplied
    over the image; the activations fuse into ONNX Runtime's NCHWc Conv and the gate's multiply broadcasts
    over the blocked image, so one reorder goes in and one comes out."""
    block = block_size()
    rng = np.random.default_rng(3)

    def conv(data, channels, kernel, activation):
        weight = relay.const(rng.standard_normal((channels, data.checked_type.shape[1], kernel, kernel))
                             .astype("float32") / kernel)
        bias = relay.const(rng.standard_normal(channels).astype("float32"))
        return ir.infer_type(activation(relay.nn.bias_add(relay.nn.conv2d(data, weight, padding=kernel // 2), bias)))
    x = ir.infer_type(relay.var("x", shape=(1, 2 * block, 6, 6)))
    image = conv(x, 2 * block, 3, relay.nn.hard_swish)
    squeezed = conv(ir.infer_type(relay.nn.global_avg_pool2d(image)), block, 1, relay.nn.relu)
    gate = conv(squeezed, 2 * block, 1, lambda y: relay.nn.hard_sigmoid(y, alpha=1 / 6, beta=0.5))
    mod = ir.infer_type(ir.IRModule.from_expr(relay.multiply(image, gate)))
    res = eqsat.optimize(mod, {}, target="ort", rules="default+layout")
    ops = _ops(res.mod)
    assert ops["layout_transform"] == 2 and not {"nn.hard_swish", "nn.hard_sigmoid", "nn.relu"} & set(ops)
    convs = [n for n in ir.post_order(res.mod["main"]) if isinstance(n, ir.Call) and n.op.name in BLOCKED_CONVS]
    assert sorted(n.attrs.activation for n in convs) == ["hard_sigmoid", "hard_swish", "relu"]
    model = to_onnx(res.mod, res.params, contrib=True)
    producer = {o: n for n in model.graph.node for o in n.output}
    (mul,) = [n for n in model.graph.node if n.op_type == "Mul"]  # the image as the Conv wrote it, the gate expanded
    assert sorted(producer[i].op_type for i in mul.input) == ["Conv", "Reshape"]
    assert {producer[i].op_type for i in producer[next(i for i in mul.input if producer[i].op_type == "Reshape")].input
            if i in producer} == {"Expand"}
    inputs = {"x": rng.standard_normal((1, 2 * block, 6, 6)).astype("float32")}
    want = evaluate(mod, inputs)
    np.testing.assert_allclose(run_ort(model, inputs)[0], want, rtol=0, atol=1e-4 * np.abs(want).max())


def test_a_channels_last_sandwich_reorders_straight_to_and_from_nhwc():
    """ConvNeXt's block: a blocked convolution, a transpose to NHWC for a layer norm over channels, and
    back into the next convolution: ONNX Runtime's reorders write and read NHWC, no Transpose runs."""
    block = block_size()
    rng = np.random.default_rng(4)
    x = relay.var("x", shape=(1, 2 * block, 5, 5))

    def conv(data, seed):
        weight = relay.const(np.random.default_rng(seed).standard_normal((2 * block, 2 * block, 3, 3))
                             .astype("float32") / 3)
        return relay.nn.conv2d(data, weight, padding=1)
    nhwc = relay.transpose(conv(x, 0), (0, 2, 3, 1))
    gamma, beta = (relay.const(rng.standard_normal(2 * block).astype("float32")) for _ in range(2))
    normed = relay.nn.layer_norm(nhwc, gamma, beta, axis=-1)
    mod = ir.infer_type(ir.IRModule.from_expr(conv(relay.transpose(normed, (0, 3, 1, 2)), 1)))
    res = eqsat.optimize(mod, {}, target="ort")
    assert "transpose" not in _ops(res.mod)
    model = to_onnx(res.mod, res.params, contrib=True)
    channels_last = {n.op_type for n in model.graph.node if n.op_type in ("ReorderInput", "ReorderOutput")
                     and any(a.name == "channels_last" and a.i == 1 for a in n.attribute)}
    assert "Transpose" not in {n.op_type for n in model.graph.node}
    assert channels_last == {"ReorderInput", "ReorderOutput"}
    inputs = {"x": rng.standard_normal((1, 2 * block, 5, 5)).astype("float32")}
    want = evaluate(mod, inputs)
    np.testing.assert_allclose(run_ort(model, inputs)[0], want, rtol=0, atol=1e-4 * np.abs(want).max())


def test_a_scaled_residual_stream_runs_in_nhwc_between_blocked_convolutions():
    """ConvNeXt's stage: a stem convolution starts the residual stream; each block's depthwise convolution
    reads it, a layer norm runs in NHWC, and the block's result is scaled per channel and added back in
    NCHW. The sums move to NHWC, so ONNX Runtime's reorders read and write the stream and no Transpose
    runs between the blocks."""
    block, rng = block_size(), np.random.default_rng(5)
    channels = 2 * block

    def constant(*shape):
        return relay.const((rng.standard_normal(shape) / 3).astype("float32"))
    x = relay.var("x", shape=(1, 3, 6, 6))
    stream = relay.nn.conv2d(x, constant(channels, 3, 3, 3), padding=1)
    for _ in range(3):
        mixed = relay.nn.conv2d(stream, constant(channels, 1, 3, 3), padding=1, groups=channels)
        normed = relay.nn.layer_norm(relay.transpose(mixed, (0, 2, 3, 1)), constant(channels), constant(channels))
        stream = relay.add(stream, relay.multiply(constant(channels, 1, 1), relay.transpose(normed, (0, 3, 1, 2))))
    mod = ir.infer_type(ir.IRModule.from_expr(relay.nn.relu(relay.nn.conv2d(stream, constant(channels, channels,
                                                                                             1, 1)))))
    res = eqsat.optimize(mod, {}, target="ort")
    model = to_onnx(res.mod, res.params, contrib=True)
    assert "Transpose" not in {n.op_type for n in model.graph.node}
    inputs = {"x": rng.standard_normal((1, 3, 6, 6)).astype("float32")}
    want = evaluate(mod, inputs)
    np.testing.assert_allclose(run_ort(model, inputs)[0], want, rtol=0, atol=1e-4 * np.abs(want).max())


def _dense_block(layers: int) -> ir.IRModule:
    """A stem convolution, then DenseNet's dense block: each layer is batch norm, ReLU and a 3x3
    convolution of the concatenation of every earlier feature map (a pre-activation batch norm no
    convolution precedes, and concatenations of up to `layers` + 1 parts)."""
    block, rng = block_size(), np.random.default_rng(3)
    stem = relay.const(rng.standard_normal((block, 3, 3, 3)).astype("float32"))
    features = [relay.nn.relu(relay.nn.conv2d(relay.var("x", shape=(1, 3, 6, 6)), stem, padding=1))]
    for i in range(layers):
        data = ir.infer_type(relay.concatenate(features, axis=1) if len(features) > 1 else features[0])
        channels = data.checked_type.shape[1]
        stats = [relay.const(rng.uniform(0.5, 1.5, channels).astype("float32")) for _ in range(4)]
        normed = relay.nn.relu(relay.nn.batch_norm(data, *stats)[0])
        weight = relay.const(rng.standard_normal((block, channels, 3, 3)).astype("float32"))
        features.append(relay.nn.conv2d(normed, weight, padding=1))
    return ir.infer_type(ir.IRModule.from_expr(relay.concatenate(features, axis=1)))


def test_a_dense_block_stays_blocked_through_its_long_concatenations_and_batch_norms():
    mod = _dense_block(7)  # concatenations of 2 to 8 parts: 7 and 8 over the rules' fixed arities
    res = eqsat.optimize(mod, {}, target="ort")
    transforms = [n for n in ir.post_order(res.mod["main"]) if isinstance(n, ir.Call)
                  and n.op.name == "layout_transform"]
    assert len(transforms) == 1  # out once (the stem's NCHWc convolution reads NCHW itself)
    assert "nn.batch_norm" not in _ops(res.mod) and "multiply" not in _ops(res.mod)  # depthwise 1x1 + ReLU
    model = to_onnx(res.mod, res.params, contrib=True)
    assert not [n for n in model.graph.node if n.op_type == "Reshape" and not n.output[0].startswith("NCHWc")]
    x = np.random.default_rng(4).standard_normal((1, 3, 6, 6)).astype("float32")
    want = evaluate(mod, {"x": x})
    np.testing.assert_allclose(run_ort(model, {"x": x})[0], want, rtol=0, atol=1e-4 * np.abs(want).max())


def test_a_per_channel_affine_over_no_channels_is_left_as_it_is():
    x = relay.var("x", shape=(1, 0, 5, 5))
    empty = relay.const(np.ones((0, 1, 1), "float32"))
    mod = ir.infer_type(ir.IRModule.from_expr(relay.add(relay.multiply(x, empty), empty)))
    res = eqsat.optimize(mod, {}, target="ort")
    assert res.report.applied_per_rule.get("channel-affine-to-nchwc", 0) == 0
    assert res.mod["main"].body.checked_type.concrete_shape == (1, 0, 5, 5)


def _shuffle_branch(channels: int, positive: bool = False) -> ir.IRModule:
    """ShuffleNet-v2's branch: 1x1 conv + ReLU, depthwise 3x3 conv + bias, 1x1 conv + ReLU (`positive`:
    with positive weights and biases, so an infinity in the input stays one through every layer)."""
    rng = np.random.default_rng(6)
    sign = np.abs if positive else np.asarray

    def conv(data, kernel, groups, act):
        weight = relay.const(sign(rng.standard_normal((channels, channels // groups, kernel, kernel)))
                             .astype("float32") / 3)
        bias = relay.const(sign(rng.standard_normal(channels)).astype("float32"))
        return act(relay.nn.bias_add(relay.nn.conv2d(data, weight, padding=kernel // 2, groups=groups), bias))
    x = relay.var("x", shape=(1, channels, 14, 14))
    body = conv(conv(conv(x, 1, 1, relay.nn.relu), 3, channels, lambda y: y), 1, 1, relay.nn.relu)
    return ir.infer_type(ir.IRModule.from_expr(body))


def test_channels_that_are_not_whole_blocks_run_padded_and_the_depthwise_layer_reads_the_padding():
    """ShuffleNet's 116 channels: the convolutions run blocked with their channels padded to whole
    blocks (ReorderInput pads, ReorderOutput crops: no Pad or Slice node), the depthwise layer reads the
    padded output of the layer before it directly, and the outputs are the original's in ONNX Runtime."""
    channels = 116
    mod = _shuffle_branch(channels)
    res = eqsat.optimize(mod, {}, target="ort")
    convs = [n for n in ir.post_order(res.mod["main"]) if isinstance(n, ir.Call) and n.op.name in BLOCKED_CONVS]
    assert len(convs) >= 2 and {n.attrs.channels for n in convs} == {-(-channels // block_size()) * block_size()}
    (depthwise,) = [n for n in convs if n.attrs.groups > 1]
    assert isinstance(depthwise.args[0], ir.Call) and depthwise.args[0].op.name in BLOCKED_CONVS
    model = to_onnx(res.mod, res.params, contrib=True)
    assert not {"Pad", "Slice"} & {n.op_type for n in model.graph.node}
    assert {a.i for n in model.graph.node if n.op_type == "ReorderOutput" for a in n.attribute
            if a.name == "channels"} == {channels}
    x = np.random.default_rng(7).standard_normal((1, channels, 14, 14)).astype("float32")
    want = evaluate(mod, {"x": x})
    np.testing.assert_allclose(run_ort(model, {"x": x})[0], want, rtol=0, atol=1e-4 * np.abs(want).max())


def test_a_full_convolution_never_reads_padding_it_did_not_zero():
    """Padding channels a convolution wrote are zero only for finite inputs (0 * inf is NaN), so a layer
    that sums over channels reads data padded afresh, and an infinity stays one (ONNX Runtime's own
    layout pass turns this branch's infinities into NaN); only a depthwise layer reads them as they are."""
    channels = 116
    mod = _shuffle_branch(channels, positive=True)
    res = eqsat.optimize(mod, {}, target="ort")
    for conv in (n for n in ir.post_order(res.mod["main"]) if isinstance(n, ir.Call) and n.op.name in BLOCKED_CONVS
                 and n.attrs.groups == 1):
        data = conv.args[0]
        assert data.op.name == "layout_transform" and data.args[0].op.name == "nn.pad", conv.op.name
    x = np.full((1, channels, 14, 14), 1.0, "float32")
    x[0, 0, 7, 7] = np.inf
    want = evaluate(mod, {"x": x})
    assert np.isinf(want).any() and not np.isnan(want).any()
    for got in (evaluate(res.mod, {"x": x}, res.params), run_ort(to_onnx(res.mod, res.params, contrib=True), {"x": x})[0]):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])


def test_a_channel_affine_folded_and_one_kept_as_a_blocked_affine_meet_in_one_class():
    """relu(conv(x) * s + t) has two blocked forms: the convolution with the scale folded in, and the
    plain-weight convolution then the affine as a depthwise 1x1 convolution. Both reach the same
    plain class; the round trip through it puts them in one blocked class, so whatever reads the
    blocked value can read the cheaper form (in Inception-v3, a blocked concatenation built on the
    second form kept four extra depthwise layers, before its batch norms folded by one path only)."""
    channels = 2 * block_size()
    rng = np.random.default_rng(0)
    conv = relay.nn.conv2d(relay.var("x", shape=(1, channels, 6, 6)),
                           relay.const(rng.standard_normal((channels, channels, 1, 3)).astype("float32")),
                           padding=(0, 1, 0, 1))
    scale, shift = (relay.const((rng.random((channels, 1, 1)) + 0.5).astype("float32")) for _ in range(2))
    mod = ir.IRModule.from_expr(relay.nn.relu(conv * scale + shift))
    view = saturate_program(mod, rules=default_rules("ort")).view

    def blocked(n: int) -> bool:
        return view.nodes[n].op == "nn.contrib_conv2d_NCHWc_bias_act" and view.nodes[n].attrs.activation == "relu"
    affine = {view.nodes[n].eclass for n in range(len(view.nodes)) if blocked(n) and view.nodes[n].attrs.groups > 1}
    folded = {view.nodes[n].eclass for n in range(len(view.nodes)) if blocked(n) and view.nodes[n].attrs.groups == 1}
    assert affine and affine <= folded


def test_each_weight_is_blocked_once_for_the_plain_and_the_fused_convolution(monkeypatch):
    """relu(conv(x) + b): the plain convolution's rule and the fused one's block the same weight; the
    blocked weight is made once (one array, digested once), not once per rule."""
    made = []
    monkeypatch.setattr(layout, "transform_layout", lambda data, *args: made.append(args) or transform_layout(data, *args))
    channels = 2 * block_size()
    rng = np.random.default_rng(2)
    weight = relay.const(rng.standard_normal((channels, channels, 3, 3)).astype("float32"))
    conv = relay.nn.conv2d(relay.var("x", shape=(1, channels, 6, 6)), weight, padding=(1, 1))
    mod = ir.IRModule.from_expr(relay.nn.relu(relay.nn.bias_add(conv, relay.const(np.ones(channels, "float32")))))
    sat = saturate_program(mod, rules=default_rules("ort"))
    blocked = [c for c in sat.lowered.egraph.constants.values() if c.data.ndim == 6]
    assert len(blocked) == 1 and made.count(("OIHW", f"OIHW{block_size()}i{block_size()}o")) == 1
    applied = sat.report.applied_per_rule
    assert applied.get("conv2d-to-nchwc", 0) >= 1 and applied.get("conv2d-bias-act-to-nchwc", 0) >= 1
