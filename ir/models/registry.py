"""The zoo's registry: every model's builder, documentation and a tiny test configuration."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from ..module import IRModule
from .bert import bert
from .inception import inception_v3
from .mobilenet import mobilenet_v2
from .nasnet import nasneta
from .nasrnn import nasrnn
from .resnet import resnet50, resnext50
from .squeezenet import squeezenet
from .vgg import vgg19

__all__ = ["ModelEntry", "MODELS", "UnknownModelError", "get", "list_models"]

Builder = Callable[..., tuple[IRModule, dict[str, np.ndarray]]]


class UnknownModelError(LookupError):
    """A model name that is not in the zoo; the message lists the valid names."""


@dataclass(frozen=True)
class ModelEntry:
    """A zoo model: its builder and the keyword arguments of a tiny, structurally complete configuration."""

    name: str
    builder: Builder
    small: Mapping[str, Any] = field(default_factory=dict)

    @property
    def doc(self) -> str:
        """The builder's docstring."""
        return inspect.getdoc(self.builder) or ""

    @property
    def summary(self) -> str:
        """The first line of the docstring."""
        return self.doc.split("\n", 1)[0]

    def build(self, small: bool = False, **kwargs: Any) -> tuple[IRModule, dict[str, np.ndarray]]:
        """Call the builder; `small` starts from the tiny configuration, `kwargs` override it."""
        return self.builder(**{**(self.small if small else {}), **kwargs})


def _entry(builder: Builder, **small: Any) -> tuple[str, ModelEntry]:
    return builder.__name__, ModelEntry(builder.__name__, builder, MappingProxyType(small))


#: name -> entry, in a fixed order
MODELS: Mapping[str, ModelEntry] = MappingProxyType(dict([
    _entry(resnet50, image=32, width=0.25, num_classes=10),
    _entry(resnext50, image=32, width=0.25, num_classes=10),
    _entry(vgg19, image=32, width=0.125, num_classes=10),
    _entry(squeezenet, image=32, width=0.25, num_classes=10),
    _entry(inception_v3, image=75, width=0.125, num_classes=10),
    _entry(mobilenet_v2, image=32, width=0.25, num_classes=10),
    _entry(bert, layers=2, hidden=64, heads=4, seq_len=16, vocab=100),
    _entry(nasrnn, seq_len=3, hidden=32),
    _entry(nasneta, image=32, width=0.125, layers=2, num_classes=10),
]))


def list_models() -> list[str]:
    """The zoo's model names, in registry order."""
    return list(MODELS)


def get(name: str, small: bool = False, **kwargs: Any) -> tuple[IRModule, dict[str, np.ndarray]]:
    """Build the zoo model `name` (its tiny test configuration when `small`), with `kwargs` overriding."""
    try:
        entry = MODELS[name]
    except (KeyError, TypeError):
        raise UnknownModelError(f"unknown model {name!r}; the zoo has: {', '.join(MODELS)}") from None
    return entry.build(small=small, **kwargs)
