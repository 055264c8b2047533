"""IRModule: named functions, `main` first, as in TVM."""

from __future__ import annotations

from typing import Iterator

from .expr import Expr, Function
from .visitor import free_vars

__all__ = ["IRModule", "entry_function", "INPUT_DEFAULTS", "input_defaults", "OUTPUT_NAMES", "output_names"]

#: the attribute of `main` naming its parameters that are inputs with a default value (an ONNX graph
#: input that an initializer also defines): the default travels in `params` like a weight's value, but
#: the parameter is never bound to it (a caller may feed another value), and export keeps it an input
INPUT_DEFAULTS = "input_defaults"

#: the attribute of `main` naming its outputs, in order, as the ONNX model it was imported from does:
#: export gives them the same names, so a caller fetches an optimized model's outputs as it did
OUTPUT_NAMES = "output_names"


class IRModule:
    """A collection of named functions. `mod["main"]` is the entry point; assigning replaces it."""

    def __init__(self, functions: dict[str, Function] | None = None):
        self.functions: dict[str, Function] = {}
        for name, func in (functions or {}).items():
            self[name] = func

    @staticmethod
    def from_expr(expr: Expr) -> "IRModule":
        """A module whose `main` is `expr` (wrapped in a function of its free variables if needed)."""
        return IRModule({"main": expr})

    def __getitem__(self, name: str) -> Function:
        try:
            return self.functions[name]
        except KeyError:
            raise KeyError(f"module has no function {name!r}; it has {sorted(self.functions)}") from None

    def __setitem__(self, name: str, func: Expr) -> None:
        if not isinstance(func, Expr):
            raise TypeError(f"module entries must be IR expressions, got {type(func).__name__}")
        self.functions[name] = entry_function(func)

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def __iter__(self) -> Iterator[str]:
        return iter(self.functions)

    def astext(self, show_types: bool = True) -> str:
        from .printer import astext
        return astext(self, show_types)

    def __str__(self) -> str:
        return self.astext()

    def __repr__(self) -> str:
        return f"IRModule({list(self.functions)})"


def input_defaults(func: Function) -> frozenset[str]:
    """The names of `func`'s parameters that are inputs with a default value (see `INPUT_DEFAULTS`)."""
    return frozenset(func.attrs.get(INPUT_DEFAULTS, ()))


def output_names(func: Function) -> tuple[str, ...]:
    """The names of `func`'s outputs where it has them (see `OUTPUT_NAMES`), else ()."""
    return tuple(func.attrs.get(OUTPUT_NAMES, ()))


def entry_function(program: "IRModule | Expr") -> Function:
    """The function a program runs: `mod["main"]`, the function itself, or `fn(free vars) { expr }`."""
    if isinstance(program, IRModule):
        return program["main"]
    if isinstance(program, Function):
        return program
    if isinstance(program, Expr):
        return Function(free_vars(program), program)
    raise TypeError(f"expected an IRModule or an IR expression, got {type(program).__name__}")
