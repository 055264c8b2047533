"""Models over a symbolic batch, as PyTorch exports them: a CNN flattened with
`Shape -> Gather(0) -> Unsqueeze -> Concat([N, -1]) -> Reshape` and a transformer block whose
head split and merge reshape through `Shape`. Each imports with symbolic types, runs at batch 1
and 4 from one IRModule like ONNX Runtime, optimizes for the `ort` target (costs estimated at
`strategies.work.ASSUMED_DIM` per symbolic dimension) and exports with its `dim_param`s kept."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import eqsat
import ir
import strategies
from ir.frontend import from_onnx, to_onnx
from tests.ir.frontend.ort_helpers import assert_outputs_close, flat_outputs, run_ort

F = onnx.TensorProto.FLOAT
RNG = np.random.default_rng(0)


def weight(*shape: int, scale: float = 0.3) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def ints(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def build(nodes, x_shape, y_shape, inits: dict[str, np.ndarray], opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "model", [helper.make_tensor_value_info("x", F, x_shape)],
                              [helper.make_tensor_value_info("y", F, y_shape)],
                              [onnx.numpy_helper.from_array(v, n) for n, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def cnn() -> onnx.ModelProto:
    """conv -> relu -> maxpool -> `x.view(x.size(0), -1)` -> Gemm."""
    n = helper.make_node
    nodes = [n("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), n("Relu", ["c"], ["r"]),
             n("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             n("Shape", ["p"], ["s"]), n("Gather", ["s", "zero"], ["nb"], axis=0),
             n("Unsqueeze", ["nb", "ax0"], ["nbu"]),
             n("Concat", ["nbu", "minus1"], ["target"], axis=0), n("Reshape", ["p", "target"], ["f"]),
             n("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    inits = {"w": weight(4, 3, 3, 3), "b": weight(4), "zero": np.array(0, np.int64), "ax0": ints(0),
             "minus1": ints(-1), "fw": weight(10, 4 * 4 * 4), "fb": weight(10)}
    return build(nodes, ["N", 3, 8, 8], ["N", 10], inits)


def transformer(seq: int | str = 8) -> onnx.ModelProto:
    """Pre-norm attention (2 heads) and a ReLU MLP, both residual; heads split and merge through
    `Reshape(x, Concat(Shape(x)[0], Shape(x)[1], heads, head_dim))`."""
    dim, heads, hidden = 16, 2, 32
    n = helper.make_node
    nodes = [n("LayerNormalization", ["x", "g1", "b1"], ["ln1"], axis=-1, epsilon=1e-5),
             n("Shape", ["x"], ["shape"]), n("Gather", ["shape", "zero"], ["nb"], axis=0),
             n("Gather", ["shape", "one"], ["ns"], axis=0), n("Unsqueeze", ["nb", "ax0"], ["nbu"]),
             n("Unsqueeze", ["ns", "ax0"], ["nsu"]), n("Concat", ["nbu", "nsu", "heads", "hd"], ["split"], axis=0),
             n("Concat", ["nbu", "nsu", "dm"], ["merge"], axis=0)]
    for p in "qkv":
        nodes += [n("MatMul", ["ln1", f"w{p}"], [f"{p}0"]), n("Add", [f"{p}0", f"b{p}"], [f"{p}1"]),
                  n("Reshape", [f"{p}1", "split"], [f"{p}2"]),
                  n("Transpose", [f"{p}2"], [f"{p}3"], perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3])]
    nodes += [n("MatMul", ["q3", "k3"], ["qk"]), n("Div", ["qk", "scale"], ["qks"]),
              n("Softmax", ["qks"], ["att"], axis=-1), n("MatMul", ["att", "v3"], ["ctx"]),
              n("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]), n("Reshape", ["ctxt", "merge"], ["ctxm"]),
              n("MatMul", ["ctxm", "wo"], ["o0"]), n("Add", ["o0", "bo"], ["o1"]), n("Add", ["x", "o1"], ["r1"]),
              n("LayerNormalization", ["r1", "g2", "b2"], ["ln2"], axis=-1, epsilon=1e-5),
              n("MatMul", ["ln2", "w1"], ["f0"]), n("Add", ["f0", "c1"], ["f1"]), n("Relu", ["f1"], ["f2"]),
              n("MatMul", ["f2", "w2"], ["f3"]), n("Add", ["f3", "c2"], ["f4"]), n("Add", ["r1", "f4"], ["y"])]
    inits = {"g1": weight(dim) + 1, "b1": weight(dim), "g2": weight(dim) + 1, "b2": weight(dim),
             "wo": weight(dim, dim), "bo": weight(dim), "w1": weight(dim, hidden), "c1": weight(hidden),
             "w2": weight(hidden, dim), "c2": weight(dim), "zero": np.array(0, np.int64), "one": np.array(1, np.int64),
             "ax0": ints(0), "heads": ints(heads), "hd": ints(dim // heads), "dm": ints(dim),
             "scale": np.array(np.sqrt(dim // heads), np.float32)}
    for p in "qkv":
        inits[f"w{p}"], inits[f"b{p}"] = weight(dim, dim), weight(dim)
    return build(nodes, ["N", seq, dim], ["N", seq, dim], inits)


MODELS = {"cnn": (cnn, (3, 8, 8)), "transformer": (transformer, (8, 16)),
          "transformer-symbolic-seq": (lambda: transformer("S"), (5, 16))}


def inputs(rest: tuple[int, ...], batch: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(batch).standard_normal((batch, *rest)).astype(np.float32)}


@pytest.fixture(scope="module", params=sorted(MODELS))
def imported(request):
    make, rest = MODELS[request.param]
    proto = make()
    mod, params = from_onnx(proto)
    return proto, mod, params, rest


def test_types_are_symbolic_and_reshapes_static_attributes(imported):
    proto, mod, params, rest = imported
    n = ir.SizeVar("N")
    assert mod["main"].checked_type.ret_type.shape[0] == n
    calls = [c for c in ir.post_order(mod["main"]) if isinstance(c, ir.Call)]
    assert all(c.checked_type.shape[0] == n for c in calls if c.op.name != "strided_slice")
    assert not [c.op.name for c in calls if c.checked_type.dtype == "int64"]  # every shape computation folded


def test_runs_at_batch_1_and_4_like_onnxruntime(imported):
    proto, mod, params, rest = imported
    executable = strategies.build(mod, "cpu", params)
    for batch in (1, 4):
        feed = inputs(rest, batch)
        assert_outputs_close(run_ort(proto, feed), flat_outputs(executable.run(**feed)))


def test_optimizes_for_ort_and_exports_with_symbolic_dims(imported):
    proto, mod, params, rest = imported
    optimized = eqsat.optimize(mod, params, target="ort")
    assert optimized.mod["main"].checked_type.ret_type == mod["main"].checked_type.ret_type
    model = to_onnx(optimized.mod, optimized.params, contrib=True)
    declared = [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
                for v in (*model.graph.input, *model.graph.output)]
    assert [dims[0] for dims in declared] == ["N", "N"]
    for batch in (1, 4):
        feed = inputs(rest, batch)
        assert_outputs_close(run_ort(proto, feed), run_ort(model, feed))
