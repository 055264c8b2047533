"""The zoo emits TVM's standard Relay forms, so fusion patterns and rewrite rules find them."""

from __future__ import annotations

from collections import Counter

import pytest

import ir
from ir.expr import Call, TupleGetItem
from ir.visitor import post_order


def _calls(mod: ir.IRModule) -> list[Call]:
    return [n for n in post_order(mod["main"].body) if isinstance(n, Call)]


def _op_counts(mod: ir.IRModule) -> Counter:
    return Counter(c.op.name for c in _calls(mod))


def _is(expr, op_name: str) -> bool:
    return isinstance(expr, Call) and expr.op.name == op_name


def _conv_bn_chains(mod: ir.IRModule, act: str) -> int:
    """How many `act(TupleGetItem(batch_norm(conv2d(..)), 0))` chains the graph has."""
    count = 0
    for call in _calls(mod):
        item = call.args[0] if call.op.name == act else None
        if isinstance(item, TupleGetItem) and item.index == 0 and _is(item.tuple_value, "nn.batch_norm"):
            count += _is(item.tuple_value.args[0], "nn.conv2d")
    return count


def test_resnet50_blocks():
    mod, _ = ir.models.resnet50(weights=False)
    ops = _op_counts(mod)
    assert ops["nn.conv2d"] == ops["nn.batch_norm"] == 1 + 16 * 3 + 4  # stem, 3 per block, 4 projections
    assert _conv_bn_chains(mod, "nn.relu") == 1 + 16 * 2
    assert ops["add"] == 16
    assert sum(1 for c in _calls(mod) if c.op.name == "nn.relu" and _is(c.args[0], "add")) == 16


def test_resnext50_uses_32_groups():
    mod, _ = ir.models.resnext50(weights=False)
    grouped = [c for c in _calls(mod) if c.op.name == "nn.conv2d" and c.attrs.groups > 1]
    assert len(grouped) == 16 and all(c.attrs.groups == 32 for c in grouped)


def test_mobilenet_v2_uses_relu6_as_clip_and_depthwise_convs():
    mod, _ = ir.models.mobilenet_v2(weights=False)
    assert _conv_bn_chains(mod, "clip") == 1 + 16 + 17 + 1  # stem, expansions, depthwise, last
    clips = [c for c in _calls(mod) if c.op.name == "clip"]
    assert all((c.attrs.a_min, c.attrs.a_max) == (0.0, 6.0) for c in clips)
    depthwise = [c for c in _calls(mod) if c.op.name == "nn.conv2d" and c.attrs.groups > 1]
    assert len(depthwise) == 17
    assert all(c.attrs.groups == c.args[1].type_annotation.shape[0] for c in depthwise)
    assert _op_counts(mod)["add"] == 10  # residual connections


@pytest.mark.parametrize("name", ["resnet50", "resnext50", "inception_v3", "mobilenet_v2", "nasneta"])
def test_cnn_ends_in_pool_flatten_dense_bias(name):
    mod, _ = ir.models.get(name, small=True, weights=False)
    body = mod["main"].body
    assert _is(body, "nn.bias_add") and _is(body.args[0], "nn.dense")
    flat = body.args[0].args[0]
    assert _is(flat, "nn.batch_flatten") and _is(flat.args[0], "nn.global_avg_pool2d")


def test_vgg19_convs_and_dense_layers_have_bias():
    mod, _ = ir.models.vgg19(weights=False)
    ops = _op_counts(mod)
    assert ops["nn.conv2d"] == 16 and ops["nn.dense"] == 3 and ops["nn.bias_add"] == 19
    assert ops["nn.max_pool2d"] == 5 and ops["nn.batch_flatten"] == 1
    relus = [c for c in _calls(mod) if c.op.name == "nn.relu"]
    assert len(relus) == 18 and all(_is(r.args[0], "nn.bias_add") for r in relus)


def test_squeezenet_classifier_is_a_convolution():
    mod, _ = ir.models.squeezenet(weights=False)
    body = mod["main"].body
    assert _is(body, "nn.batch_flatten") and _is(body.args[0], "nn.global_avg_pool2d")
    assert _is(body.args[0].args[0], "nn.relu")
    ops = _op_counts(mod)
    assert ops["concatenate"] == 8 and ops["nn.conv2d"] == 1 + 8 * 3 + 1


def test_inception_v3_blocks():
    mod, _ = ir.models.inception_v3(weights=False)
    ops = _op_counts(mod)
    assert ops["nn.conv2d"] == ops["nn.batch_norm"] == 94  # torchvision's BasicConv2d count without AuxLogits
    assert _conv_bn_chains(mod, "nn.relu") == 94
    assert ops["concatenate"] == 11 + 4  # one per block, plus two inner ones in each InceptionE
    pools = [c for c in _calls(mod) if c.op.name == "nn.avg_pool2d"]
    assert len(pools) == 9 and all(p.attrs.count_include_pad for p in pools)


def test_bert_layer_structure():
    layers = 3
    mod, _ = ir.models.bert(layers=layers, hidden=32, heads=4, seq_len=8, vocab=50, weights=False)
    ops = _op_counts(mod)
    assert ops["take"] == 3
    assert ops["nn.layer_norm"] == 1 + 2 * layers
    assert ops["nn.batch_matmul"] == 2 * layers
    assert ops["nn.softmax"] == layers and ops["erf"] == layers
    assert ops["nn.dense"] == ops["nn.bias_add"] == 6 * layers + 1
    assert ops["transpose"] == 4 * layers
    assert ops["tanh"] == 1
    dense_args = [c.args[0] for c in _calls(mod) if c.op.name == "nn.bias_add"]
    assert all(_is(d, "nn.dense") for d in dense_args)
    assert isinstance(mod["main"].body, ir.Tuple)
    for ids in mod["main"].params[:2]:
        assert ids.type_annotation.dtype == "int32"


def test_bert_gelu_is_the_erf_formula():
    mod, _ = ir.models.bert(layers=1, hidden=16, heads=2, seq_len=4, vocab=10, weights=False)
    erf = next(c for c in _calls(mod) if c.op.name == "erf")
    scaled = erf.args[0]
    assert _is(scaled, "multiply")
    assert float(scaled.args[1].data) == pytest.approx(2 ** -0.5)
    uses = [c for c in _calls(mod) if any(a is erf for a in c.args)]
    assert len(uses) == 1 and _is(uses[0], "add") and float(uses[0].args[0].data) == 1.0
    product = next(c for c in _calls(mod) if c.op.name == "multiply" and uses[0] in c.args)
    half_x = product.args[0]
    assert _is(half_x, "multiply") and float(half_x.args[0].data) == 0.5
    assert half_x.args[1] is scaled.args[0]  # the same x feeds both sides


def test_nasrnn_cell_structure():
    mod, _ = ir.models.nasrnn(seq_len=2, hidden=8, weights=False)
    ops = _op_counts(mod)
    assert ops["nn.dense"] == 2 * 16 and ops["nn.bias_add"] == 0
    assert ops["add"] == 2 * (8 + 3) and ops["multiply"] == 2 * 4
    assert ops["tanh"] == 2 * 8 and ops["sigmoid"] == 2 * 5 and ops["nn.relu"] == 2 * 2


def test_nasneta_cells():
    mod, _ = ir.models.nasneta(layers=2, width=0.125, num_classes=None, weights=False)
    ops = _op_counts(mod)
    cells = 3 * (2 + 1)
    assert ops["concatenate"] == cells
    depthwise = [c for c in _calls(mod) if c.op.name == "nn.conv2d" and c.attrs.groups > 1]
    assert len(depthwise) == 3 * (2 * 5 + 5)
    assert ops["nn.conv2d"] == 1 + 2 * cells + 2 * len(depthwise)
    assert ops["nn.batch_norm"] == 0 and ops["nn.bias_add"] == 0
