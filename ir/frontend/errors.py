"""The one error class of the ONNX frontend."""

from __future__ import annotations

from ..errors import IRError

__all__ = ["FrontendError"]


class FrontendError(IRError, ValueError):
    """An ONNX model or IR program that cannot be converted.

    The message names the culprit: the ONNX node (name, op type, opset) or the IR op, and the
    attribute, input or shape that is not supported. Ill-typed graphs raise `ir.TypeInferenceError`
    instead, so every type error reads the same whatever built the graph.
    """
