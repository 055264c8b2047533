"""Fuzzing `from_onnx`: small valid models, mutated with a fixed seed (bytes truncated or bit-flipped;
nodes, inputs, attributes or fields deleted; attributes retyped; dims made huge; names clashed),
either import or raise the frontend's own error with a message: never a raw KeyError, IndexError,
MemoryError, DecodeError, RecursionError or the like, and never a hang."""

from __future__ import annotations

import signal
import time
import traceback
from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import ir
from ir.frontend import from_onnx, to_onnx

F, I64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64
CASES_PER_SEED = 800
SECONDS_PER_CASE = 5.0


def _model(nodes, inputs, outputs, initializers, opset=13) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _conv_net() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(np.zeros(4, np.float32), "b"),
             numpy_helper.from_array(np.array([1, -1], np.int64), "flat")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
             helper.make_node("Transpose", ["p"], ["t"], perm=[0, 1, 3, 2], name="transpose"),
             helper.make_node("Reshape", ["t", "flat"], ["f"], name="reshape"),
             helper.make_node("Softmax", ["f"], ["y"], axis=-1, name="softmax")]
    return _model(nodes, [helper.make_tensor_value_info("x", F, [1, 3, 8, 8])],
                  [helper.make_tensor_value_info("y", F, None)], inits)


def _shape_subgraph() -> onnx.ModelProto:
    """The shape arithmetic exporters emit: Shape, Gather, Unsqueeze, Concat, ConstantOfShape, Range, Expand."""
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
             (("zero", 0), ("one", 1), ("minus", [-1]), ("axes", [0]), ("four", 4), ("four1", [4]), ("zero1", [0]))]
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
             helper.make_node("Unsqueeze", ["batch", "axes"], ["b1"]),
             helper.make_node("Concat", ["b1", "minus"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["flat"]),
             helper.make_node("ConstantOfShape", ["target_pos"], ["fill"],
                              value=numpy_helper.from_array(np.array([0.5], np.float32))),
             helper.make_node("Concat", ["b1", "b1"], ["target_pos"], axis=0),
             helper.make_node("Range", ["zero", "four", "one"], ["idx"]),
             helper.make_node("Concat", ["b1", "four1"], ["e_shape"], axis=0),
             helper.make_node("Expand", ["idx", "e_shape"], ["e"]),
             helper.make_node("Cast", ["e"], ["ef"], to=F),
             helper.make_node("ReduceSum", ["flat", "minus"], ["sum"], keepdims=1),
             helper.make_node("Slice", ["sum", "zero1", "four1", "minus"], ["sum4"]),
             helper.make_node("Add", ["sum4", "ef"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", F, [2, 3, 4])],
                  [helper.make_tensor_value_info("y", F, None), helper.make_tensor_value_info("fill", F, None)], inits)


def _branches() -> onnx.ModelProto:
    then = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", F, [2, 3])])
    other = helper.make_graph([helper.make_node("Slice", ["x", "starts", "ends", "sl_axes"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", F, [2, 3])],
                              [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
                               (("starts", [0]), ("ends", [3]), ("sl_axes", [-1]))])
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
             helper.make_node("Greater", ["m", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other, name="if"),
             helper.make_node("MatMul", ["y", "w"], ["z"])]
    inits = [numpy_helper.from_array(np.float32(0), "zero"), numpy_helper.from_array(np.ones((3, 2), np.float32), "w")]
    return _model(nodes, [helper.make_tensor_value_info("x", F, [2, 3])], [helper.make_tensor_value_info("z", F, None)],
                  inits)


def _zoo(name: str) -> Callable[[], onnx.ModelProto]:
    return lambda: to_onnx(*ir.models.get(name, small=True))


SEEDS = {"conv_net": _conv_net, "shape_subgraph": _shape_subgraph, "branches": _branches,
         "squeezenet": _zoo("squeezenet"), "bert": _zoo("bert")}


# -- mutations: each takes the model and a generator, returns bytes or a mutated ModelProto ------------------

def _graphs(model: onnx.ModelProto) -> list[onnx.GraphProto]:
    found = [model.graph]
    for graph in found:
        found.extend(a.g for n in graph.node for a in n.attribute if a.HasField("g"))
    return found


def _pick(rng: np.random.Generator, items):
    return items[int(rng.integers(len(items)))] if len(items) else None


def _nodes(model, rng) -> list[onnx.NodeProto]:
    return list(_pick(rng, _graphs(model)).node)


def truncate(model, rng):
    data = model.SerializeToString()
    return data[:int(rng.integers(len(data)))]


def flip_bits(model, rng):
    data = bytearray(model.SerializeToString())
    for _ in range(int(rng.integers(1, 9))):
        data[int(rng.integers(len(data)))] ^= 1 << int(rng.integers(8))
    return bytes(data)


def delete_node(model, rng):
    graph = _pick(rng, _graphs(model))
    if graph.node:
        del graph.node[int(rng.integers(len(graph.node)))]
    return model


def delete_node_input(model, rng):
    node = _pick(rng, _nodes(model, rng))
    if node is not None and node.input:
        del node.input[int(rng.integers(len(node.input)))]
    return model


def delete_attribute(model, rng):
    node = _pick(rng, [n for n in _nodes(model, rng) if n.attribute])
    if node is not None:
        del node.attribute[int(rng.integers(len(node.attribute)))]
    return model


def retype_attribute(model, rng):
    """An attribute gets another type (its `type` field, or its value cleared), or absurd ints."""
    node = _pick(rng, [n for n in _nodes(model, rng) if n.attribute])
    if node is None:
        return model
    attr = node.attribute[int(rng.integers(len(node.attribute)))]
    choice = int(rng.integers(4))
    if choice == 0:
        attr.type = _pick(rng, list(onnx.AttributeProto.AttributeType.values()))
    elif choice == 1:
        attr.ClearField("ints")
        attr.ClearField("i")
        attr.ClearField("t")
    elif choice == 2:
        bound = int(rng.choice([6, 2**62]))
        attr.ints[:] = [int(v) for v in rng.integers(-bound, bound, int(rng.integers(0, 6)))]
        attr.type = onnx.AttributeProto.INTS
    else:
        attr.i = int(rng.choice([-3, -1, 0, 1, 5, 2**40, -2**62]))
    return model


def clear_field(model, rng):
    """Clear one field of the model, the graph, a value info, a node or an initializer."""
    graph = model.graph
    target = _pick(rng, [model, graph, *graph.input, *graph.output, *graph.initializer, *graph.node])
    fields = [f.name for f, _ in target.ListFields()]
    if fields:
        target.ClearField(_pick(rng, fields))
    return model


def huge_dims(model, rng):
    """An initializer or graph input declares huge (or negative) dims, or a shape input asks for a huge fill."""
    graph = model.graph
    dims = [int(v) for v in rng.choice([0, -1, 7, 40000, 2**31, 2**40], int(rng.integers(1, 4)))]
    choice = int(rng.integers(3))
    if choice == 0 and graph.initializer:
        tensor = _pick(rng, list(graph.initializer))
        tensor.dims[:] = dims
    elif choice == 1 and graph.input:
        value = _pick(rng, list(graph.input))
        for dim, size in zip(value.type.tensor_type.shape.dim, dims):
            dim.dim_value = size
    else:
        ints = [t for t in graph.initializer if t.data_type == I64]
        if ints:
            tensor = _pick(rng, ints)
            tensor.CopyFrom(numpy_helper.from_array(np.array(dims, np.int64), tensor.name))
    return model


def small_ints(model, rng):
    """An integer initializer (a shape, axes, indices, pads) gets other small values, maybe another rank."""
    tensors = [t for g in _graphs(model) for t in g.initializer if t.data_type == I64]
    tensor = _pick(rng, tensors)
    if tensor is not None:
        shape = [int(n) for n in rng.integers(0, 4, int(rng.integers(0, 3)))]
        tensor.CopyFrom(numpy_helper.from_array(rng.integers(-6, 7, shape).astype(np.int64), tensor.name))
    return model


def delete_output(model, rng):
    """A node or the graph loses an output."""
    graph = _pick(rng, _graphs(model))
    node = _pick(rng, list(graph.node))
    field = graph.output if node is None or rng.random() < 0.3 else node.output
    if len(field):
        del field[int(rng.integers(len(field)))]
    return model


def clash_names(model, rng):
    """A node's output or input renamed to another value's name (duplicates, cycles, dangling uses)."""
    nodes = _nodes(model, rng)
    names = [n for node in nodes for n in (*node.input, *node.output) if n]
    node = _pick(rng, nodes)
    if node is not None and names:
        field = node.output if rng.random() < 0.5 or not node.input else node.input
        if field:
            field[int(rng.integers(len(field)))] = _pick(rng, names)
    return model


def change_op(model, rng):
    node = _pick(rng, _nodes(model, rng))
    if node is not None:
        node.op_type = _pick(rng, ["Relu", "Add", "Concat", "Reshape", "Gather", "Slice", "Transpose", "Expand",
                                   "ConstantOfShape", "Range", "Tile", "Squeeze", "Unsqueeze", "Split", "If", "Conv"])
    return model


def change_opset(model, rng):
    for opset in model.opset_import:
        opset.version = int(rng.choice([1, 9, 11, 13, 18, onnx.defs.onnx_opset_version(), 10_000]))
    return model


def change_dtype(model, rng):
    target = _pick(rng, [*model.graph.initializer])
    if target is not None:
        target.data_type = int(rng.integers(0, 25))
    return model


MUTATIONS = [truncate, flip_bits, delete_node, delete_node_input, delete_attribute, retype_attribute, clear_field,
             huge_dims, small_ints, delete_output, clash_names, change_op, change_opset, change_dtype]


class _Hang(Exception):
    pass


def _raise_hang(signum, frame):
    raise _Hang


def _import(mutated: onnx.ModelProto | bytes) -> str | None:
    """None when `from_onnx` imports `mutated` or raises an IR error with a message, else what went wrong."""
    start = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, 4 * SECONDS_PER_CASE)
    try:
        from_onnx(mutated)
    except ir.IRError as err:
        if not str(err):
            return f"{type(err).__name__} without a message"
    except _Hang:
        return f"no result in {4 * SECONDS_PER_CASE} s"
    except Exception:  # noqa: BLE001 - any other exception is what the fuzzer looks for
        return traceback.format_exc(limit=-3)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    seconds = time.perf_counter() - start
    return f"took {seconds:.1f} s" if seconds > SECONDS_PER_CASE else None


@pytest.mark.parametrize("seed_name", SEEDS)
def test_mutated_models_import_or_raise_a_frontend_error(seed_name):
    original = SEEDS[seed_name]()
    from_onnx(original)  # the unmutated model imports
    rng = np.random.default_rng(sum(map(ord, seed_name)))
    failures = []
    previous = signal.signal(signal.SIGALRM, _raise_hang)
    try:
        for case in range(CASES_PER_SEED):
            mutated: onnx.ModelProto | bytes = onnx.ModelProto()
            mutated.CopyFrom(original)
            applied = []
            for _ in range(int(rng.integers(1, 3))):
                if isinstance(mutated, onnx.ModelProto):
                    mutation = MUTATIONS[int(rng.integers(len(MUTATIONS)))]
                    mutated = mutation(mutated, rng)
                    applied.append(mutation.__name__)
            problem = _import(mutated)
            if problem is not None:
                failures.append(f"case {case} ({', '.join(applied)}): {problem}")
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not failures, f"{len(failures)} of {CASES_PER_SEED} cases failed:\n" + "\n".join(failures)


CLI_CASES = 40


def test_mutated_models_through_the_command_line_fail_in_one_line(tmp_path, capsys):
    """`eqsat optimize` on mutated files: it optimizes them (exit 0) or refuses them as user error
    (exit 2) in one line on stderr, never an internal error (exit 1) or a traceback."""
    from eqsat.cli import main

    rng = np.random.default_rng(7)
    original = _conv_net()
    failures = []
    for case in range(CLI_CASES):
        mutated: onnx.ModelProto | bytes = onnx.ModelProto()
        mutated.CopyFrom(original)
        mutation = MUTATIONS[int(rng.integers(len(MUTATIONS)))]
        mutated = mutation(mutated, rng)
        path = tmp_path / f"case{case}.onnx"
        path.write_bytes(mutated if isinstance(mutated, bytes) else mutated.SerializeToString())
        status = main(["optimize", str(path), "--iterations", "2", "--quiet"])
        err = capsys.readouterr().err
        if status not in (0, 2) or "Traceback" in err or (status and len(err.splitlines()) != 1):
            failures.append(f"case {case} ({mutation.__name__}): exit {status}: {err[-300:]}")
    assert not failures, "\n".join(failures)
