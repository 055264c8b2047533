"""Many models at once: `batch` optimizes each (one task per model), `tune_batch` measures each distinct
workload once into one tuning database; tasks run on Ray or a local process pool (`engine`)."""

from __future__ import annotations

from .batch import BatchOptions, BatchResult, batch
from .engine import Engine, ProcessPool, RayCluster, TaskLost, choose_engine, ray_available
from .models import ModelSource, find_models
from .tune import TuneOptions, TuneSummary, tune_batch

__all__ = ["batch", "BatchOptions", "BatchResult", "tune_batch", "TuneOptions", "TuneSummary", "Engine", "ProcessPool",
           "RayCluster", "TaskLost", "choose_engine", "ray_available", "ModelSource", "find_models"]
