"""`ModelBuilder`: collects a model's weights and assembles the `(IRModule, params)` pair.

Every weight is a `Var` with a static `TensorType`, created in a fixed order; its initial value
is drawn from one seeded numpy generator at creation time, so the same seed always gives the same
arrays. With `weights=False` nothing is drawn and `params` stays empty.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from .. import relay
from ..errors import TypeInferenceError
from ..expr import Expr, Function, Var
from ..module import IRModule
from ..type_infer import infer_type
from ..visitor import free_vars

__all__ = [
    "DATA_INPUTS_ATTR", "Initializer", "ModelBuilder", "he_normal", "lecun_normal", "normal", "uniform",
    "scale_channels", "require_positive",
]

#: Attribute of `mod["main"]` naming its data inputs (the parameters that are not weights).
DATA_INPUTS_ATTR = "data_inputs"

#: Draws a float32 array of the given shape from the generator.
Initializer = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def normal(std: float, mean: float = 0.0) -> Initializer:
    """Gaussian values with the given mean and standard deviation."""
    def draw(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(std) + np.float32(mean)
    return draw


def uniform(low: float, high: float) -> Initializer:
    """Values uniform in [low, high)."""
    def draw(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return rng.uniform(low, high, shape).astype(np.float32)
    return draw


def _fan_in_normal(gain: float) -> Initializer:
    def draw(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return normal(math.sqrt(gain / math.prod(shape[1:])))(rng, shape)
    return draw


#: He initialisation, std = sqrt(2 / fan_in), for a weight laid out `[out, in, ...]` whose layer
#: feeds a ReLU: fan_in is every axis but the first (`in * kh * kw` for OIHW, `in` for dense), and
#: the gain of 2 makes up for the half of the signal a ReLU drops.
he_normal: Initializer = _fan_in_normal(2.0)

#: LeCun initialisation, std = sqrt(1 / fan_in), for layers with no ReLU after them (projections
#: into a residual sum, separable convolutions, classifiers): it keeps the variance unchanged.
lecun_normal: Initializer = _fan_in_normal(1.0)


def scale_channels(channels: int, width: float, divisor: int = 1) -> int:
    """`channels * width` rounded to a multiple of `divisor` (at least `divisor`, never 10% below).

    This is torchvision's `_make_divisible` rule, so MobileNet-v2 (divisor 8) matches it exactly.
    """
    if width <= 0:
        raise ValueError(f"the width multiplier must be positive, got {width}")
    scaled = channels * width
    rounded = max(divisor, int(scaled + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * scaled else rounded


def require_positive(model: str, **sizes: int | None) -> None:
    """Raise a `ValueError` naming `model` and the argument when a given size is below 1 (None is skipped)."""
    for name, value in sizes.items():
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"{model}: {name} must be a positive int, got {value!r}")


class ModelBuilder:
    """Creates a model's weight variables (and their seeded values) and returns the finished module.

    `model` names the model in error messages. `seed` seeds the one generator all values come
    from; with `weights=False` no values are drawn.
    """

    def __init__(self, model: str, *, seed: int = 0, weights: bool = True):
        self.model = model
        self._rng = np.random.default_rng(seed) if weights else None
        self._weights: list[Var] = []
        self._names: set[str] = set()
        self.params: dict[str, np.ndarray] = {}

    def weight(self, name: str, shape: Sequence[int], init: Initializer) -> Var:
        """A new float32 weight variable named `name`; its value comes from `init` when weights are on."""
        if name in self._names:
            raise ValueError(f"{self.model}: the weight name {name!r} is used twice")
        shape = tuple(int(d) for d in shape)
        if any(d < 1 for d in shape):
            raise ValueError(f"{self.model}: weight {name!r} would have shape {shape}; every dimension "
                             "must be >= 1 (is a width multiplier too small?)")
        var = relay.var(name, shape=shape, dtype="float32")
        self._names.add(name)
        self._weights.append(var)
        if self._rng is not None:
            self.params[name] = init(self._rng, shape)
        return var

    def finish(self, inputs: Sequence[Var], output: Expr) -> tuple[IRModule, dict[str, np.ndarray]]:
        """The typed module `main(inputs..., weights...) = output` and the weight values.

        Raises when the graph uses a variable that is neither an input nor a weight, leaves a weight
        unused, or does not type-check (the message then names the model and the failing op).
        """
        params = [*inputs, *self._weights]
        declared = {id(v) for v in params}
        used = free_vars(output)
        stray = [v.name_hint for v in used if id(v) not in declared]
        if stray:
            raise ValueError(f"{self.model}: the graph uses undeclared variables {stray}")
        used_ids = {id(v) for v in used}
        unused = [v.name_hint for v in params if id(v) not in used_ids]
        if unused:
            raise ValueError(f"{self.model}: declared but never used: {unused}")
        main = Function(params, output, attrs={DATA_INPUTS_ATTR: tuple(v.name_hint for v in inputs)})
        mod = IRModule({"main": main})
        try:
            infer_type(mod)
        except TypeInferenceError as err:
            raise TypeInferenceError(f"{self.model}: this configuration does not type-check: {err}") from None
        return mod, self.params
