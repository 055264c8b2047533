"""Targets: what a program is compiled for, with dispatch keys that fall back to `generic`.

    cpu = Target("cpu")                 # keys ("cpu", "generic"), numpy kernels on the host
    with Target("cuda"):                # Target.current() is cuda inside the block
        ...
    Target("ort", optimizer="disabled", threads=4)   # ONNX Runtime, in the session the program runs in

A strategy or schedule registered for a key applies to every target that lists the key; keys
are tried in order, most specific first, and `generic` comes last.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field

from .errors import TargetError
from .roofline import CPU_ROOFLINE, CUDA_ROOFLINE, Roofline

__all__ = ["Target", "TARGET_KINDS", "ORT_OPTIMIZERS", "as_target"]


@dataclass(frozen=True)
class _Kind:
    keys: tuple[str, ...]
    device: str
    roofline: Roofline
    doc: str


#: the targets shipped: their dispatch keys, the device their kernels run on, their roofline
TARGET_KINDS: dict[str, _Kind] = {
    "cpu": _Kind(("cpu", "generic"), "cpu", CPU_ROOFLINE, "numpy kernels on the host"),
    "cuda": _Kind(("cuda", "gpu", "generic"), "cuda", CUDA_ROOFLINE, "torch kernels on a CUDA GPU"),
    "ort": _Kind(("ort", "cpu", "generic"), "cpu", CPU_ROOFLINE,
                 "host kernels plus ONNX Runtime's fused contrib forms "
                 "(FusedMatMul, BiasGelu, SkipLayerNormalization)"),
}
ORT_OPTIMIZERS = ("disabled", "basic", "extended", "all")
"""ONNX Runtime's graph optimization levels, as an ort target's `optimizer` names them."""
_ALIASES = {"llvm": "cpu", "x86": "cpu", "gpu": "cuda", "onnxruntime": "ort"}
_CURRENT: contextvars.ContextVar[tuple["Target", ...]] = contextvars.ContextVar("strategies_target", default=())


@dataclass(frozen=True)
class Target:
    """A compilation target: a kind, its dispatch keys (ending in `generic`), device and roofline.

    `Target("cpu")`, `Target("cuda")` and `Target("ort")` are shipped; another kind needs its
    `keys` (e.g. `Target("mycpu", keys=("mycpu", "cpu", "generic"))`).

    A target with the `ort` key also names the ONNX Runtime session its programs will run in:
    `optimizer`, the graph optimization level ("all", ONNX Runtime's default, or "disabled",
    "basic", "extended"), and `threads`, its intra-op threads. `threads` defaults to 1 rather than
    ONNX Runtime's all-cores default: one thread is timed by its CPU time, which load on the machine
    barely moves, so a decision taken from timing (`eqsat.speed`) is the same on a quiet and a
    loaded machine.
    """

    kind: str
    keys: tuple[str, ...] = field(default=())
    device: str = ""
    roofline: Roofline | None = None
    optimizer: str = "all"
    threads: int = 1

    def __init__(self, kind: str, keys: tuple[str, ...] | list[str] | None = None, device: str | None = None,
                 roofline: Roofline | None = None, *, optimizer: str | None = None, threads: int | None = None):
        if not isinstance(kind, str) or not kind:
            raise TargetError(f"a target kind must be a non-empty str, got {kind!r}")
        kind = _ALIASES.get(kind, kind)
        known = TARGET_KINDS.get(kind)
        if known is None and keys is None:
            raise TargetError(f"unknown target {kind!r}; known targets are {sorted(TARGET_KINDS)} "
                              f"(a new kind needs its dispatch keys)")
        keys = tuple(keys) if keys is not None else known.keys
        if keys[-1:] != ("generic",):
            keys = keys + ("generic",)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "device", device or (known.device if known else "cpu"))
        object.__setattr__(self, "roofline", roofline or (known.roofline if known else CPU_ROOFLINE))
        if (optimizer is not None or threads is not None) and "ort" not in keys:
            raise TargetError(f"optimizer and threads name an ONNX Runtime session; target {kind!r} runs none")
        if optimizer is not None and optimizer not in ORT_OPTIMIZERS:
            raise TargetError(f"unknown ONNX Runtime optimizer {optimizer!r}; choose from {list(ORT_OPTIMIZERS)}")
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise TargetError(f"threads must be a positive int, got {threads!r}")
        object.__setattr__(self, "optimizer", optimizer or "all")
        object.__setattr__(self, "threads", threads or 1)

    @staticmethod
    def current(allow_none: bool = True) -> "Target | None":
        """The innermost target entered with `with target:`; None (or an error) outside any."""
        stack = _CURRENT.get()
        if stack:
            return stack[-1]
        if not allow_none:
            raise TargetError("no target is current; use `with Target(...):`")
        return None

    def __enter__(self) -> "Target":
        _CURRENT.set(_CURRENT.get() + (self,))
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT.set(_CURRENT.get()[:-1])

    def __str__(self) -> str:
        return self.kind


def as_target(target: "Target | str | None") -> Target:
    """A `Target` from a target or its name; None means `Target.current()`, else an error."""
    if isinstance(target, Target):
        return target
    if target is None:
        return Target.current(allow_none=False)
    return Target(target)
