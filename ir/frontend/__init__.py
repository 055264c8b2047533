"""ONNX import and export (needs the `onnx` extra): `from_onnx(model)` and `to_onnx(mod, params)`.

    mod, params = ir.frontend.from_onnx("model.onnx", shape={"input": (1, 3, 224, 224)})
    model = ir.frontend.to_onnx(mod, params)          # an onnx.ModelProto that ONNX Runtime runs
"""

from __future__ import annotations

try:
    import onnx  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError("ir.frontend needs the `onnx` package: pip install 'relay-eqsat[onnx]'") from err

from . import import_attention, import_indexing, import_piecewise  # noqa: F401  (register their converters)
from . import export_rotary, import_rotary  # noqa: F401  (nn.rotary_embedding's emitters and converter)
from .errors import FrontendError
from .onnx_export import DEFAULT_OPSET, to_onnx
from .onnx_import import from_onnx, load_model

__all__ = ["from_onnx", "to_onnx", "load_model", "FrontendError", "DEFAULT_OPSET"]
