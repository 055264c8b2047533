"""The models of a batch: zoo names and ONNX files, found in directories and list files, and loaded
where a task runs.

A source is a zoo model name (see `eqsat models`), an `.onnx` file, a directory (its `.onnx`
files, sorted by name, not recursively), or a list file (any other file: one source per line,
blank lines and `#` comments ignored, paths relative to the list). Anything else (a missing path,
a file of a list that is not `.onnx`, a zoo name that does not exist, two models of one name) is a
`UsageError` naming it, raised before any work starts. A model file that does not import is not:
its task fails, and its row says why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

import ir

from ..cli_errors import UsageError

__all__ = ["ModelSource", "find_models", "load_model"]


@dataclass(frozen=True)
class ModelSource:
    """One model of a batch: its name (that of its result files) and where it comes from."""

    name: str
    source: str
    """a zoo model name or an ONNX file's path."""
    small: bool = False
    """for a zoo model, its tiny test configuration."""

    @property
    def is_file(self) -> bool:
        return self.source not in ir.models.MODELS

    def fingerprint(self) -> str:
        """What identifies the input without reading it: the zoo name and size, or the file's path, size and
        modification time (so a re-run notices a changed file)."""
        if not self.is_file:
            return f"zoo:{self.source}:{'small' if self.small else 'full'}"
        stat = os.stat(self.source)
        return f"file:{os.path.abspath(self.source)}:{stat.st_size}:{stat.st_mtime_ns}"


def _from_list(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read model list {path}: {err}") from None
    entries = [line.split("#", 1)[0].strip() for line in lines]
    return [e if e in ir.models.MODELS or Path(e).is_absolute() else str(path.parent / e) for e in entries if e]


def _expand(source: str, listed_in: str | None = None) -> list[str]:
    """The zoo names and ONNX paths one source stands for."""
    where = f" (listed in {listed_in})" if listed_in else ""
    if source in ir.models.MODELS:
        return [source]
    path = Path(source)
    if path.is_dir():
        if listed_in:
            raise UsageError(f"{source}{where} is a directory; a list names models, zoo names or .onnx files")
        return sorted(str(p) for p in path.iterdir() if p.suffix == ".onnx" and not p.is_dir())
    if not path.exists():
        known = ", ".join(ir.models.MODELS)
        raise UsageError(f"no such model, file or directory {source!r}{where}; a zoo model is one of {known}")
    if path.suffix == ".onnx":
        return [source]
    if listed_in:
        raise UsageError(f"{source}{where} is not an .onnx file or a zoo model name")
    return [item for entry in _from_list(path) for item in _expand(entry, listed_in=source)]


def find_models(sources: Iterable[str], small: bool = False) -> list[ModelSource]:
    """The models `sources` name, in order (see the module docstring); `small` applies to zoo models."""
    found: dict[str, ModelSource] = {}
    for source in sources:
        for item in _expand(str(source)):
            name = item if item in ir.models.MODELS else Path(item).stem
            model = ModelSource(name, item, small)
            if name in found and found[name].source != item:
                raise UsageError(f"two models named {name!r} ({found[name].source} and {item}): their results would "
                                 "share one file; rename one")
            found.setdefault(name, model)
    if not found:
        raise UsageError(f"no model found in {', '.join(map(str, sources)) or 'nothing'}: give zoo model names, "
                         ".onnx files, directories holding them, or list files")
    return list(found.values())


def load_model(model: ModelSource) -> tuple[ir.IRModule, dict[str, np.ndarray]]:
    """The model's module and parameters (ONNX files through `ir.frontend.from_onnx`)."""
    if not model.is_file:
        return ir.models.get(model.source, small=model.small)
    return ir.frontend.from_onnx(model.source)

