"""Real network architectures as PyTorch modules, exported by `torch.onnx.export` as users export them.

ResNet-18 (He et al. 2016), MobileNet-v3-Large (Howard et al. 2019), EfficientNet-B0 (Tan & Le
2019) and ConvNeXt-T (Liu et al. 2022) are written here from their papers' layer tables, with
random weights and batch-norm statistics, so that no model download (nor torchvision) is needed;
DistilBERT comes from `transformers` (random weights, eager attention). `export(name)` gives the
ONNX model and `input_feed(name, model)` an input for it. Needs torch (and transformers for
DistilBERT); `Unavailable` says which is missing.
"""

from __future__ import annotations

import importlib.util
import io
from typing import Any, Callable

import numpy as np
import onnx

__all__ = ["EXPORTS", "Unavailable", "export", "input_feed"]

OPSET = 17


class Unavailable(RuntimeError):
    """A package an export needs is not installed."""


def _require(*packages: str) -> None:
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    if missing:
        raise Unavailable(f"{', '.join(missing)} not installed")


def _conv_bn(torch: Any, cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1,
             act: Any = None) -> Any:
    layers = [torch.nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
              torch.nn.BatchNorm2d(cout)]
    return torch.nn.Sequential(*layers, *([act] if act is not None else []))


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


def resnet18(torch: Any, classes: int = 1000) -> Any:
    nn = torch.nn

    class Basic(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int):
            super().__init__()
            self.body = nn.Sequential(_conv_bn(torch, cin, cout, 3, stride, act=nn.ReLU()), _conv_bn(torch, cout, cout, 3))
            self.skip = _conv_bn(torch, cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    stages, cin = [], 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        stages += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
        cin = cout
    return nn.Sequential(_conv_bn(torch, 3, 64, 7, 2, act=nn.ReLU()), nn.MaxPool2d(3, 2, 1), *stages,
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes))


def _squeeze_excite(torch: Any, channels: int, squeezed: int, gate: Any, inner: Any) -> Any:
    nn = torch.nn

    class SqueezeExcite(nn.Module):
        def __init__(self):
            super().__init__()
            self.reduce, self.expand = nn.Conv2d(channels, squeezed, 1), nn.Conv2d(squeezed, channels, 1)
            self.inner, self.gate = inner, gate

        def forward(self, x):
            scale = torch.nn.functional.adaptive_avg_pool2d(x, 1)
            return x * self.gate(self.expand(self.inner(self.reduce(scale))))

    return SqueezeExcite()


def _inverted_residual(torch: Any, cin: int, expanded: int, cout: int, kernel: int, stride: int, act: Any,
                       se: Any | None) -> Any:
    """An inverted residual block: 1x1 expansion, depthwise conv, squeeze-excite, 1x1 projection."""
    nn = torch.nn
    layers = [] if expanded == cin else [_conv_bn(torch, cin, expanded, 1, act=act())]
    layers.append(_conv_bn(torch, expanded, expanded, kernel, stride, groups=expanded, act=act()))
    if se is not None:
        layers.append(se(expanded))
    layers.append(_conv_bn(torch, expanded, cout, 1))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.residual = nn.Sequential(*layers), stride == 1 and cin == cout

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    return Block()


#: MobileNet-v3-Large (Howard et al. 2019, Table 1): kernel, expansion, output, squeeze-excite, hard-swish, stride
_MOBILENET_V3_LARGE = [(3, 16, 16, 0, 0, 1), (3, 64, 24, 0, 0, 2), (3, 72, 24, 0, 0, 1), (5, 72, 40, 1, 0, 2),
                       (5, 120, 40, 1, 0, 1), (5, 120, 40, 1, 0, 1), (3, 240, 80, 0, 1, 2), (3, 200, 80, 0, 1, 1),
                       (3, 184, 80, 0, 1, 1), (3, 184, 80, 0, 1, 1), (3, 480, 112, 1, 1, 1), (3, 672, 112, 1, 1, 1),
                       (5, 672, 160, 1, 1, 2), (5, 960, 160, 1, 1, 1), (5, 960, 160, 1, 1, 1)]


def _divisible(value: float, by: int = 8) -> int:
    """Channels rounded to a multiple of 8, never below 90% of `value` (the papers' rounding)."""
    rounded = max(by, int(value + by / 2) // by * by)
    return rounded + by if rounded < 0.9 * value else rounded


def mobilenet_v3_large(torch: Any, classes: int = 1000) -> Any:
    nn = torch.nn

    def se(channels: int) -> Any:
        return _squeeze_excite(torch, channels, _divisible(channels / 4), nn.Hardsigmoid(), nn.ReLU())

    blocks, cin = [], 16
    for kernel, expanded, cout, use_se, hswish, stride in _MOBILENET_V3_LARGE:
        blocks.append(_inverted_residual(torch, cin, expanded, cout, kernel, stride,
                                         nn.Hardswish if hswish else nn.ReLU, se if use_se else None))
        cin = cout
    return nn.Sequential(_conv_bn(torch, 3, 16, 3, 2, act=nn.Hardswish()), *blocks,
                         _conv_bn(torch, cin, 960, 1, act=nn.Hardswish()), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(960, 1280), nn.Hardswish(), nn.Linear(1280, classes))


#: EfficientNet-B0 (Tan & Le 2019, Table 1): expansion, kernel, stride, output channels, repeats
_EFFICIENTNET_B0 = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
                    (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]


def efficientnet_b0(torch: Any, classes: int = 1000) -> Any:
    nn = torch.nn
    blocks, cin = [], 32
    for expansion, kernel, stride, cout, repeats in _EFFICIENTNET_B0:
        for i in range(repeats):
            squeezed = max(1, cin // 4)  # a quarter of the block's input channels

            def se(channels: int, squeezed: int = squeezed) -> Any:
                return _squeeze_excite(torch, channels, squeezed, nn.Sigmoid(), nn.SiLU())

            blocks.append(_inverted_residual(torch, cin, cin * expansion, cout, kernel, stride if i == 0 else 1,
                                             nn.SiLU, se))
            cin = cout
    return nn.Sequential(_conv_bn(torch, 3, 32, 3, 2, act=nn.SiLU()), *blocks, _conv_bn(torch, cin, 1280, 1, act=nn.SiLU()),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, classes))


def convnext_tiny(torch: Any, classes: int = 1000) -> Any:
    """ConvNeXt-T (Liu et al. 2022): depths 3-3-9-3, widths 96-768; layer norm over channels."""
    nn = torch.nn

    class ChannelNorm(nn.LayerNorm):
        """Layer norm over the channel axis of an NCHW tensor."""

        def forward(self, x):
            return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    class Block(nn.Module):
        def __init__(self, dim: int):
            super().__init__()
            self.depthwise = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
            self.norm = nn.LayerNorm(dim, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            self.scale = nn.Parameter(torch.full((dim,), 0.1))

        def forward(self, x):
            y = self.mlp(self.norm(self.depthwise(x).permute(0, 2, 3, 1))) * self.scale
            return x + y.permute(0, 3, 1, 2)

    dims, layers = (96, 192, 384, 768), []
    for i, (dim, depth) in enumerate(zip(dims, (3, 3, 9, 3))):
        if i == 0:
            layers += [nn.Conv2d(3, dim, 4, 4), ChannelNorm(dim, eps=1e-6)]
        else:
            layers += [ChannelNorm(dims[i - 1], eps=1e-6), nn.Conv2d(dims[i - 1], dim, 2, 2)]
        layers += [Block(dim) for _ in range(depth)]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(768, eps=1e-6),
                         nn.Linear(768, classes))


def _image_export(make: Callable[[Any], Any]) -> Callable[[int], onnx.ModelProto]:
    def build(image: int) -> onnx.ModelProto:
        _require("torch")
        import torch
        torch.manual_seed(0)
        module = _randomize_norms(torch, make(torch))
        return _export(torch, module, (torch.randn(1, 3, image, image),), ["x"])
    return build


def _distilbert(sequence: int) -> onnx.ModelProto:
    _require("torch", "transformers")
    import torch
    import transformers
    torch.manual_seed(0)
    config = transformers.DistilBertConfig(attn_implementation="eager")
    model = transformers.DistilBertModel(config).eval()

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, mask):
            return self.model(input_ids=ids, attention_mask=mask).last_hidden_state

    ids = torch.randint(0, config.vocab_size, (1, sequence))
    return _export(torch, Encoder().eval(), (ids, torch.ones_like(ids)), ["ids", "mask"])


def _export(torch: Any, module: Any, example: tuple, names: list[str]) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(module, example, buffer, input_names=names, opset_version=OPSET, dynamo=False)
    return onnx.load_from_string(buffer.getvalue())


#: name -> (export at a size, full size, small size); the size is the image side or the sequence length
EXPORTS: dict[str, tuple[Callable[[int], onnx.ModelProto], int, int]] = {
    "resnet18": (_image_export(resnet18), 224, 64),
    "mobilenet_v3_large": (_image_export(mobilenet_v3_large), 224, 64),
    "efficientnet_b0": (_image_export(efficientnet_b0), 224, 64),
    "convnext_tiny": (_image_export(convnext_tiny), 224, 64),
    "distilbert": (_distilbert, 128, 16),
}


def export(name: str, small: bool = False) -> onnx.ModelProto:
    """The ONNX export of model `name` at its full or small size."""
    build, full, reduced = EXPORTS[name]
    return build(reduced if small else full)


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
