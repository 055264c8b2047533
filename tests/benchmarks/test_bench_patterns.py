"""The pattern benchmark: its patterns find what the models hold, its callbacks keep outputs, it reports."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import benchmarks
import ir
from benchmarks import bench_patterns, report
from benchmarks.fusion_patterns import (
    FUSED_OPS, FoldConvBatchNorm, FuseBiasGelu, FuseConvBias, match_patterns, partition_patterns, rewrite_callbacks,
)
from ir import relay
from ir.dataflow_pattern import find_matches, partition, rewrite
from ir.expr import Call, TupleGetItem
from strategies import evaluate

MODELS = bench_patterns.MODELS


@pytest.fixture(scope="module", params=MODELS)
def small_model(request) -> tuple[str, ir.IRModule, dict]:
    mod, params = ir.models.get(request.param, small=True)
    return request.param, mod, params


def _calls(expr, name: str) -> list[Call]:
    return [n for n in ir.post_order(expr) if isinstance(n, Call) and getattr(n.op, "name", None) == name]


def _random_inputs(func: ir.Function, params: dict) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    inputs = {}
    for p in func.params:
        if p.name_hint in params:
            continue
        shape, dtype = [int(d) for d in p.checked_type.shape], p.checked_type.dtype
        value = rng.integers(0, 2, shape) if dtype.startswith("int") else rng.standard_normal(shape)
        inputs[p.name_hint] = value.astype(dtype)
    return inputs


def _outputs(program, inputs: dict, params: dict | None) -> tuple[np.ndarray, ...]:
    value = evaluate(program, inputs, params)
    return value if isinstance(value, tuple) else (value,)


def _assert_same_outputs(before, after, inputs: dict, params: dict | None = None) -> None:
    expected, got = _outputs(before, inputs, params), _outputs(after, inputs, params)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def test_patterns_find_the_blocks_each_model_is_built_of(small_model):
    name, mod, _ = small_model
    main = mod["main"]
    expected = {
        "dense_bias": len(_calls(main, "nn.dense")),
        "attention": len(_calls(main, "nn.softmax")),
        "bias_gelu": len(_calls(main, "erf")),
        "relu_elemwise_attr": len(_calls(main, "nn.relu")),
        "conv2d_bn_relu": sum(isinstance(r.args[0], TupleGetItem) for r in _calls(main, "nn.relu")),
        "conv2d_bias_relu": 0, "diamond": 0, "batch_norm_arith": 0,  # neither model has these blocks
    }
    assert any(expected.values())
    nodes = list(ir.post_order(main))
    for pattern_name, pattern in match_patterns().items():
        per_node = sum(pattern.match(n) for n in nodes)
        assert per_node == len(find_matches(pattern, main)), pattern_name
        if pattern_name in expected:
            assert per_node == expected[pattern_name], (name, pattern_name)


@pytest.mark.parametrize("callbacks_name", sorted(rewrite_callbacks()))
def test_rewrites_keep_the_outputs(small_model, callbacks_name):
    name, mod, params = small_model
    main = mod["main"]
    rewritten = rewrite(rewrite_callbacks()[callbacks_name], main)
    fused = sum(len(_calls(rewritten, op)) for op in FUSED_OPS)
    if callbacks_name == "fuse_conv_bias":
        assert fused == 0 and rewritten is main  # the zoo has no conv2d + bias_add
        return
    should_fire = {("resnet50", "fold_conv_bn"), ("resnet50", "fuse_dense_bias"), ("bert", "fuse_bias_gelu"),
                   ("bert", "fuse_dense_bias")} | {(m, "all") for m in MODELS}
    assert (fused > 0) == ((name, callbacks_name) in should_fire)
    _assert_same_outputs(main, rewritten, _random_inputs(main, params), params)


def _conv_bias(bias_axis: int, relu: bool):
    x, w = relay.var("x", shape=(1, 3, 6, 6)), relay.var("w", shape=(4, 3, 3, 3))
    b = relay.var("b", shape=(4,) if bias_axis == 1 else (6,))
    y = relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1)), b, axis=bias_axis)
    return relay.Function([x, w, b], relay.nn.relu(y) if relu else y)


@pytest.mark.parametrize("relu", [True, False])
def test_conv_bias_fuses_over_channels(relu):
    func = ir.infer_type(_conv_bias(1, relu))
    fused = rewrite(FuseConvBias(), func)
    (call,) = _calls(fused, "nn.conv2d_bias_act")
    assert call.attrs.activation == ("relu" if relu else "none") and call.attrs.padding == (1, 1, 1, 1)
    rng = np.random.default_rng(1)
    inputs = {p.name_hint: rng.standard_normal([int(d) for d in p.checked_type.shape]).astype("float32")
              for p in func.params}
    _assert_same_outputs(func, fused, inputs)


def test_conv_bias_over_another_axis_is_left_alone():
    func = ir.infer_type(_conv_bias(3, relu=True))
    assert not _calls(rewrite(FuseConvBias(), func), "nn.conv2d_bias_act")


def test_batch_norm_over_a_spatial_axis_is_not_folded():
    x, w = relay.var("x", shape=(1, 3, 8, 8)), relay.var("w", shape=(4, 3, 3, 3))
    stats = [relay.var(n, shape=(8,)) for n in ("gamma", "beta", "mean", "var")]
    out = relay.nn.relu(relay.nn.batch_norm(relay.nn.conv2d(x, w, padding=(1, 1)), *stats, axis=2)[0])
    func = ir.infer_type(relay.Function([x, w, *stats], out))
    assert FoldConvBatchNorm().activated.match(func.body)
    assert not _calls(rewrite(FoldConvBatchNorm(), func), "nn.conv2d_bias_act")


@pytest.mark.parametrize("half, fused", [(0.5, 1), (0.25, 0)])
def test_gelu_fuses_only_with_gelu_constants(half, fused):
    x, b = relay.var("x", shape=(2, 6)), relay.var("b", shape=(6,))
    y = relay.nn.bias_add(x, b, axis=-1)
    gelu = relay.const(half) * y * (relay.const(1.0) + relay.erf(y * relay.const(2.0 ** -0.5)))
    func = ir.infer_type(relay.Function([x, b], gelu))
    assert FuseBiasGelu().pattern.match(func.body)
    assert len(_calls(rewrite(FuseBiasGelu(), func), "nn.bias_gelu")) == fused


def test_partition_patterns_wrap_what_they_match(small_model):
    _, mod, _ = small_model
    main = mod["main"]
    for pattern_name, pattern in partition_patterns().items():
        partitioned = partition(pattern, main)
        calls = [n for n in ir.post_order(partitioned) if isinstance(n, Call) and isinstance(n.op, ir.Function)]
        assert len(calls) == len(find_matches(pattern, main)), pattern_name


def test_benchmark_writes_a_row_per_measurement(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    bench_patterns.main(["--small", "--no-tvm", "--repeat", "1"])
    rows = json.loads((tmp_path / "patterns_small.json").read_text())["rows"]
    per_model = len(match_patterns()) + len(rewrite_callbacks()) + len(partition_patterns())
    assert len(rows) == per_model * len(MODELS)
    assert {r["tvm"] for r in rows if r["task"] != "rewrite"} == {"skipped (--no-tvm)"}
    assert all(r["ours_s"] > 0 and r["matches"] >= 0 for r in rows)
    assert "skipped (--no-tvm)" in (tmp_path / "patterns_small.md").read_text()


def test_missing_tvm_is_reported_not_raised(monkeypatch):
    monkeypatch.setitem(sys.modules, "tvm", None)  # makes `import tvm` raise ImportError
    monkeypatch.delitem(sys.modules, "benchmarks.tvm_peer", raising=False)
    monkeypatch.delattr(benchmarks, "tvm_peer", raising=False)
    peer, status = bench_patterns.load_peer()
    assert peer is None and status.startswith("unavailable (ModuleNotFoundError") and "tvm" in status


def test_tvm_finds_the_same_matches_as_ours():
    pytest.importorskip("tvm")
    from benchmarks import tvm_peer

    mod, params = ir.models.get("bert", small=True)
    graph = tvm_peer.import_model(mod, params)
    relax = tvm_peer.relax_patterns()
    ours = match_patterns()
    for pattern_name in ("dense_bias", "attention", "bias_gelu", "conv2d_bn_relu"):
        expected = len(find_matches(ours[pattern_name], mod["main"]))
        assert tvm_peer.count_matches(graph, relax[pattern_name]) == expected, pattern_name
        assert tvm_peer.count_single_pass_matches(graph, relax[pattern_name]) == expected, pattern_name
    assert tvm_peer.count_partitions(graph, "dense_bias", relax["dense_bias"]) == len(_calls(mod["main"], "nn.dense"))
