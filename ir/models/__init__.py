"""The model zoo: published CNNs, BERT and the TASO/TENSAT benchmark graphs, built with `ir.relay`.

    import ir
    mod, params = ir.models.resnet50(batch=1, image=224)      # full size, seeded random weights
    mod, params = ir.models.get("bert", small=True)           # tiny but structurally complete
    mod, _ = ir.models.get("vgg19", weights=False)            # graph only: params == {}
    ir.models.count_parameters(mod)                           # 143,667,240

Every builder takes keyword arguments only and returns `(mod, params)`:

- `mod["main"]` is type-checked. Its parameters are the data input(s) first, then every weight as
  a `Var` with a static float32 `TensorType`, in creation order. Main's `data_inputs` attribute
  names the data inputs, which is how `count_parameters` tells them from weights.
- `params` maps each weight's name to a float32 array of exactly its shape, drawn from
  `numpy.random.default_rng(seed)` (`seed=0`): the same seed gives identical arrays. Scales keep
  float32 activations finite through the whole network (He-normal convolutions and dense layers,
  batch-norm scale and moving variance uniform in [0.8, 1.2], N(0, 0.02) for BERT). With
  `weights=False` nothing is drawn and `params == {}`, which builds full-size graphs fast.
- Sizes are parameters: `batch`, `image` (height = width) and `width` (a channel multiplier)
  for CNNs, `layers` where a depth is meaningful, and `hidden`, `heads`, `seq_len`, `vocab` for
  BERT. Defaults are the published architectures.
- CNNs take `data` `[batch, 3, image, image]` (NCHW) and return logits `[batch, num_classes]`
  without a softmax; `num_classes=None` returns the last feature map instead. BERT returns the
  tuple `(sequence_output, pooled_output)`.
- Layers use TVM's standard Relay forms (`nn.conv2d -> nn.batch_norm -> TupleGetItem(0) ->
  nn.relu`, `nn.dense -> nn.bias_add`, ...), so Relay fusion patterns find them.

Weight names are `<layer>_weight`, `<layer>_bias`, `<layer>_bn_gamma`, `<layer>_bn_beta`,
`<layer>_bn_moving_mean` and `<layer>_bn_moving_var`; `count_parameters(trainable_only=True)`
leaves out names ending in `moving_mean`/`moving_var` (or PyTorch's `running_mean`/`running_var`),
matching PyTorch's count of trainable parameters.
"""

from __future__ import annotations

from .bert import bert
from .count import count_parameters, is_moving_statistic
from .inception import inception_v3
from .mobilenet import mobilenet_v2
from .nasnet import nasneta
from .nasrnn import nasrnn
from .registry import MODELS, ModelEntry, UnknownModelError, get, list_models
from .resnet import resnet50, resnext50
from .squeezenet import squeezenet
from .vgg import vgg19

__all__ = [
    "resnet50", "resnext50", "vgg19", "squeezenet", "inception_v3", "mobilenet_v2", "bert", "nasrnn", "nasneta",
    "MODELS", "ModelEntry", "UnknownModelError", "get", "list_models", "count_parameters", "is_moving_statistic",
]
