"""ONNX conformance ops through the frontend: hand-built ONNX models run in ONNX Runtime must agree with
the imported program (run with the reference kernels) and with the program exported again; bad nodes
raise errors that name the node and the culprit."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import ir
from ir import relay
from ir.errors import TypeInferenceError
from ir.frontend import DEFAULT_OPSET, FrontendError, from_onnx, to_onnx
from strategies.interpreter import evaluate
from tests.ir.frontend.ort_helpers import assert_outputs_close, flat_outputs, run_ort

NEWEST = onnx.defs.onnx_opset_version()
RNG = np.random.default_rng(5)


def normal(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def ints(*shape, dtype="int64", low=-4, high=5):
    return RNG.integers(low, high, size=shape).astype(dtype)


def nonzero_ints(*shape, dtype="int32"):
    return (RNG.integers(1, 6, size=shape) * RNG.choice([-1, 1], size=shape)).astype(dtype)


def node(op_type: str, inputs: list[str], outputs: str | list[str] = "y", **attrs) -> onnx.NodeProto:
    outputs = [outputs] if isinstance(outputs, str) else outputs
    return helper.make_node(op_type, inputs, outputs, name=outputs[0], **attrs)


def model(nodes, inputs: dict[str, np.ndarray], outputs: dict[str, str], consts: dict[str, np.ndarray] = {},
          opset: int = 17) -> onnx.ModelProto:
    """A checked model of `nodes`; `inputs` are example values (their shapes and dtypes declare the inputs),
    `outputs` maps output names to dtypes (shapes come from ONNX shape inference)."""
    elem = helper.np_dtype_to_tensor_dtype
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, elem(v.dtype), v.shape) for n, v in inputs.items()],
        [helper.make_tensor_value_info(n, elem(np.dtype(d)), None) for n, d in outputs.items()],
        [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in consts.items()])
    opsets = [helper.make_opsetid("", opset)]
    proto = helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets))
    proto = onnx.shape_inference.infer_shapes(proto, strict_mode=True)  # output shapes are required
    onnx.checker.check_model(proto)
    return proto


def check(proto: onnx.ModelProto, inputs: dict[str, np.ndarray], rel: float = 1e-5) -> ir.IRModule:
    """ONNX Runtime on `proto` = the imported program's reference evaluation = ONNX Runtime on its export."""
    expected = run_ort(proto, inputs)
    mod, params = from_onnx(proto)
    assert_outputs_close(expected, flat_outputs(evaluate(mod, inputs, params)), rel)
    opset = max(proto.opset_import[0].version, DEFAULT_OPSET)
    assert_outputs_close(expected, run_ort(to_onnx(mod, params, opset=opset), inputs), rel)
    return mod


def ops_in(mod: ir.IRModule) -> set[str]:
    return {n.op.name for n in ir.post_order(mod["main"]) if isinstance(n, ir.Call) and isinstance(n.op, ir.Op)}


# -- activations ---------------------------------------------------------------------------------------

def test_elu_family_and_shrink():
    x = normal(2, 3, 4) * 3
    nodes = [node("Elu", ["x"], "elu", alpha=0.7), node("Selu", ["x"], "selu"),
             node("Selu", ["x"], "selu2", alpha=1.5, gamma=0.5), node("Celu", ["x"], "celu", alpha=1.5),
             node("Shrink", ["x"], "shrink", lambd=1.0, bias=0.3)]
    outputs = dict.fromkeys(["elu", "selu", "selu2", "celu", "shrink"], "float32")
    mod = check(model(nodes, {"x": x}, outputs), {"x": x})
    assert {"nn.elu", "nn.selu", "nn.celu", "nn.shrink"} <= ops_in(mod)


def test_shrink_of_integers():
    x = ints(3, 5, dtype="int32", low=-6, high=7)
    check(model([node("Shrink", ["x"], lambd=2.0, bias=1.5)], {"x": x}, {"y": "int32"}), {"x": x})


@pytest.mark.parametrize("slope_shape, as_prelu", [
    ((3, 1, 1), True),      # per channel of NCHW
    ((4,), True),           # along the last axis
    ((1, 1, 2, 1), True),   # one varying axis, written with every axis
    ((2, 4), False),        # varies along two axes
    ((1,), False),          # one slope for everything
    ((2, 3, 2, 4), False),  # the input's full shape
])
def test_prelu_broadcasts_the_slope_unidirectionally(slope_shape, as_prelu):
    x, slope = normal(2, 3, 2, 4), normal(*slope_shape)
    for const in (True, False):  # the slope as an initializer, and as a graph input
        inputs = {"x": x} if const else {"x": x, "s": slope}
        proto = model([node("PRelu", ["x", "s"])], inputs, {"y": "float32"}, {"s": slope} if const else {})
        mod = check(proto, inputs)
        assert ("nn.prelu" in ops_in(mod)) == as_prelu


def test_prelu_of_integers_is_the_formula():
    x, slope = nonzero_ints(2, 3), nonzero_ints(3)
    mod = check(model([node("PRelu", ["x", "s"])], {"x": x, "s": slope}, {"y": "int32"}), {"x": x, "s": slope})
    assert "nn.prelu" not in ops_in(mod)


def test_instance_normalization():
    x, scale, bias = normal(2, 3, 4, 5), normal(3), normal(3)
    proto = model([node("InstanceNormalization", ["x", "s", "b"], epsilon=1e-3)], {"x": x}, {"y": "float32"},
                  {"s": scale, "b": bias})
    assert "nn.instance_norm" in ops_in(check(proto, {"x": x}, rel=1e-4))


# -- arithmetic and existing element-wise ops ----------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_mod_of_integers_both_signs(dtype):
    a, b = nonzero_ints(3, 4, dtype=dtype) * 3, nonzero_ints(4, dtype=dtype)
    nodes = [node("Mod", ["a", "b"], "floored"), node("Mod", ["a", "b"], "truncated", fmod=1)]
    mod = check(model(nodes, {"a": a, "b": b}, {"floored": dtype, "truncated": dtype}), {"a": a, "b": b})
    assert {"floor_mod", "mod"} <= ops_in(mod)


def test_mod_of_floats():
    a, b = normal(3, 4) * 5, normal(4) + np.float32(0.1)
    check(model([node("Mod", ["a", "b"], fmod=1)], {"a": a, "b": b}, {"y": "float32"}), {"a": a, "b": b})


@pytest.mark.skipif(NEWEST < 28, reason="Mod takes floats with fmod=0 since opset 28")
def test_floored_mod_of_floats_since_opset_28():
    a, b = normal(3, 4) * 5, normal(4) + np.float32(0.1)
    check(model([node("Mod", ["a", "b"])], {"a": a, "b": b}, {"y": "float32"}, opset=28), {"a": a, "b": b})


def test_mod_of_constants_folds():
    proto = model([node("Mod", ["a", "b"], "m"), node("Add", ["x", "m"])], {"x": ints(3)}, {"y": "int64"},
                  {"a": np.array([7, -7, 7], "int64"), "b": np.array([3, 3, -3], "int64")})
    assert ops_in(check(proto, {"x": ints(3)})) == {"add"}


def test_sign_where_expand_log_softmax():
    x, c = normal(3, 1), normal(4) > 0
    nodes = [node("Sign", ["i"], "sign"), node("Cast", ["i"], "i_f", to=onnx.TensorProto.FLOAT),
             node("Where", ["c", "x", "i_f"], "where"), node("Expand", ["x", "shape"], "expand"),
             node("Expand", ["x", "shape2"], "e2"), node("LogSoftmax", ["e2"], "lsm", axis=1)]
    inputs = {"x": x, "c": c, "i": ints(3, 4, dtype="int32")}
    proto = model(nodes, inputs, {"sign": "int32", "where": "float32", "expand": "float32", "lsm": "float32"},
                  {"shape": np.array([2, 1, 4], "int64"), "shape2": np.array([3, 5], "int64")})
    check(proto, inputs)


# -- indexing ------------------------------------------------------------------------------------------

def test_sin_and_cos_of_rotary_angles():
    """Rotary position embeddings (Llama, Mistral, Qwen2, Phi as TorchScript exports them): cos and sin of
    positions times inverse frequencies, applied to the two halves of x."""
    inputs = {"x": normal(2, 5, 8), "p": np.arange(5, dtype="float32").reshape(5, 1) * 7.5}
    freq = (10000.0 ** -(np.arange(4, dtype="float32") / 4)).astype("float32")
    nodes = [node("Mul", ["p", "freq"], "angle"), node("Concat", ["angle", "angle"], "angles", axis=-1),
             node("Cos", ["angles"], "cos"), node("Sin", ["angles"], "sin"),
             node("Split", ["x"], ["x1", "x2"], axis=-1, num_outputs=2), node("Neg", ["x2"], "nx2"),
             node("Concat", ["nx2", "x1"], "rotated", axis=-1), node("Mul", ["x", "cos"], "a"),
             node("Mul", ["rotated", "sin"], "b"), node("Add", ["a", "b"], "y")]
    proto = model(nodes, inputs, {"y": "float32"}, {"freq": freq}, opset=18)
    assert {"sin", "cos"} <= ops_in(check(proto, inputs))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_with_negative_indices(axis):
    data = normal(4, 5)
    indices = ints(3, 5, low=-4, high=4) if axis == 0 else ints(4, 2, low=-5, high=5)
    proto = model([node("GatherElements", ["d", "i"], axis=axis)], {"d": data, "i": indices}, {"y": "float32"})
    assert "gather" in ops_in(check(proto, {"d": data, "i": indices}))


@pytest.mark.parametrize("reduction, opset", [(None, 13), ("none", 18), ("add", 16), ("mul", 16), ("min", 18),
                                              ("max", 18)])
def test_scatter_nd(reduction, opset):
    data, updates = normal(3, 4, 2), normal(2, 2, 2)
    at = np.array([[[0, 1], [2, -1]], [[1, 3], [2, 3]]], "int64")  # [Y=(2, 2), M=2]; -1 is row 2 (ONNX allows it)
    if reduction not in (None, "none"):
        at[1, 1] = at[0, 1]  # a repeated position combines both updates
    attrs = {} if reduction is None else {"reduction": reduction}
    proto = model([node("ScatterND", ["d", "i", "u"], **attrs)], {"d": data, "u": updates}, {"y": "float32"},
                  {"i": at}, opset=opset)
    assert "scatter_nd" in ops_in(check(proto, {"d": data, "u": updates}))


@pytest.mark.parametrize("batch_dims, at", [
    (0, np.array([[0, 1], [2, -1], [-3, 2]], "int64")),           # [Y=3, M=2]: rows of 2-D slices of d
    (0, np.array([[[1]], [[-1]]], "int64")),                        # [Y=(2, 1), M=1]: whole planes
    (1, np.array([[[2, 0], [1, 1]], [[0, 3], [-1, -2]]], "int64")),  # [B=2, Y=2, M=2]: one value each
])
def test_gather_nd(batch_dims, at):
    data = normal(2 if batch_dims else 3, 3, 4)
    proto = model([node("GatherND", ["d", "i"], batch_dims=batch_dims)], {"d": data}, {"y": "float32"}, {"i": at})
    assert "gather_nd" in ops_in(check(proto, {"d": data}))


def test_gather_nd_with_indices_computed_at_run_time():
    inputs = {"d": normal(4, 3), "i": np.array([[2, 1], [0, 0], [3, 2]], "int64")}
    proto = model([node("GatherND", ["d", "i"])], inputs, {"y": "float32"})
    mod = check(proto, inputs)
    assert {"gather_nd", "transpose"} <= ops_in(mod)
    assert "Transpose" not in [n.op_type for n in to_onnx(mod).graph.node]  # the import's move, undone


def test_scatter_nd_with_indices_computed_at_run_time():
    data, updates, at = normal(4, 3), normal(2, 3), np.array([[2], [0]], "int64")
    inputs = {"d": data, "u": updates, "i": at}
    proto = model([node("ScatterND", ["d", "i", "u"])], inputs, {"y": "float32"})
    mod = check(proto, inputs)
    assert {"scatter_nd", "transpose"} <= ops_in(mod)
    assert "Transpose" not in [n.op_type for n in to_onnx(mod).graph.node]


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    indices = np.array([[0, 3, -1], [-4, 5, 2]], "int64")  # -4 counts from the end; 5 is past it
    proto = model([node("OneHot", ["i", "depth", "values"], axis=axis)], {"i": indices}, {"y": "float32"},
                  {"depth": np.array(4, "int64"), "values": np.array([-1.0, 3.0], "float32")})
    assert "one_hot" in ops_in(check(proto, {"i": indices}))


def test_one_hot_with_run_time_values_and_float_indices():
    inputs = {"i": np.array([0.0, 2.7, -1.0], "float32"), "values": np.array([2.0, 5.0], "float32")}
    proto = model([node("OneHot", ["i", "depth", "values"])], inputs, {"y": "float32"},
                  {"depth": np.array([3.0], "float32")})
    check(proto, inputs)


def test_top_k_values_and_indices():
    x = RNG.integers(0, 4, size=(3, 6)).astype("float32")  # ties come first by index in both
    nodes = [node("TopK", ["x", "k"], ["v", "i"], axis=1), node("TopK", ["x", "k2"], ["v2", "i2"], axis=0, largest=0)]
    proto = model(nodes, {"x": x}, {"v": "float32", "i": "int64", "v2": "float32", "i2": "int64"},
                  {"k": np.array([4], "int64"), "k2": np.array([2], "int64")})
    assert "topk" in ops_in(check(proto, {"x": x}))


def test_top_k_before_opset_10_takes_k_as_an_attribute():
    x = normal(3, 5)
    proto = model([node("TopK", ["x"], ["v", "i"], k=2)], {"x": x}, {"v": "float32", "i": "int64"}, opset=9)
    check(proto, {"x": x})


@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_cumsum(exclusive, reverse, dtype):
    x = normal(3, 4).astype(dtype) if dtype == "float32" else ints(3, 4, dtype=dtype)
    proto = model([node("CumSum", ["x", "axis"], exclusive=exclusive, reverse=reverse)], {"x": x}, {"y": dtype},
                  {"axis": np.array(-1, "int32")})
    mod = check(proto, {"x": x})
    assert ("reverse" in ops_in(mod)) == bool(reverse)


def test_tile_and_trilu():
    x = normal(2, 3, 4)
    nodes = [node("Tile", ["x", "reps"], "tile"), node("Tile", ["c", "reps"], "folded"),
             node("Trilu", ["x", "k"], "upper"), node("Trilu", ["x"], "lower", upper=0)]
    proto = model(nodes, {"x": x}, dict.fromkeys(["tile", "folded", "upper", "lower"], "float32"),
                  {"reps": np.array([2, 1, 3], "int64"), "c": normal(1, 2, 1), "k": np.array(-1, "int64")})
    mod = check(proto, {"x": x})
    assert {"tile", "trilu"} <= ops_in(mod)


def test_range_of_constants_folds():
    proto = model([node("Range", ["s", "l", "d"], "r"), node("Add", ["x", "r"])], {"x": ints(4)}, {"y": "int64"},
                  {"s": np.array(1, "int64"), "l": np.array(9, "int64"), "d": np.array(2, "int64")})
    assert ops_in(check(proto, {"x": ints(4)})) == {"add"}


# -- exports without an import path ---------------------------------------------------------------------

def export_check(body, inputs: dict[str, np.ndarray], opset: int | None = None) -> onnx.ModelProto:
    """The program `body(*vars)` exported: ONNX Runtime agrees with the reference evaluation."""
    params = [relay.var(n, shape=v.shape, dtype=v.dtype.name) for n, v in inputs.items()]
    mod = ir.infer_type(ir.IRModule({"main": relay.Function(params, body(*params))}))
    proto = to_onnx(mod, opset=opset)
    assert_outputs_close(flat_outputs(evaluate(mod, inputs)), run_ort(proto, inputs), rel=1e-6)
    return proto


def test_arg_reduce_select_last_index_exports():
    x = RNG.integers(0, 3, size=(3, 4, 5)).astype("float32")
    body = lambda x: relay.Tuple([relay.argmax(x, axis=1, select_last_index=True),  # noqa: E731
                                  relay.argmin(x, axis=(0, 2), keepdims=True, select_last_index=True)])
    export_check(body, {"x": x})


@pytest.mark.parametrize("opset", [17, NEWEST])
def test_floor_mod_of_floats_exports(opset):
    a = np.array([7.0, -7.0, 7.0, -7.0, 6.0, -6.0, 0.0, 5.5], "float32")
    b = np.array([3.0, 3.0, -3.0, -3.0, 3.0, -3.0, 2.0, -2.0], "float32")
    export_check(relay.floor_mod, {"a": a, "b": b}, opset)


@pytest.mark.parametrize("upper, k", [(True, 1), (False, -1), (True, -2)])
def test_trilu_before_opset_14_exports_a_mask(upper, k):
    proto = export_check(lambda x: relay.trilu(x, k, upper), {"x": normal(2, 3, 4)}, opset=13)
    assert "Trilu" not in {n.op_type for n in proto.graph.node}


@pytest.mark.parametrize("mode, opset", [("add", 16), ("mul", 16), ("max", 18)])
def test_scatter_nd_reductions_need_their_opset(mode, opset):
    with pytest.raises(FrontendError, match=f"needs opset {opset}"):
        export_check(lambda d, i, u: relay.scatter_nd(d, i, u, mode=mode),
                     {"d": normal(3), "i": np.array([[0, 0]], "int64"), "u": normal(2)}, opset=opset - 1)


# -- bad nodes -----------------------------------------------------------------------------------------

X = {"x": normal(2, 3, 4)}
BAD = [
    ("prelu-wider-slope", [node("PRelu", ["x", "s"])], X, {"s": normal(5, 2, 3, 4)}, "does not broadcast"),
    ("prelu-mismatched-slope", [node("PRelu", ["x", "s"])], X, {"s": normal(4, 1)}, "does not broadcast"),
    ("mod-float-fmod0", [node("Mod", ["x", "x"])], X, {}, "fmod=0"),
    ("mod-fmod2", [node("Mod", ["x", "x"], fmod=2)], X, {}, "fmod=2"),
    ("celu-alpha0", [node("Celu", ["x"], alpha=0.0)], X, {}, "'alpha': must not be 0"),
    ("shrink-negative-lambd", [node("Shrink", ["x"], lambd=-0.5)], X, {}, "'lambd': must not be negative"),
    ("instance-norm-scale", [node("InstanceNormalization", ["x", "s", "b"])], X,
     {"s": normal(2), "b": normal(3)}, "gamma"),
    ("gather-elements-axis", [node("GatherElements", ["x", "i"], axis=3)], X, {"i": ints(2, 3, 4)},
     "axis 3 is out of range"),
    ("gather-elements-range", [node("GatherElements", ["x", "i"], axis=1)], X, {"i": np.full((2, 3, 4), 3)},
     "leave axis 1 of size 3"),
    ("scatter-nd-reduction", [node("ScatterND", ["x", "i", "u"], reduction="sum")], X,
     {"i": np.array([[0]]), "u": normal(1, 3, 4)}, "reduction='sum'"),
    ("scatter-nd-updates", [node("ScatterND", ["x", "i", "u"])], X, {"i": np.array([[0]]), "u": normal(1, 3)},
     "updates"),
    ("one-hot-values", [node("OneHot", ["i", "d", "v"])], {"i": ints(3)},
     {"d": np.array(3), "v": normal(3)}, "values must be [off_value, on_value]"),
    ("one-hot-depth", [node("OneHot", ["i", "d", "v"])], {"i": ints(3)},
     {"d": np.array(0), "v": normal(2)}, "'depth': must be at least 1"),
    ("top-k-zero", [node("TopK", ["x", "k"], ["v", "i"])], X, {"k": np.array([0])}, "K must be positive"),
    ("top-k-too-many", [node("TopK", ["x", "k"], ["v", "i"])], X, {"k": np.array([5])}, "k = 5 is more"),
    ("top-k-run-time", [node("TopK", ["x", "k"], ["v", "i"])], {**X, "k": np.array([2])}, {}, "must be a constant"),
    ("cumsum-axis", [node("CumSum", ["x", "a"])], X, {"a": np.array(3)}, "axis 3 is out of range"),
    ("tile-repeats", [node("Tile", ["x", "r"])], X, {"r": np.array([2, 2])}, "repeats must be 3 integers"),
    ("tile-negative", [node("Tile", ["x", "r"])], X, {"r": np.array([2, -1, 1])}, "must not be negative"),
    ("trilu-rank", [node("Trilu", ["v"])], {"v": normal(4)}, {}, "matrix"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_node_names_node_and_culprit(case):
    _, nodes, inputs, consts, fragment = case
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                     for n, v in inputs.items()],
        [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in nodes[-1].output],
        [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in consts.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises((FrontendError, TypeInferenceError)) as err:
        from_onnx(proto)
    assert f"node '{nodes[-1].name}'" in str(err.value) and fragment in str(err.value), str(err.value)
