"""The channel block of ONNX Runtime's NCHWc kernels on this machine, asked of the installed ONNX Runtime.

Needs `onnx`; without `onnxruntime` there is no block size (None).
"""

from __future__ import annotations

import functools
import os
import tempfile

import numpy as np

__all__ = ["NCHWC_DOMAIN", "ort_nchwc_block_size"]

#: ONNX Runtime's domain of the NCHWc kernels
NCHWC_DOMAIN = "com.microsoft.nchwc"


@functools.lru_cache(maxsize=1)
def ort_nchwc_block_size() -> int | None:
    """The channel block of the installed ONNX Runtime's NCHWc kernels on this machine (None without it).

    MLAS decides it from the CPU (`MlasNchwcGetBlockSize`) and Python cannot ask it directly, so
    this optimizes a one-channel convolution with ONNX Runtime's layout transformer on and reads the
    padded channel count of the reordered weight in the saved graph.
    """
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    weight = numpy_helper.from_array(np.ones((1, 4, 1, 1), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "probe",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 2])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.optimized_model_filepath = os.path.join(tmp, "probe.onnx")
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        optimized = onnx.load(options.optimized_model_filepath)
    if not any(n.domain == NCHWC_DOMAIN for n in optimized.graph.node):
        return None
    weights = [list(t.dims) for t in optimized.graph.initializer if len(t.dims) == 4]
    return int(weights[0][0]) if weights else None
