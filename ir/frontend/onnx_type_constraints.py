"""ONNX type constraints, checked before a model is written (`to_onnx` calls `legalize_types`).

Each node of the standard domain must give every input and output an element type that its
schema's type constraint allows (`onnx.defs.get_schema(op, opset).type_constraints`): ONNX has no
int8 `MatMul` or int8 `ReduceSum`, for instance. An integer node of an op that commutes with
widening (`WIDENABLE`: the same result computed in int32 and cast back, wrapping as the narrow
type does) is written as that legal form, `Cast` around it; any other violation is a
`FrontendError` naming the node, the op, the input or output and its dtype.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import onnx
from onnx import TensorProto

from .errors import FrontendError

__all__ = ["legalize_types", "WIDENABLE"]

WIDENABLE = frozenset({"MatMul", "Gemm", "ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "Relu", "Max", "Min",
                       "Sum", "Neg", "Abs", "Clip", "Mul", "Add", "Sub"})
"""ops whose integer result, computed in a wider integer type and cast back, is the narrow result
(modular arithmetic, or an order-preserving selection)."""

_WIDER = {"int8": ("int32", "int64"), "int16": ("int32", "int64"), "int32": ("int64",),
          "uint8": ("int32", "int64", "uint32", "uint64"), "uint16": ("int32", "int64", "uint32", "uint64"),
          "uint32": ("int64", "uint64")}
"""wider types to compute in, most widely run first (ONNX Runtime has int32 / int64 kernels of most ops)."""


def _type_str(elem: int) -> str:
    return f"tensor({TensorProto.DataType.Name(elem).lower()})"


def _dtype(elem: int) -> str:
    return TensorProto.DataType.Name(elem).lower()


def _elem_types(model: onnx.ModelProto) -> dict[str, int]:
    """The element type of every value of the main graph, by ONNX type inference on a copy without
    initializer data (types only; shapes that need the data stay unknown)."""
    graph = model.graph
    inputs = list(graph.input) + [onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                                  for t in graph.initializer]
    light = onnx.helper.make_graph(graph.node, graph.name, inputs, graph.output)
    bare = onnx.helper.make_model(light, opset_imports=model.opset_import, ir_version=model.ir_version)
    try:
        bare = onnx.shape_inference.infer_shapes(bare)
    except Exception:  # noqa: BLE001 (inference is best effort: unknown types are not checked)
        pass
    types = {}
    for info in (*bare.graph.input, *bare.graph.value_info, *bare.graph.output):
        if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type:
            types[info.name] = info.type.tensor_type.elem_type
    return types


def _bindings(node: onnx.NodeProto, schema, types: Mapping[str, int]) -> list[tuple[str, str, str, int]]:
    """(input/output, value name, type string of the formal parameter, element type) per known value."""
    out = []
    for kind, formals, actuals in (("input", schema.inputs, node.input), ("output", schema.outputs, node.output)):
        for i, name in enumerate(actuals):
            if not name or name not in types or not formals:
                continue
            formal = formals[min(i, len(formals) - 1)]
            out.append((kind, name, formal.type_str, types[name]))
    return out


def _violations(node: onnx.NodeProto, schema, types: Mapping[str, int]) -> list[tuple[str, str, str, int, tuple]]:
    allowed = {c.type_param_str: tuple(c.allowed_type_strs) for c in schema.type_constraints}
    bad = []
    for kind, name, type_str, elem in _bindings(node, schema, types):
        legal = allowed.get(type_str, (type_str,))
        if _type_str(elem) not in legal:
            bad.append((kind, name, type_str, elem, legal))
    return bad


def _widened(node: onnx.NodeProto, schema, types: Mapping[str, int], bad: list) -> list[onnx.NodeProto] | None:
    """`node` computed in a wider integer type with `Cast` around it, or None when no such form exists."""
    params = {param for _, _, param, _, _ in bad}
    elems = {elem for _, _, _, elem, _ in bad}
    if node.op_type not in WIDENABLE or len(params) != 1 or len(elems) != 1:
        return None
    param, elem = params.pop(), elems.pop()
    legal = next(tuple(c.allowed_type_strs) for c in schema.type_constraints if c.type_param_str == param)
    wide = next((w for w in _WIDER.get(_dtype(elem), ()) if f"tensor({w})" in legal), None)
    if wide is None:
        return None
    wide_elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(wide))
    bound = {name for _, name, type_str, _ in _bindings(node, schema, types) if type_str == param}
    before, after = [], []
    new = onnx.NodeProto()
    new.CopyFrom(node)
    for i, name in enumerate(node.input):
        if name in bound:
            cast = f"{name}__as_{wide}__{node.output[0]}"
            before.append(onnx.helper.make_node("Cast", [name], [cast], name=cast, to=wide_elem))
            new.input[i] = cast
    for i, name in enumerate(node.output):
        if name in bound:
            new.output[i] = f"{name}__{wide}"
            after.append(onnx.helper.make_node("Cast", [new.output[i]], [name], name=f"{name}__cast", to=elem))
    return [*before, new, *after]


def legalize_types(model: onnx.ModelProto) -> None:
    """Check every standard-domain node of `model`'s main graph (in place; `If` subgraphs are not
    checked) against its schema's type constraints; write a widened form of the integer ops in
    `WIDENABLE`, raise `FrontendError` for any other violation."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        return
    types = _elem_types(model)
    nodes: list[onnx.NodeProto] = []
    changed = False
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            nodes.append(node)
            continue
        try:
            schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
        except onnx.defs.SchemaError:
            nodes.append(node)
            continue
        bad = _violations(node, schema, types)
        if not bad:
            nodes.append(node)
            continue
        widened = _widened(node, schema, types, bad)
        if widened is None:
            kind, name, param, elem, legal = bad[0]
            raise FrontendError(f"node {node.name or node.output[0]!r} ({node.op_type}, opset {opset}): {kind} "
                                f"{name!r} has element type {_dtype(elem)}, which ONNX {node.op_type} does not "
                                f"accept for {param} (allowed: {', '.join(legal)})")
        nodes.extend(widened)
        changed = True
    if changed:
        del model.graph.node[:]
        model.graph.node.extend(nodes)
