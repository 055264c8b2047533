"""Parameter counting from a module's types alone (no weight values needed)."""

from __future__ import annotations

from typing import Sequence

from ..module import IRModule
from ..types import TensorType, is_static
from .builder import DATA_INPUTS_ATTR

__all__ = ["MOVING_STATISTIC_SUFFIXES", "is_moving_statistic", "count_parameters"]

#: A weight whose name ends in one of these is a batch-norm buffer, not a trainable parameter.
MOVING_STATISTIC_SUFFIXES = ("moving_mean", "moving_var", "running_mean", "running_var")


def is_moving_statistic(name: str) -> bool:
    """True for batch-norm moving statistics: names ending in `moving_mean`/`moving_var` (Relay's
    naming, used by the zoo) or `running_mean`/`running_var` (PyTorch's, seen in imported models)."""
    return name.endswith(MOVING_STATISTIC_SUFFIXES)


def count_parameters(mod: IRModule, trainable_only: bool = True, *,
                     data_inputs: Sequence[str] | None = None) -> int:
    """Number of weight elements of `mod["main"]`, counted from the parameters' static types.

    Weights are main's parameters other than its data inputs; the zoo records those names in
    main's `data_inputs` attribute, and `data_inputs` names them for other modules (e.g. imported
    ones). With `trainable_only`, moving statistics (see `is_moving_statistic`) are left out, as in
    PyTorch's parameter count.
    """
    main = mod["main"]
    if data_inputs is None:
        if DATA_INPUTS_ATTR not in main.attrs:
            raise ValueError(f"count_parameters: main has no {DATA_INPUTS_ATTR!r} attribute naming its data "
                             f"inputs; pass data_inputs=[...] (main's parameters: "
                             f"{[p.name_hint for p in main.params][:5]}...)")
        data_inputs = main.attrs[DATA_INPUTS_ATTR]
    names = [p.name_hint for p in main.params]
    missing = sorted(set(data_inputs) - set(names))
    if missing:
        raise ValueError(f"count_parameters: data inputs {missing} are not parameters of main")
    total = 0
    for param in main.params:
        if param.name_hint in data_inputs or (trainable_only and is_moving_statistic(param.name_hint)):
            continue
        ty = param.type_annotation
        if not isinstance(ty, TensorType) or not is_static(ty.shape):
            raise ValueError(f"count_parameters: weight %{param.name_hint} needs a static tensor type, got {ty}")
        total += ty.num_elements()
    return total
