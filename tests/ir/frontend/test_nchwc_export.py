"""Blocked regions exported as ONNX Runtime's NCHWc kernels (and as standard ONNX) run in ONNX Runtime
with the reference interpreter's outputs; a program blocked for another machine's block size is refused."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import relay
from ir.frontend import to_onnx
from ir.frontend.errors import FrontendError
from ir.frontend import export_nchwc
from ir.frontend.export_nchwc import NCHWC_DOMAIN, ort_nchwc_block_size
from strategies.interpreter import evaluate
from strategies.kernels.nchwc import transform_layout
from tests.ir.frontend.ort_helpers import run_ort

pytest.importorskip("onnxruntime")
BLOCK = ort_nchwc_block_size()
RNG = np.random.default_rng(5)


def _region(form: str, block: int) -> tuple[ir.IRModule, dict[str, np.ndarray]]:
    """NCHW in, a blocked convolution (with bias, an activation and a residual sum where the form has them), NCHW out."""
    blocked = f"NCHW{block}c"
    in_c, groups, kernel = {"blocked": (2 * block, 1, f"OIHW{block}i{block}o"), "first-layer": (3, 1, f"OIHW{block}o"),
                            "depthwise": (2 * block, 2 * block, f"OIHW1i{block}o"),
                            "grouped": (2 * block, 2, f"OIHW{block}i{block}o"),
                            "hard-sigmoid": (2 * block, 1, f"OIHW{block}i{block}o"),
                            "hard-swish": (2 * block, 1, f"OIHW{block}i{block}o")}[form]
    out_c = 2 * block
    x = relay.var("x", shape=(2, in_c, 9, 7))
    weight = RNG.standard_normal((out_c, in_c // groups, 3, 3)).astype("float32")
    data = x if form == "first-layer" else relay.layout_transform(x, "NCHW", blocked)
    attrs = dict(padding=(1, 0, 1, 2), strides=2, groups=groups, kernel_layout=kernel, out_layout=blocked,
                 data_layout="NCHW" if form == "first-layer" else blocked)
    w = relay.const(transform_layout(weight, "OIHW", kernel))
    b = relay.const(RNG.standard_normal(out_c).astype("float32"))
    if form == "blocked":
        s = relay.var("s", shape=(2, out_c, 5, 4))
        conv = relay.nn.contrib_conv2d_NCHWc_bias_sum_act(data, w, b, relay.layout_transform(s, "NCHW", blocked),
                                                          activation="relu", **attrs)
    elif form == "first-layer":
        conv = relay.nn.contrib_conv2d_NCHWc_bias_act(data, w, b, activation="leaky_relu", alpha=0.1, **attrs)
    elif form == "hard-sigmoid":
        conv = relay.nn.contrib_conv2d_NCHWc_bias_act(data, w, b, activation="hard_sigmoid", alpha=0.25, beta=0.375,
                                                      **attrs)
    elif form == "hard-swish":
        s = relay.var("s", shape=(2, out_c, 5, 4))
        conv = relay.nn.contrib_conv2d_NCHWc_bias_sum_act(data, w, b, relay.layout_transform(s, "NCHW", blocked),
                                                          activation="hard_swish", **attrs)
    elif form == "grouped":
        conv = relay.nn.contrib_conv2d_NCHWc_bias_act(data, w, b, activation="clip", a_min=-0.5, a_max=0.75, **attrs)
    else:
        conv = relay.nn.contrib_conv2d_NCHWc(data, w, **attrs)
    body = relay.layout_transform(relay.nn.relu(conv), blocked, "NCHW")
    mod = ir.infer_type(ir.IRModule.from_expr(body))
    inputs = {p.name_hint: RNG.standard_normal(p.checked_type.concrete_shape).astype("float32")
              for p in mod["main"].params}
    return mod, inputs


def _nchwc_ops(model) -> list[str]:
    return sorted({n.op_type for n in model.graph.node if n.domain == NCHWC_DOMAIN})


def test_the_block_size_is_ort_s():
    assert BLOCK in (4, 8, 16)


@pytest.mark.parametrize("form", ["blocked", "first-layer", "depthwise", "grouped", "hard-sigmoid", "hard-swish"])
def test_nchwc_region_round_trip_in_ort(form):
    mod, inputs = _region(form, BLOCK)
    want = evaluate(mod, inputs)
    contrib = to_onnx(mod, contrib=True)
    assert "Conv" in _nchwc_ops(contrib) and "ReorderOutput" in _nchwc_ops(contrib)
    standard = to_onnx(mod)
    assert _nchwc_ops(standard) == []
    for model in (contrib, standard):
        got = run_ort(model, inputs)[0]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())


def test_another_block_size_is_refused_and_exports_as_standard_onnx():
    other = 8 if BLOCK == 16 else 16
    mod, inputs = _region("blocked", other)
    with pytest.raises(FrontendError, match=f"blocks of {other}.*blocks of {BLOCK}"):
        to_onnx(mod, contrib=True)
    got = run_ort(to_onnx(mod), inputs)[0]
    np.testing.assert_allclose(got, evaluate(mod, inputs), rtol=0, atol=1e-4 * np.abs(got).max())


def test_a_model_carried_to_another_block_size_fails_naming_it(monkeypatch):
    other = 8 if BLOCK == 16 else 16
    mod, inputs = _region("blocked", other)
    monkeypatch.setattr(export_nchwc, "ort_nchwc_block_size", lambda: other)  # exported where blocks are `other`
    model = to_onnx(mod, contrib=True)
    with pytest.raises(Exception, match=f"NCHWc_block_size_must_be_{other}"):
        run_ort(model, inputs)


@pytest.mark.parametrize("pool", ["max", "avg", "global"])
def test_blocked_pools_round_trip_in_ort(pool):
    blocked = f"NCHW{BLOCK}c"
    x = relay.var("x", shape=(1, 2 * BLOCK, 9, 8))
    data = relay.layout_transform(x, "NCHW", blocked)
    if pool == "max":
        out = relay.nn.max_pool3d(data, (1, 3, 3), (1, 2, 2), padding=(0, 1, 1, 0, 1, 0), layout="NDHWC", ceil_mode=True)
    elif pool == "avg":
        out = relay.nn.avg_pool3d(data, (1, 2, 3), (1, 1, 2), padding=(0, 1, 0, 0, 0, 1), layout="NDHWC",
                                  count_include_pad=True)
    else:
        out = relay.nn.avg_pool3d(data, (1, 9, 8), layout="NDHWC")
    mod = ir.infer_type(ir.IRModule.from_expr(relay.layout_transform(out, blocked, "NCHW")))
    inputs = {"x": RNG.standard_normal((1, 2 * BLOCK, 9, 8)).astype("float32")}
    model = to_onnx(mod, contrib=True)
    assert {"MaxPool" if pool == "max" else "GlobalAveragePool" if pool == "global" else "AveragePool"} < set(
        _nchwc_ops(model))
    want = evaluate(mod, inputs)
    np.testing.assert_allclose(run_ort(model, inputs)[0], want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_a_symbolic_batch_exports_and_runs_at_any_batch():
    blocked, kernel = f"NCHW{BLOCK}c", f"OIHW{BLOCK}i{BLOCK}o"
    x = relay.var("x", shape=(relay.SizeVar("N"), BLOCK, 6, 6))
    weight = relay.const(transform_layout(RNG.standard_normal((BLOCK, BLOCK, 3, 3)).astype("float32"), "OIHW", kernel))
    bias = relay.const(RNG.standard_normal(BLOCK).astype("float32"))
    data = relay.layout_transform(x, "NCHW", blocked)
    conv = relay.nn.contrib_conv2d_NCHWc_bias_sum_act(data, weight, bias, data, padding=1, data_layout=blocked,
                                                      kernel_layout=kernel, out_layout=blocked, activation="relu")
    pooled = relay.nn.max_pool3d(conv, (1, 2, 2), (1, 2, 2), layout="NDHWC")
    mod = ir.infer_type(ir.IRModule.from_expr(relay.layout_transform(pooled, blocked, "NCHW")))
    for model in (to_onnx(mod, contrib=True), to_onnx(mod)):
        for batch in (1, 3):
            inputs = {"x": RNG.standard_normal((batch, BLOCK, 6, 6)).astype("float32")}
            want = evaluate(mod, inputs)
            np.testing.assert_allclose(run_ort(model, inputs)[0], want, rtol=0, atol=1e-4 * np.abs(want).max())


def test_nchwc_nodes_read_each_other_directly_and_weights_are_reshaped_at_export():
    """Between two NCHWc nodes no Reshape runs, nor around element-wise ops of blocked values of one shape:
    they run on ONNX Runtime's 4-D blocked tensors."""
    blocked, kernel = f"NCHW{BLOCK}c", f"OIHW{BLOCK}i{BLOCK}o"
    x = relay.var("x", shape=(2, BLOCK, 6, 6))

    def conv(data, seed):
        rng = np.random.default_rng(seed)
        weight = relay.const(transform_layout(rng.standard_normal((BLOCK, BLOCK, 3, 3)).astype("float32"), "OIHW",
                                              kernel))
        bias = relay.const(rng.standard_normal(BLOCK).astype("float32"))
        return relay.nn.contrib_conv2d_NCHWc_bias_act(data, weight, bias, padding=1, data_layout=blocked,
                                                      kernel_layout=kernel, out_layout=blocked, activation="relu")
    first = conv(relay.layout_transform(x, "NCHW", blocked), 1)
    second = conv(first, 2)
    pooled = relay.nn.max_pool3d(second, (1, 2, 2), (1, 2, 2), layout="NDHWC")
    out = relay.layout_transform(relay.tanh(pooled) + relay.nn.max_pool3d(first, (1, 2, 2), (1, 2, 2),
                                                                          layout="NDHWC"), blocked, "NCHW")
    mod = ir.infer_type(ir.IRModule.from_expr(out))
    model = to_onnx(mod, contrib=True)
    produced_by = {o: n for n in model.graph.node for o in n.output}
    initializers = {i.name for i in model.graph.initializer}
    reshapes = [n for n in model.graph.node if n.op_type == "Reshape"]
    assert not [n for n in reshapes if n.input[0] in initializers]  # weights laid out once, at export
    for node in reshapes:  # no Reshape between two NCHWc nodes
        source = produced_by.get(node.input[0])
        readers = [n for n in model.graph.node if node.output[0] in n.input]
        assert not (source is not None and source.domain == NCHWC_DOMAIN and readers
                    and all(n.domain == NCHWC_DOMAIN for n in readers)), node.name
    guard = [n for n in reshapes if n.output[0].startswith("NCHWc_block_size_must_be")]
    assert len(guard) == 1 and len(reshapes) == 1
    inputs = {"x": RNG.standard_normal((2, BLOCK, 6, 6)).astype("float32")}
    want = evaluate(mod, inputs)
    np.testing.assert_allclose(run_ort(model, inputs)[0], want, rtol=0, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("activation, extra", [("hard_swish", {}), ("hard_sigmoid", dict(alpha=1 / 6, beta=0.5)),
                                               ("clip", dict(a_min=0.0, a_max=6.0)), ("relu", {}),
                                               ("leaky_relu", dict(alpha=0.1))])
def test_fused_activations_give_the_references_values_on_edge_inputs(activation, extra):
    """ONNX Runtime's NCHWc Conv activations on +-inf, NaN, +-0 and a subnormal, through a depthwise
    identity convolution, equal the reference interpreter's."""
    blocked, kernel = f"NCHW{BLOCK}c", f"OIHW1i{BLOCK}o"
    x = relay.var("x", shape=(1, BLOCK, 1, 1))
    conv = relay.nn.contrib_conv2d_NCHWc_bias_act(
        relay.layout_transform(x, "NCHW", blocked), relay.const(np.ones((1, 1, 1, 1, 1, BLOCK), "float32")),
        relay.const(np.full(BLOCK, -0.0, "float32")), groups=BLOCK, data_layout=blocked, kernel_layout=kernel,
        out_layout=blocked, activation=activation, **extra)
    mod = ir.infer_type(ir.IRModule.from_expr(relay.layout_transform(conv, blocked, "NCHW")))
    edge = [np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-45, -3.0, 3.0]
    values = np.resize(np.array(edge, "float32"), BLOCK).reshape(1, BLOCK, 1, 1)
    model = to_onnx(mod, contrib=True)
    assert "Conv" in _nchwc_ops(model)
    np.testing.assert_array_equal(run_ort(model, {"x": values})[0], evaluate(mod, {"x": values}))


def test_reorders_read_past_a_channel_pad_and_a_crop_only():
    """ReorderInput pads channels itself and ReorderOutput crops them, so an exported pad before the one
    and a crop after the other leave no node; a ReorderInput of what a full ReorderOutput wrote still
    reads the plain tensor (not the blocked one behind it)."""
    blocked, channels = f"NCHW{BLOCK}c", BLOCK + 4
    x = relay.var("x", shape=(1, channels, 5, 5))
    padded = relay.nn.pad(x, ((0, 0), (0, BLOCK - 4), (0, 0), (0, 0)))
    inner = relay.layout_transform(relay.nn.relu(relay.layout_transform(padded, "NCHW", blocked)), blocked, "NCHW")
    again = relay.layout_transform(relay.tanh(relay.layout_transform(inner, "NCHW", blocked)), blocked, "NCHW")
    body = relay.strided_slice(again, begin=[0], end=[channels], axes=[1]) + relay.strided_slice(
        inner, begin=[0], end=[channels], axes=[1])
    mod = ir.infer_type(ir.IRModule.from_expr(body))
    model = to_onnx(mod, contrib=True)
    ops = sorted(n.op_type for n in model.graph.node if not n.output[0].startswith("NCHWc_block_size"))
    assert ops == ["Add", "Relu", *["ReorderInput"] * 3, *["ReorderOutput"] * 3, "Tanh"]  # one ReorderInput guards
    inputs = {"x": RNG.standard_normal((1, channels, 5, 5)).astype("float32")}
    np.testing.assert_allclose(run_ort(model, inputs)[0], evaluate(mod, inputs), rtol=1e-6, atol=1e-6)
