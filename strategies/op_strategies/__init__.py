"""Strategy registrations per op family; importing this package registers them all.

`generic` first (every op on the host, and the `cpu` key), then the families that give cpu
faster competing kernels (convolution, dense and matmul, erf, normalisation, pooling), the ONNX
Runtime contrib forms, and the torch-backed strategies (every op on cuda; extra competitors on
cpu when torch is installed).
"""

from . import generic  # noqa: F401  (registration order matters: generic first, torch_backed last)
from . import conv2d, contrib, dense, elementwise, norm, pool  # noqa: F401
from . import rotary  # noqa: F401  (nn.rotary_embedding on ort)
from . import torch_backed  # noqa: F401
from . import nchwc  # noqa: F401  (after torch_backed: the blocked convolutions run on the ort target only)
