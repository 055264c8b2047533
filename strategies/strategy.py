"""Op strategies: implementations, the specializations that group them, and the strategy that lists them.

An `OpImplementation` pairs a compute (the numpy or torch function that produces the op's value)
with a schedule (the knobs tuning may turn, and their defaults), under a name and a priority level
(`plevel`). An `OpStrategy` groups implementations into `OpSpecialization`s, each guarded by a
`SpecializedCondition` (`strategies.condition`) such as `InputDim(0, 0) > 16`. Conditions over
static shapes are decided when a program is built; over symbolic dimensions, at run time.

    strategy = OpStrategy()
    strategy.add_implementation(dense_gemm, schedule_dense, name="dense_gemm.cpu", plevel=10)
    with SpecializedCondition(InputDim(0, 0) >= 64):
        strategy.add_implementation(dense_blocked, schedule_blocked, name="dense_blocked.cpu", plevel=15)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

from ir.attrs import Attrs
from ir.types import Type

from .condition import Shapes, SpecializedCondition
from .roofline import Work

__all__ = ["ConfigSpace", "Config", "OpImplementation", "OpSpecialization", "OpStrategy", "Compute", "Schedule",
           "Estimate"]

Config = Mapping[str, Any]
#: compute(attrs, inputs, out_type, config) -> the op's value (an array, or a tuple of arrays)
Compute = Callable[[Attrs, Sequence[Any], Type, Config], Any]
#: estimate(attrs, in_types, out_type) -> the `Work` the implementation does on that workload
Estimate = Callable[[Attrs, Sequence[Type], Type], Work]


class ConfigSpace:
    """The knobs of a schedule: each knob name maps to its candidate values, the default first.

    `ConfigSpace()` has no knobs: its only configuration is `{}`.
    """

    def __init__(self, knobs: Mapping[str, Sequence[Any]] | None = None, **more: Sequence[Any]):
        merged = {**(knobs or {}), **more}
        for knob, values in merged.items():
            if not values:
                raise ValueError(f"knob {knob!r} has no candidate values")
        self.knobs: dict[str, tuple] = {k: tuple(merged[k]) for k in sorted(merged)}

    def default(self) -> dict[str, Any]:
        """The first value of every knob."""
        return {knob: values[0] for knob, values in self.knobs.items()}

    def configs(self) -> Iterator[dict[str, Any]]:
        """Every configuration, the default first, in a deterministic order."""
        for values in itertools.product(*self.knobs.values()):
            yield dict(zip(self.knobs, values))

    @property
    def size(self) -> int:
        """How many configurations there are."""
        return math.prod(len(v) for v in self.knobs.values())

    def __contains__(self, config: Mapping[str, Any]) -> bool:
        return set(config) == set(self.knobs) and all(config[k] in v for k, v in self.knobs.items())

    def __repr__(self) -> str:
        return f"ConfigSpace({self.knobs})"


#: schedule(attrs, in_types, out_type, target) -> the knobs tuning may set
Schedule = Callable[..., ConfigSpace]


@dataclass(frozen=True)
class OpImplementation:
    """A compute and a schedule under a unique name and a priority level (higher wins when untuned).

    `device` says what values the compute takes: "host" (numpy arrays) or "torch" (torch tensors on
    the target's device). `estimate` gives the analytical work; when None, the op's own count is used.
    """

    compute: Compute
    schedule: Schedule
    name: str
    plevel: int = 10
    device: str = "host"
    estimate: Estimate | None = None

    def __post_init__(self) -> None:
        if self.device not in ("host", "torch"):
            raise ValueError(f"implementation {self.name}: device must be 'host' or 'torch', got {self.device!r}")


@dataclass
class OpSpecialization:
    """Implementations that apply when `condition` holds (always, when it is None)."""

    condition: SpecializedCondition | None
    implementations: list[OpImplementation] = field(default_factory=list)


class OpStrategy:
    """The implementations of one op for one workload and target, grouped by condition."""

    def __init__(self) -> None:
        self.specializations: list[OpSpecialization] = []

    def add_implementation(self, compute: Compute, schedule: Schedule, name: str = "default", plevel: int = 10,
                           device: str = "host", estimate: Estimate | None = None,
                           condition: SpecializedCondition | None = None) -> OpImplementation:
        """Add an implementation under `condition` (default: the enclosing `SpecializedCondition`)."""
        condition = condition if condition is not None else SpecializedCondition.current()
        if any(impl.name == name for impl in self.implementations()):
            raise ValueError(f"implementation name {name!r} is used twice in one strategy")
        impl = OpImplementation(compute, schedule, name, plevel, device, estimate)
        for spec in self.specializations:
            if spec.condition == condition:
                spec.implementations.append(impl)
                return impl
        self.specializations.append(OpSpecialization(condition, [impl]))
        return impl

    def implementations(self) -> list[OpImplementation]:
        """Every implementation, in the order added."""
        return [impl for spec in self.specializations for impl in spec.implementations]

    def applicable(self, shapes: Shapes) -> tuple[list[OpImplementation], list[OpImplementation]]:
        """The implementations whose condition holds for `shapes`, and those still undecided."""
        valid: list[OpImplementation] = []
        undecided: list[OpImplementation] = []
        for spec in self.specializations:
            verdict = True if spec.condition is None else spec.condition.decide(shapes)
            if verdict is True:
                valid.extend(spec.implementations)
            elif verdict is None:
                undecided.extend(spec.implementations)
        return valid, undecided

    def __repr__(self) -> str:
        return f"OpStrategy({[impl.name for impl in self.implementations()]})"
