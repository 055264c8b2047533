"""Models exported by PyTorch with dynamic axes (`torch.onnx.export(..., dynamic_axes=...)`): a CNN
with a symbolic batch, and a Hugging Face BERT encoder with a symbolic batch and sequence length
(its position ids are a slice of a buffer to the sequence length, read when the model runs). Each
imports, optimizes once for the `ort` target and runs at several sizes from that one program, on
the executor and exported to ONNX Runtime. Skipped without torch (and transformers for BERT)."""

from __future__ import annotations

import io

import numpy as np
import onnx
import pytest

from tests.ir.frontend.test_run_time_shapes import check_runs

torch = pytest.importorskip("torch")


def export(module, example: tuple, names: list[str], axes: dict, dynamo: bool = False) -> onnx.ModelProto:
    """The TorchScript exporter's model with `dynamic_axes`, or the dynamo exporter's with the same
    axes as `torch.export.Dim`s."""
    if dynamo:
        pytest.importorskip("onnxscript")
        shapes = {name: {axis: torch.export.Dim(dim) for axis, dim in axes[name].items()} for name in names}
        return torch.onnx.export(module.eval(), example, input_names=names, dynamic_shapes=shapes,
                                 dynamo=True).model_proto
    buffer = io.BytesIO()
    torch.onnx.export(module.eval(), example, buffer, input_names=names, dynamic_axes=axes, dynamo=False,
                      opset_version=17)
    return onnx.load_from_string(buffer.getvalue())


def test_cnn_with_a_dynamic_batch():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 10))
    proto = export(net, (torch.randn(2, 3, 8, 8),), ["x"], {"x": {0: "batch"}})
    rng = np.random.default_rng(0)
    check_runs(proto, [{"x": rng.standard_normal((b, 3, 8, 8)).astype(np.float32)} for b in (1, 4)])


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
@pytest.mark.parametrize("axes", [{0: "batch"}, {0: "batch", 1: "sequence"}], ids=["batch", "batch-and-sequence"])
def test_bert_with_dynamic_axes(axes, dynamo):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                     vocab_size=100, max_position_embeddings=64, attn_implementation="eager")
    bert = transformers.BertModel(config)

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, ids):
            out = self.bert(input_ids=ids)
            return out.last_hidden_state, out.pooler_output

    proto = export(Encoder(), (torch.randint(0, 100, (2, 8)),), ["ids"], {"ids": axes}, dynamo)
    rng = np.random.default_rng(0)
    sizes = [(1, 8), (4, 8)] if len(axes) == 1 else [(1, 5), (4, 12)]
    check_runs(proto, [{"ids": rng.integers(0, 100, size).astype(np.int64)} for size in sizes])
