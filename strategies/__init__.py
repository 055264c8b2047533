"""Op strategies for IR programs: targets, competing kernels, an executor, tuning logs, a cost model.

    import strategies
    exe = strategies.build(mod, target="cpu", params=params)
    out = exe.run(data=x)
    strategies.tune(mod, "cpu", log="tuning.jsonl", trials=8, params=params)
    with strategies.apply_history_best("tuning.jsonl"):
        faster = strategies.build(mod, "cpu", params)
    cost_us = strategies.CostModel("cuda").program_cost(mod)
    reference = strategies.evaluate(mod, {"x": x}, params)      # numpy ground truth

Follows TVM Relay's operator strategy: `Target`, `generic_func`, `OpImplementation`,
`OpSpecialization`, `SpecializedCondition`, `OpStrategy`, `register_strategy` and friends.
"""

from __future__ import annotations

from . import interpreter, op_strategies  # noqa: F401  (op_strategies registers every op's strategy)
from .cost import CostModel
from .errors import InputError, KernelError, NoImplementationError, StrategyError, TargetError
from .executor import Executable, Profile, ProfileRow, build
from .interpreter import evaluate
from .records import TuningHistory, TuningRecord, apply_history_best, load_records
from .registry import (GenericFunc, generic_func, register_broadcast_schedule, register_compute,
                       register_injective_schedule, register_reduce_schedule, register_schedule, register_strategy)
from .roofline import Roofline, Work
from .select import Selection, select_implementation
from .condition import InputDim, SpecializedCondition
from .strategy import ConfigSpace, OpImplementation, OpSpecialization, OpStrategy
from .target import Target
from .tuning import tune
from .workload import Workload

__all__ = [
    "Target", "build", "Executable", "Profile", "ProfileRow", "tune", "apply_history_best", "TuningRecord",
    "TuningHistory", "load_records", "CostModel", "Roofline", "Work", "evaluate", "interpreter",
    "GenericFunc", "generic_func", "register_compute", "register_strategy", "register_schedule",
    "register_injective_schedule", "register_broadcast_schedule", "register_reduce_schedule",
    "OpImplementation", "OpSpecialization", "OpStrategy", "SpecializedCondition", "InputDim", "ConfigSpace",
    "Selection", "select_implementation", "Workload",
    "StrategyError", "NoImplementationError", "InputError", "KernelError", "TargetError",
]
