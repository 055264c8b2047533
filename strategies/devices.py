"""Where values live: numpy arrays on the host, torch tensors on a target's device (optional torch)."""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import numpy as np

from .errors import TargetError
from .target import Target

__all__ = ["torch_available", "require_device", "to_host", "to_torch"]


def torch_available() -> bool:
    """True when torch can be imported (the optional `torch` extra)."""
    return importlib.util.find_spec("torch") is not None


def require_device(target: Target) -> None:
    """Raise `TargetError` unless the machine can run kernels on `target`'s device."""
    if target.device == "cpu":
        return
    if target.device == "cuda":
        if not torch_available():
            raise TargetError(f"target {target} runs its kernels with torch on a CUDA GPU, and torch is not "
                              f"installed (pip install 'relay-eqsat[torch]'); its cost model works without it")
        import torch
        if not torch.cuda.is_available():
            raise TargetError(f"target {target} needs a CUDA GPU and torch sees none; its cost model works without one")
        return
    raise TargetError(f"target {target}: unknown device {target.device!r}")


def to_host(value: Any) -> Any:
    """A numpy array (or tuple of them) from a numpy or torch value."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, tuple):
        return tuple(to_host(v) for v in value)
    return value.detach().cpu().numpy()


def to_torch(value: Any, device: str) -> Any:
    """A torch tensor (or tuple of them) on `device` from a numpy or torch value."""
    import torch
    if isinstance(value, tuple):
        return tuple(to_torch(v, device) for v in value)
    if isinstance(value, np.ndarray):
        with warnings.catch_warnings():  # constants are read-only arrays; the kernels never write their inputs
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(np.ascontiguousarray(value)).to(device)
    return value.to(device)
