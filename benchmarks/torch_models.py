"""Real PyTorch models, exported to ONNX by `torch.onnx.export` the way users export them.

The image models are torchvision's own (ResNet-18, MobileNet-v3-Large, EfficientNet-B0, ConvNeXt-T,
DenseNet-121, ShuffleNet-v2: channel counts that are not whole NCHWc blocks; DeepLabV3 on
MobileNet-v3-Large for segmentation),
the encoders come from `transformers` (BERT-base, DistilBERT; eager attention; at the small size
`SMALL_LAYERS` of their layers, as ViT's); all with random
weights (batch-norm statistics drawn at random too, since fresh ones are the identity), so nothing
is downloaded. Each exports through either of torch's exporters: `torchscript` (the tracer,
`dynamo=False`, opset 17) or `dynamo` (`torch.export` and onnxscript, opset 18), whose graphs spell
the same layers differently. `export(name, exporter=...)` gives the ONNX model and
`input_feed(model)` an input for it. Needs torch and torchvision (transformers for the encoders);
`Unavailable` says which is missing.

torchvision's wheels need a torch of their own, so the exports can be written in another environment
and read back: `python -m benchmarks.torch_models DIR` (there) writes each as `DIR/NAME_EXPORTER.onnx`
(`_small` before the suffix with `--small`), and `export(..., saved=DIR)` reads one that is there
(`bench_exports --saved DIR`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import sys
from typing import Any, Callable, Sequence

import numpy as np
import onnx

__all__ = ["EXPORTERS", "EXPORTS", "Unavailable", "export", "input_feed"]

#: exporter -> the opset it exports at (the dynamo exporter starts at 18)
EXPORTERS = {"torchscript": 17, "dynamo": 18}


class Unavailable(RuntimeError):
    """A package an export needs is not installed."""


def _require(*packages: str) -> None:
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    if missing:
        raise Unavailable(f"{', '.join(missing)} not installed")


def _randomize_norms(torch: Any, module: Any) -> Any:
    """Batch-norm statistics and affine parts drawn at random (fresh ones are the identity)."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.1, generator=generator)
                m.running_var.uniform_(0.5, 1.5, generator=generator)
                m.weight.uniform_(0.5, 1.5, generator=generator)
                m.bias.normal_(0, 0.1, generator=generator)
    return module.eval()


Build = Callable[[int, str, bool], onnx.ModelProto]
"""build(size, exporter, small): a model exported at an image side or sequence length; `small`
keeps `SMALL_LAYERS` of a transformer's layers."""

SMALL_LAYERS = 2
"""the layers a transformers model keeps at the small size (the tests' size)."""


def _torchvision(name: str) -> Build:
    """torchvision's model `name` (random weights) exported at an image side; a segmentation model's
    output is its `out` map (its backbone random too: nothing is downloaded)."""
    def build(image: int, exporter: str, small: bool) -> onnx.ModelProto:
        _require("torch", "torchvision")
        import torch
        import torchvision
        torch.manual_seed(0)
        if hasattr(torchvision.models.segmentation, name):
            segmentation = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)
            module = _out_map(torch, _randomize_norms(torch, segmentation))
        else:
            module = _randomize_norms(torch, getattr(torchvision.models, name)())
        return _export(torch, module, (torch.randn(1, 3, image, image),), ["x"], exporter)
    return build


def _out_map(torch: Any, model: Any) -> Any:
    """`model` with its dict output's `out` entry as its one output."""
    class OutMap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(x)["out"]
    return OutMap().eval()


def _layers(config: Any, small: bool) -> Any:
    """`config`, with `SMALL_LAYERS` layers when `small`."""
    if small:
        config.num_hidden_layers = SMALL_LAYERS
    return config


def _encoder(config_name: str, model_name: str) -> Build:
    """A transformers encoder (default configuration, random weights) over a sequence of token ids
    with an attention mask, exported at a sequence length; its output is the last hidden state."""
    def build(sequence: int, exporter: str, small: bool) -> onnx.ModelProto:
        _require("torch", "transformers")
        import torch
        import transformers
        torch.manual_seed(0)
        config = _layers(getattr(transformers, config_name)(attn_implementation="eager"), small)
        model = getattr(transformers, model_name)(config).eval()

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, ids, mask):
                return self.model(input_ids=ids, attention_mask=mask).last_hidden_state

        ids = torch.randint(0, config.vocab_size, (1, sequence))
        return _export(torch, Encoder().eval(), (ids, torch.ones_like(ids)), ["ids", "mask"], exporter)
    return build


def _vit() -> Build:
    """transformers' ViT (default configuration: ViT-B/16, random weights) over an image of a side; its
    output is the last hidden state."""
    def build(image: int, exporter: str, small: bool) -> onnx.ModelProto:
        _require("torch", "transformers")
        import torch
        import transformers
        torch.manual_seed(0)
        config = _layers(transformers.ViTConfig(image_size=image, attn_implementation="eager"), small)
        model = transformers.ViTModel(config, add_pooling_layer=False).eval()

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, x):
                return self.model(pixel_values=x).last_hidden_state

        return _export(torch, Encoder().eval(), (torch.randn(1, 3, image, image),), ["x"], exporter)
    return build


def _export(torch: Any, module: Any, example: tuple, names: list[str], exporter: str) -> onnx.ModelProto:
    if exporter not in EXPORTERS:
        raise ValueError(f"unknown exporter {exporter!r}; expected one of {sorted(EXPORTERS)}")
    buffer = io.BytesIO()
    # the dynamo exporter reports its steps on stdout, which benchmarks keep for their tables
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
        torch.onnx.export(module, example, buffer, input_names=names, opset_version=EXPORTERS[exporter],
                          dynamo=exporter == "dynamo")
    return onnx.load_from_string(buffer.getvalue())


#: name -> (export at a size with an exporter, full size, small size); the size is the image side or
#: the sequence length
EXPORTS: dict[str, tuple[Build, int, int]] = {
    "resnet18": (_torchvision("resnet18"), 224, 64),
    "mobilenet_v3_large": (_torchvision("mobilenet_v3_large"), 224, 64),
    "efficientnet_b0": (_torchvision("efficientnet_b0"), 224, 64),
    "convnext_tiny": (_torchvision("convnext_tiny"), 224, 64),
    "densenet121": (_torchvision("densenet121"), 224, 64),
    "shufflenet_v2_x1_0": (_torchvision("shufflenet_v2_x1_0"), 224, 64),
    "deeplabv3_mobilenet_v3_large": (_torchvision("deeplabv3_mobilenet_v3_large"), 224, 64),
    "bert": (_encoder("BertConfig", "BertModel"), 128, 16),
    "distilbert": (_encoder("DistilBertConfig", "DistilBertModel"), 128, 16),
    "vit_b16": (_vit(), 224, 32),
}


def saved_path(folder: str, name: str, small: bool, exporter: str) -> str:
    """Where `python -m benchmarks.torch_models folder` writes the export of `name`."""
    return os.path.join(folder, f"{name}_{exporter}{'_small' if small else ''}.onnx")


def export(name: str, small: bool = False, exporter: str = "torchscript", saved: str | None = None) -> onnx.ModelProto:
    """The ONNX export of model `name` at its full or small size, by `exporter` (see `EXPORTERS`); read
    from the folder `saved` where it was written there."""
    if saved is not None and os.path.exists(saved_path(saved, name, small, exporter)):
        return onnx.load(saved_path(saved, name, small, exporter))
    build, full, reduced = EXPORTS[name]
    return build(reduced if small else full, exporter, small)


def export_arguments(parser: argparse.ArgumentParser) -> None:
    """A benchmark's `--models`, `--exporters` and `--saved` (read by `export_rows`)."""
    parser.add_argument("--models", default=",".join(EXPORTS), help="comma-separated models")
    parser.add_argument("--exporters", default=",".join(EXPORTERS), help="comma-separated exporters")
    parser.add_argument("--saved", help="a folder of exports written by `python -m benchmarks.torch_models`")


def export_rows(parser: argparse.ArgumentParser, args: argparse.Namespace, measure: Callable[[str, str], dict],
                line: Callable[[dict], str]) -> list[dict]:
    """`measure(model, exporter)` for each model and exporter named (`export_arguments`), each row's
    `line` printed as it comes; a model whose library is missing is skipped, saying so."""
    from benchmarks.report import checked_choices
    names = checked_choices(parser, args, args.models, list(EXPORTS), "models")
    exporters = checked_choices(parser, args, args.exporters, list(EXPORTERS), "exporters")
    rows: list[dict] = []
    for name in names:
        for exporter in exporters:
            try:
                rows.append(measure(name, exporter))
            except Unavailable as err:
                print(f"{name}: skipped ({err})", file=sys.stderr)
                break
            print(f"{name} ({exporter}): {line(rows[-1])}", file=sys.stderr, flush=True)
    return rows


def input_feed(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Random inputs for an exported model: images in N(0, 1), token ids below 1000, a full mask."""
    rng = np.random.default_rng(seed)
    feed = {}
    for value in model.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        if value.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            feed[value.name] = rng.standard_normal(shape).astype(np.float32)
        elif value.name == "mask":
            feed[value.name] = np.ones(shape, np.int64)
        else:
            feed[value.name] = rng.integers(0, 1000, shape).astype(np.int64)
    return feed


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write the exports to a folder (see the module's docstring).")
    parser.add_argument("folder")
    parser.add_argument("--models", default=",".join(EXPORTS), help="comma-separated models")
    parser.add_argument("--exporters", default=",".join(EXPORTERS), help="comma-separated exporters")
    parser.add_argument("--small", action="store_true",
                        help=f"small inputs (64x64 images, 16 tokens) and {SMALL_LAYERS} transformer layers")
    args = parser.parse_args(argv)
    os.makedirs(args.folder, exist_ok=True)
    for name in args.models.split(","):
        for exporter in args.exporters.split(","):
            try:
                model = export(name, args.small, exporter)
            except Unavailable as err:
                print(f"{name}: skipped ({err})", file=sys.stderr)
                break
            onnx.save(model, saved_path(args.folder, name, args.small, exporter))
            print(f"{name} ({exporter}): {len(model.graph.node)} nodes", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
