"""Hand-built ONNX models at opsets 9, 11, 13 and the newest, in each opset's attribute-or-input
form: ONNX Runtime on the original and on `to_onnx(from_onnx(original))` must agree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import helper

import ir
from ir.frontend import from_onnx, to_onnx
from tests.ir.frontend.ort_helpers import assert_outputs_close, random_value, run_ort

NEWEST = onnx.defs.onnx_opset_version()
OPSETS = [9, 11, 13, NEWEST]


@dataclass
class Spec:
    nodes: list[onnx.NodeProto]
    inputs: dict[str, tuple]                     # name -> (shape, dtype[, kind])
    outputs: dict[str, str | tuple]              # name -> dtype, or (dtype, shape) where inference cannot tell
    initializers: dict[str, np.ndarray] = field(default_factory=dict)


CASES: dict[str, Callable[[int], Spec | None]] = {}


def case(fn: Callable[[int], Spec | None]) -> Callable[[int], Spec | None]:
    CASES[fn.__name__] = fn
    return fn


def ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def node(op_type: str, inputs: list[str], outputs: list[str] | str = "y", **attrs) -> onnx.NodeProto:
    return helper.make_node(op_type, inputs, [outputs] if isinstance(outputs, str) else outputs, **attrs)


def build(spec: Spec, opset: int) -> onnx.ModelProto:
    elem = onnx.helper.np_dtype_to_tensor_dtype
    graph = helper.make_graph(
        spec.nodes, "case",
        [helper.make_tensor_value_info(n, elem(np.dtype(s[1])), s[0]) for n, s in spec.inputs.items()],
        [helper.make_tensor_value_info(n, elem(np.dtype(d[0])), d[1]) if isinstance(d, tuple)
         else helper.make_tensor_value_info(n, elem(np.dtype(d)), None) for n, d in spec.outputs.items()],
        [onnx.numpy_helper.from_array(v, n) for n, v in spec.initializers.items()])
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets))
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)  # output shapes are required
    onnx.checker.check_model(model)
    return model


def spec_inputs(spec: Spec, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded values for the inputs of `spec` (shape, dtype and optional value kind per input)."""
    rng = np.random.default_rng(seed)
    return {n: random_value(ir.TensorType(s[0], s[1]), rng, s[2] if len(s) > 2 else "normal")
            for n, s in spec.inputs.items()}


X = {"x": ((2, 6, 5), "float32")}


@case
def split_sizes(opset):
    if opset < 13:
        nodes = [node("Split", ["x"], ["a", "b"], axis=1, split=[2, 4])]
        return Spec(nodes, X, {"a": "float32", "b": "float32"})
    nodes = [node("Split", ["x", "sizes"], ["a", "b"], axis=1)]
    return Spec(nodes, X, {"a": "float32", "b": "float32"}, {"sizes": ints(2, 4)})


@case
def split_equal(opset):
    attrs = {"num_outputs": 3} if opset >= 18 else {}
    return Spec([node("Split", ["x"], ["a", "b", "c"], axis=-2, **attrs)], X, dict.fromkeys("abc", "float32"))


@case
def split_uneven(opset):  # num_outputs with a smaller last part exists since opset 18
    if opset < 18:
        return None
    return Spec([node("Split", ["x"], ["a", "b"], axis=2, num_outputs=2)], X, dict.fromkeys("ab", "float32"))


@case
def squeeze_unsqueeze(opset):
    inputs = {"x": ((2, 1, 3), "float32")}
    if opset < 13:
        nodes = [node("Squeeze", ["x"], "s", axes=[1]), node("Unsqueeze", ["s"], "y", axes=[0, 3])]
        return Spec(nodes, inputs, {"y": "float32"})
    nodes = [node("Squeeze", ["x", "ax1"], "s"), node("Unsqueeze", ["s", "ax2"], "y")]
    return Spec(nodes, inputs, {"y": "float32"}, {"ax1": ints(-2), "ax2": ints(0, -1)})


@case
def squeeze_all(opset):
    return Spec([node("Squeeze", ["x"])], {"x": ((1, 3, 1, 2), "float32")}, {"y": "float32"})


@case
def slice_(opset):
    if opset < 10:
        return Spec([node("Slice", ["x"], starts=[1, -4], ends=[100, -1], axes=[2, 1])], X,
                    {"y": ("float32", (2, 3, 4))})
    nodes = [node("Slice", ["x", "starts", "ends", "axes", "steps"])]
    consts = {"starts": ints(-1, 0), "ends": ints(-1000, 6), "axes": ints(2, 1), "steps": ints(-2, 2)}
    return Spec(nodes, X, {"y": "float32"}, consts)


@case
def pad(opset):
    if opset < 11:
        return Spec([node("Pad", ["x"], pads=[0, 1, 2, 0, 0, 1], value=1.5)], X, {"y": "float32"})
    if opset < 18:
        return Spec([node("Pad", ["x", "pads", "value"], mode="reflect")], X, {"y": "float32"},
                    {"pads": ints(0, 1, 2, 0, 3, 1), "value": np.array(0.0, np.float32)})
    return Spec([node("Pad", ["x", "pads", "", "axes"], mode="edge")], X, {"y": "float32"},
                {"pads": ints(1, 2, 0, 3), "axes": ints(2, -2)})


@case
def clip(opset):
    if opset < 11:
        return Spec([node("Clip", ["x"], min=-0.5)], X, {"y": "float32"})
    return Spec([node("Clip", ["x", "", "hi"])], X, {"y": "float32"}, {"hi": np.array(0.3, np.float32)})


@case
def clip_dynamic_bounds(opset):
    if opset < 11:
        return None
    inputs = {**X, "lo": ((), "float32"), "hi": ((), "float32")}
    return Spec([node("Abs", ["hi"], "h"), node("Clip", ["x", "lo", "h"])], inputs, {"y": "float32"})


@case
def reduce_sum_and_mean(opset):
    outputs = {"s": "float32", "m": "float32"}
    if opset < 13:
        nodes = [node("ReduceSum", ["x"], "s", axes=[0, 2]), node("ReduceMean", ["x"], "m", axes=[-1], keepdims=0)]
        return Spec(nodes, X, outputs)
    mean = (node("ReduceMean", ["x", "last"], "m", keepdims=0) if opset >= 18
            else node("ReduceMean", ["x"], "m", axes=[-1], keepdims=0))
    return Spec([node("ReduceSum", ["x", "axes"], "s"), mean], X, outputs, {"axes": ints(0, 2), "last": ints(-1)})


@case
def reduce_family(opset):
    ops = ["ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1", "ReduceL2"]
    if opset >= 18:
        nodes = [node(op, ["x", "axes"], op) for op in ops] + [node("ReduceMax", ["x"], "all", keepdims=0)]
    else:
        nodes = [node(op, ["x"], op, axes=[1]) for op in ops] + [node("ReduceMax", ["x"], "all", keepdims=0)]
    return Spec(nodes, X, {**dict.fromkeys(ops, "float32"), "all": "float32"}, {"axes": ints(1)})


@case
def reduce_noop_empty_axes(opset):
    if opset < 18:
        return None
    return Spec([node("ReduceMean", ["x"], noop_with_empty_axes=1)], X, {"y": "float32"})


@case
def softmax_axis1(opset):  # before opset 13 this normalizes over axes 1 and 2 together
    return Spec([node("Softmax", ["x"], "s", axis=1), node("LogSoftmax", ["x"], "l", axis=1)], X,
                {"s": "float32", "l": "float32"})


@case
def softmax_default_axis(opset):
    return Spec([node("Softmax", ["x"], "s"), node("LogSoftmax", ["x"], "l")], X, {"s": "float32", "l": "float32"})


@case
def dropout(opset):
    if opset < 12:
        return Spec([node("Dropout", ["x"], ["y"], ratio=0.3)], X, {"y": "float32"})
    return Spec([node("Dropout", ["x", "ratio", "training"], ["y"])], X, {"y": "float32"},
                {"ratio": np.array(0.3, np.float32), "training": np.array(False)})


@case
def batch_norm(opset):
    rng = np.random.default_rng(1)
    params = {n: rng.uniform(0.5, 1.5, 6).astype(np.float32) for n in ("scale", "bias", "mean", "var")}
    return Spec([node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], epsilon=1e-3)],
                {"x": ((2, 6, 3, 3), "float32")}, {"y": "float32"}, params)


@case
def gemm(opset):
    rng = np.random.default_rng(2)
    inputs = {"a": ((4, 3), "float32"), "b": ((5, 4), "float32")}
    nodes = [node("Gemm", ["a", "b", "c"], "dyn", alpha=0.5, beta=2.0, transA=1, transB=1),
             node("Gemm", ["a", "w", "c2"], "const", transA=1)]
    consts = {"c": rng.standard_normal((1, 5)).astype(np.float32), "w": rng.standard_normal((4, 2)).astype(np.float32),
              "c2": rng.standard_normal(2).astype(np.float32)}
    return Spec(nodes, inputs, {"dyn": "float32", "const": "float32"}, consts)


@case
def matmul(opset):
    rng = np.random.default_rng(3)
    inputs = {"v": ((5,), "float32"), "m": ((2, 5, 3), "float32")}
    nodes = [node("MatMul", ["v", "m"], "vm"), node("MatMul", ["m", "w"], "mw"), node("MatMul", ["m", "u"], "mu")]
    consts = {"w": rng.standard_normal((3, 4)).astype(np.float32), "u": rng.standard_normal(3).astype(np.float32)}
    return Spec(nodes, inputs, dict.fromkeys(["vm", "mw", "mu"], "float32"), consts)


@case
def conv_auto_pad(opset):
    rng = np.random.default_rng(4)
    nodes = [node("Conv", ["x", "w"], "upper", auto_pad="SAME_UPPER", strides=[2, 2]),
             node("Conv", ["x", "w", "b"], "lower", auto_pad="SAME_LOWER", kernel_shape=[3, 3]),
             node("Conv", ["x", "g"], "valid", auto_pad="VALID", group=2, dilations=[2, 1])]
    consts = {"w": rng.standard_normal((3, 4, 3, 3)).astype(np.float32), "b": rng.standard_normal(3).astype(np.float32),
              "g": rng.standard_normal((4, 2, 2, 2)).astype(np.float32)}
    return Spec(nodes, {"x": ((1, 4, 8, 7), "float32")}, dict.fromkeys(["upper", "lower", "valid"], "float32"), consts)


@case
def pooling(opset):
    ceil = {"ceil_mode": 1} if opset >= 10 else {}
    nodes = [node("MaxPool", ["x"], "max", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], **ceil),
             node("AveragePool", ["x"], "avg", kernel_shape=[2, 3], strides=[2, 1], pads=[0, 1, 1, 0],
                  count_include_pad=1),
             node("AveragePool", ["x"], "same", kernel_shape=[3, 3], auto_pad="SAME_UPPER"),
             node("GlobalAveragePool", ["x"], "gavg"), node("GlobalMaxPool", ["x"], "gmax")]
    outputs = dict.fromkeys(["max", "avg", "same", "gavg", "gmax"], "float32")
    return Spec(nodes, {"x": ((1, 2, 8, 7), "float32")}, outputs)


@case
def windows_1d_3d_and_transposed(opset):
    rng = np.random.default_rng(5)
    nodes = [node("Conv", ["x1", "w1"], "conv1", auto_pad="SAME_UPPER", strides=[2]),
             node("MaxPool", ["x3"], "pool3", kernel_shape=[2, 2, 2], strides=[2, 1, 2], pads=[0, 1, 0, 1, 0, 1]),
             node("ConvTranspose", ["x3", "w3"], "up3", strides=[2, 1, 2], pads=[1, 0, 0, 0, 1, 1],
                  output_padding=[1, 0, 0], group=2)]
    consts = {"w1": rng.standard_normal((4, 3, 3)).astype(np.float32),
              "w3": rng.standard_normal((4, 1, 3, 2, 2)).astype(np.float32)}
    inputs = {"x1": ((2, 3, 9), "float32"), "x3": ((1, 4, 3, 4, 5), "float32")}
    return Spec(nodes, inputs, dict.fromkeys(["conv1", "pool3", "up3"], "float32"), consts)


@case
def resize_and_upsample(opset):
    x = {"x": ((1, 2, 4, 5), "float32")}
    if opset < 10:
        return Spec([node("Upsample", ["x", "s"], mode="nearest")], x, {"y": "float32"},
                    {"s": np.array([1, 1, 2, 1.5], np.float32)})
    if opset < 13:
        nodes = [node("Resize", ["x", "roi", "s"], mode="linear", coordinate_transformation_mode="align_corners")]
        return Spec(nodes, x, {"y": "float32"}, {"roi": np.zeros(0, np.float32),
                                                  "s": np.array([1, 1, 2, 2], np.float32)})
    if opset < 18:
        nodes = [node("Resize", ["x", "", "", "sizes"], mode="nearest", nearest_mode="floor")]
        return Spec(nodes, x, {"y": "float32"}, {"sizes": ints(1, 2, 7, 3)})
    nodes = [node("Resize", ["x", "", "", "sizes"], mode="cubic", axes=[3, 2], keep_aspect_ratio_policy="not_smaller")]
    return Spec(nodes, x, {"y": "float32"}, {"sizes": ints(8, 6)})


@case
def lrn_and_activations(opset):
    nodes = [node("LRN", ["x"], "lrn", size=3, alpha=0.01, beta=0.5, bias=1.5),
             node("LeakyRelu", ["x"], "leaky", alpha=0.3), node("PRelu", ["x", "slope"], "prelu"),
             node("HardSigmoid", ["x"], "hsig", alpha=0.3), node("Softplus", ["x"], "softplus"),
             node("Reciprocal", ["x"], "recip"), node("Erf", ["x"], "erf"), node("Sigmoid", ["x"], "sig"),
             node("Tanh", ["x"], "tanh"), node("Identity", ["x"], "id")]
    names = ["lrn", "leaky", "prelu", "hsig", "softplus", "recip", "erf", "sig", "tanh", "id"]
    outputs = dict.fromkeys(names, "float32")
    return Spec(nodes, {"x": ((1, 4, 3, 3), "float32")}, outputs,
                {"slope": np.array([0.1, 0.2, 0.3, 0.4], np.float32).reshape(4, 1, 1)})


@case
def shape_subgraph_folds(opset):
    """Reshape to [batch, -1] computed from Shape/Gather/Unsqueeze/Concat: folded into an attribute."""
    unsqueeze = (node("Unsqueeze", ["n"], "n1", axes=[0]) if opset < 13 else node("Unsqueeze", ["n", "zero"], "n1"))
    nodes = [node("Shape", ["x"], "shape"), node("Gather", ["shape", "idx"], "n", axis=0), unsqueeze,
             node("Concat", ["n1", "minus1"], "target", axis=0), node("Reshape", ["x", "target"], "flat"),
             node("ConstantOfShape", ["target_c"], "ones", value=helper.make_tensor("v", 1, [1], [2.0])),
             node("Cast", ["ones"], "ones64", to=onnx.TensorProto.DOUBLE), node("Cast", ["ones64"], "back", to=1),
             node("Add", ["flat", "back"], "y")]
    return Spec(nodes, X, {"y": ("float32", (2, 30))}, {"idx": ints(0).reshape(()), "zero": ints(0), "minus1": ints(-1),
                                             "target_c": ints(2, 30)})


@case
def flatten_expand_transpose(opset):
    nodes = [node("Flatten", ["x"], "flat", axis=2), node("Expand", ["b"], "big", ), node("Transpose", ["x"], "t",
             perm=[2, 0, 1]), node("Transpose", ["x"], "rev")]
    nodes[1] = node("Expand", ["b", "shape"], "big")
    return Spec(nodes, {**X, "b": ((6, 1), "float32")}, dict.fromkeys(["flat", "big", "t", "rev"], "float32"),
                {"shape": ints(2, 1, 4)})


@case
def gather(opset):
    inputs = {**X, "i": ((2, 2), "int64", "index")}
    nodes = [node("Gather", ["x", "const_idx"], "c", axis=1), node("Gather", ["x", "i"], "d", axis=-1)]
    return Spec(nodes, inputs, {"c": "float32", "d": "float32"}, {"const_idx": ints(-1, 0, 2)})


@case
def arg_reduce(opset):
    return Spec([node("ArgMax", ["x"], "amax", axis=-1, keepdims=0), node("ArgMin", ["x"], "amin", axis=1)], X,
                {"amax": "int64", "amin": "int64"})


@case
def variadic_and_logic(opset):
    inputs = {"a": ((2, 3), "float32"), "b": ((3,), "float32"), "c": ((2, 1), "float32")}
    nodes = [node("Sum", ["a", "b", "c"], "sum"), node("Max", ["a", "b", "c"], "max"), node("Min", ["a", "b"], "min"),
             node("Mean", ["a", "b", "c"], "mean"), node("Greater", ["a", "b"], "gt"), node("Less", ["a", "c"], "lt"),
             node("Equal", ["gt", "lt"], "eq"), node("Not", ["eq"], "ne"), node("Or", ["gt", "lt"], "or"),
             node("Xor", ["gt", "lt"], "xor"), node("Where", ["ne", "a", "b"], "where")]
    outputs = {"sum": "float32", "max": "float32", "min": "float32", "mean": "float32", "or": "bool", "xor": "bool",
               "where": "float32"}
    return Spec(nodes, inputs, outputs)


@case
def pow_mod_div(opset):
    inputs = {"a": ((2, 3), "float32", "positive"), "i": ((2, 3), "int32", "int"), "j": ((3,), "int32", "int")}
    nodes = [node("Div", ["i", "j"], "idiv"), node("Mul", ["a", "a"], "sq")]
    outputs = {"idiv": "int32", "sq": "float32"}
    if opset >= 10:
        nodes += [node("Mod", ["i", "j"], "imod"), node("Mod", ["a", "half"], "fmod", fmod=1)]
        outputs.update(imod="int32", fmod="float32")
    if opset >= 12:
        nodes.append(node("Pow", ["a", "three"], "pow"))
        outputs["pow"] = "float32"
    return Spec(nodes, inputs, outputs, {"half": np.array(0.7, np.float32), "three": np.array(3, np.int64)})


@case
def constants_range_size(opset):
    if opset < 12:
        return None
    nodes = [node("Constant", [], "cf", value_floats=[1.0, 2.0, 3.0]), node("Constant", [], "ci", value_int=2),
             node("Range", ["zero", "ci", "one"], "r"), node("Size", ["x"], "n"), node("Cast", ["n"], "nf", to=1),
             node("Mul", ["x", "nf"], "xn"), node("Add", ["xn", "cf3"], "y"), node("Cast", ["r"], "rf", to=1)]
    return Spec(nodes, {"x": ((2, 3), "float32")}, {"y": "float32", "rf": "float32"},
                {"zero": np.array(0, np.int64), "one": np.array(1, np.int64), "cf3": np.ones(3, np.float32)})


@case
def layer_norm_and_gelu(opset):
    if opset < 17:
        return None
    rng = np.random.default_rng(5)
    nodes = [node("LayerNormalization", ["x", "g"], "last", epsilon=1e-3),
             node("LayerNormalization", ["x", "g2", "b2"], "two_axes", axis=1)]
    outputs = {"last": "float32", "two_axes": "float32"}
    if opset >= 20:
        nodes += [node("Gelu", ["x"], "gelu"), node("Gelu", ["x"], "gelu_tanh", approximate="tanh")]
        outputs.update(gelu="float32", gelu_tanh="float32")
    return Spec(nodes, X, outputs, {"g": rng.standard_normal(5).astype(np.float32),
                                    "g2": rng.standard_normal((6, 5)).astype(np.float32),
                                    "b2": rng.standard_normal((6, 5)).astype(np.float32)})


@case
def if_(opset):
    outer = [node("ReduceSum", ["x"], "total", keepdims=0), node("Greater", ["total", "zero"], "cond")]
    then_graph = helper.make_graph([node("Relu", ["x"], "t")], "then", [],
                                   [helper.make_tensor_value_info("t", 1, None)])
    else_graph = helper.make_graph([node("Neg", ["x"], "e")], "else", [],
                                   [helper.make_tensor_value_info("e", 1, None)])
    nodes = outer + [node("If", ["cond"], "y", then_branch=then_graph, else_branch=else_graph)]
    return Spec(nodes, X, {"y": "float32"}, {"zero": np.array(0.0, np.float32)})


PARAMS = [(name, opset) for name in CASES for opset in OPSETS if CASES[name](opset) is not None]


@pytest.mark.parametrize("name, opset", PARAMS, ids=[f"{n}-opset{o}" for n, o in PARAMS])
def test_opset_form_roundtrip(name, opset):
    spec = CASES[name](opset)
    original = build(spec, opset)
    inputs = spec_inputs(spec)
    expected = run_ort(original, inputs)
    mod, params = from_onnx(original)
    assert params == {}
    assert_outputs_close(expected, run_ort(to_onnx(mod), inputs), rel=1e-5)


def test_every_case_runs_at_the_newest_opset_or_says_why_not():
    skipped = sorted(name for name in CASES if CASES[name](NEWEST) is None)
    assert skipped == []


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("freeze", [True, False])
def test_shape_computations_fold_into_attributes(opset, freeze):
    mod, params = from_onnx(build(CASES["shape_subgraph_folds"](opset), opset), freeze_params=freeze)
    calls = [n for n in ir.post_order(mod["main"]) if isinstance(n, ir.Call)]
    assert sorted(c.op.name for c in calls) == ["add", "reshape"]
    (reshape,) = [c for c in calls if c.op.name == "reshape"]
    assert reshape.attrs.newshape == (2, -1)
    assert params == {} and [p.name_hint for p in mod["main"].params] == ["x"]  # initializers only read statically
