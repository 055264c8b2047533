"""Per-target dispatch (`generic_func`) and the registration of computes, schedules and strategies.

Each op carries two attributes, as in TVM: `FTVMCompute` (its default compute, the reference
kernel unless registered otherwise) and `FTVMStrategy` (a generic function from
`(attrs, in_types, out_type, target)` to an `OpStrategy`). A generic function runs the variant
registered for the first of the target's keys that has one, else its generic default.

    @generic_func
    def schedule_pool(attrs, in_types, out_type, target):
        return ConfigSpace()

    @schedule_pool.register(["cuda", "gpu"])
    def schedule_pool_cuda(attrs, in_types, out_type, target):
        ...

    register_schedule("nn.max_pool2d", schedule_pool)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ir.attrs import Attrs
from ir.op.registry import get_op
from ir.types import Type

from .errors import NoImplementationError
from .kernels.reference import cast_to_type, reference_kernel
from .strategy import Compute, ConfigSpace, OpStrategy
from .target import Target, as_target

__all__ = [
    "GenericFunc", "generic_func", "register_compute", "register_strategy", "register_schedule",
    "register_injective_schedule", "register_broadcast_schedule", "register_reduce_schedule",
    "schedule_injective", "schedule_broadcast", "schedule_reduce", "StrategyChoice", "op_strategy",
    "reference_compute",
]


class GenericFunc:
    """A function with per-target variants: calling it runs the variant for `Target.current()`."""

    def __init__(self, name: str, default: Callable | None = None):
        self.name = name
        self.default = default
        self._variants: dict[str, Callable] = {}

    def register(self, keys: str | Sequence[str], func: Callable | None = None,
                 override: bool = False) -> Callable:
        """Register `func` for the target keys (usable as a decorator); "generic" sets the default."""
        keys = [keys] if isinstance(keys, str) else list(keys)

        def register(fn: Callable) -> Callable:
            for key in keys:
                taken = self.default if key == "generic" else self._variants.get(key)
                if taken is not None and not override:
                    raise ValueError(f"{self.name} already has a variant for key {key!r}; pass override=True")
                if key == "generic":
                    self.default = fn
                else:
                    self._variants[key] = fn
            return fn

        return register(func) if func is not None else register

    def dispatch(self, target: Target | str) -> tuple[Callable | None, str | None]:
        """The variant for `target` and the key that selected it ("generic" for the default)."""
        target = as_target(target)
        for key in target.keys:
            if key in self._variants:
                return self._variants[key], key
        return (self.default, "generic") if self.default is not None else (None, None)

    @property
    def keys(self) -> list[str]:
        """The keys with a registered variant (the default not included), sorted."""
        return sorted(self._variants)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = Target.current(allow_none=False)
        fn, _ = self.dispatch(target)
        if fn is None:
            raise NoImplementationError(f"{self.name} has no variant for target {target} (keys {list(target.keys)}) "
                                        f"and no generic default; it has variants for {self.keys}")
        return fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"GenericFunc({self.name}, keys={self.keys}, default={'yes' if self.default else 'no'})"


def generic_func(fdefault: Callable) -> GenericFunc:
    """Decorator: turn a function into a `GenericFunc` whose generic default it is."""
    return GenericFunc(fdefault.__name__, fdefault)


# -- computes -----------------------------------------------------------------------------------

def reference_compute(op_name: str) -> Compute:
    """A compute that runs the op's reference kernel (what `FTVMCompute` is unless registered).

    The caller has type-checked the call, so the output only needs the dtype `out_type` gives.
    """
    kernel = reference_kernel(op_name)

    def compute(attrs: Attrs, inputs: Sequence[Any], out_type: Type, config: Any) -> Any:
        return cast_to_type(kernel(attrs, *inputs), out_type)
    compute.__name__ = f"reference_{op_name.replace('.', '_')}"
    return compute


def register_compute(op_name: str, compute: Compute, override: bool = False) -> Compute:
    """Set the op's `FTVMCompute`, the compute schedule-only registrations pair with a schedule."""
    op = get_op(op_name)
    if op.get_attr("FTVMCompute") is not None and not override:
        raise ValueError(f"{op_name} already has a compute; pass override=True")
    op.set_attr("FTVMCompute", compute)
    return compute


def _compute_of(op_name: str) -> Compute:
    return get_op(op_name).get_attr("FTVMCompute") or reference_compute(op_name)


# -- strategies ---------------------------------------------------------------------------------

def register_strategy(op_name: str, fstrategy: GenericFunc | Callable, override: bool = False) -> GenericFunc:
    """Set the op's `FTVMStrategy`; a plain function becomes the generic default of a new `GenericFunc`."""
    op = get_op(op_name)
    if op.get_attr("FTVMStrategy") is not None and not override:
        raise ValueError(f"{op_name} already has a strategy; pass override=True, or register a target "
                         f"variant on it with get_op({op_name!r}).get_attr('FTVMStrategy').register(keys)")
    if not isinstance(fstrategy, GenericFunc):
        fstrategy = GenericFunc(f"{op_name}_strategy", fstrategy)
    op.set_attr("FTVMStrategy", fstrategy)
    return fstrategy


def register_schedule(op_name: str, fschedule: GenericFunc, override: bool = False) -> GenericFunc:
    """Give an op one implementation on every target: its `FTVMCompute` with `fschedule`'s variant."""
    compute = _compute_of(op_name)

    def schedule_strategy(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> OpStrategy:
        fn, key = fschedule.dispatch(target)
        if fn is None:
            raise NoImplementationError(f"{fschedule.name} has no variant for target {target}")
        strategy = OpStrategy()
        strategy.add_implementation(compute, fn, name=f"{op_name}.{fschedule.name}.{key}")
        return strategy

    schedule_strategy.__name__ = f"{op_name.replace('.', '_')}_schedule_strategy"
    return register_strategy(op_name, schedule_strategy, override)


@generic_func
def schedule_injective(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> ConfigSpace:
    """Element-wise and layout ops: numpy runs them whole, there is nothing to tune."""
    return ConfigSpace()


@generic_func
def schedule_broadcast(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> ConfigSpace:
    """Broadcasting ops: numpy broadcasts them whole, there is nothing to tune."""
    return ConfigSpace()


@generic_func
def schedule_reduce(attrs: Attrs, in_types: Sequence[Type], out_type: Type, target: Target) -> ConfigSpace:
    """Reductions: numpy's pairwise reductions, there is nothing to tune."""
    return ConfigSpace()


def register_injective_schedule(op_name: str, override: bool = False) -> GenericFunc:
    return register_schedule(op_name, schedule_injective, override)


def register_broadcast_schedule(op_name: str, override: bool = False) -> GenericFunc:
    return register_schedule(op_name, schedule_broadcast, override)


def register_reduce_schedule(op_name: str, override: bool = False) -> GenericFunc:
    return register_schedule(op_name, schedule_reduce, override)


# -- looking strategies up ----------------------------------------------------------------------

@dataclass(frozen=True)
class StrategyChoice:
    """The strategy an op gets on a target, and whether it came from the generic fallback."""

    strategy: OpStrategy
    key: str              # the target key whose variant built it ("generic" for the default)
    fallback: bool        # the op has target variants, but none for this target's keys


def op_strategy(op_name: str, attrs: Attrs, in_types: Sequence[Type], out_type: Type,
                target: Target | str) -> StrategyChoice:
    """Build the op's strategy for one workload on `target`.

    Raises `NoImplementationError`, naming the op and the target, when the op has no strategy
    for the target's keys and no generic default.
    """
    target = as_target(target)
    fstrategy: GenericFunc | None = get_op(op_name).get_attr("FTVMStrategy")
    fn, key = fstrategy.dispatch(target) if fstrategy is not None else (None, None)
    if fn is None:
        where = f"; targets with keys {fstrategy.keys} have one" if fstrategy is not None and fstrategy.keys else ""
        raise NoImplementationError(f"{op_name} has no implementation for target {target} "
                                    f"(keys {', '.join(target.keys)}){where}")
    with target:
        strategy = fn(attrs, list(in_types), out_type, target)
    return StrategyChoice(strategy, key, fallback=key == "generic" and bool(fstrategy.keys))
