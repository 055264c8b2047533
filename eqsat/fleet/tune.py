"""`tune_batch`: measure every distinct workload of many models once, into one tuning database.

Two kinds of task: one per model lists its workloads (loading the model where the task runs), and
one per batch of new workloads (`WORKLOADS_PER_TASK`, of one model) measures them
(`strategies.tuning.measure_workloads`). The driver alone writes the database
(`strategies.tuning_db`): as each model's workloads come back, those seen earlier in the run or
already in the database for this kind of device are dropped, the rest are claimed and sent out,
and each batch's records are added as soon as it is measured. So a workload shared by fifty
models is measured once, a killed worker loses only the batch it was measuring (retried), and a
second run, or a concurrent one on the same database, measures only what is still missing.

On an ort target a workload is timed as cold as in the first model that has it (`weight_bytes`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

from strategies.devices import require_device
from strategies.records import TuningRecord
from strategies.target import as_target
from strategies.tuning import measure_workloads, program_weight_bytes, workload_constants
from strategies.tuning_db import POLL_SECONDS, Claim, TuningDatabase, new_owner, this_device
from strategies.workload import Workload

from ..cli_errors import failure
from .engine import Engine, TaskLost, choose_engine
from .models import ModelSource, find_models, load_model

__all__ = ["WORKLOADS_PER_TASK", "TuneOptions", "TuneSummary", "tune_batch", "model_workloads", "measure_batch"]

WORKLOADS_PER_TASK = 32
"""workloads one measuring task times, at most (on ort, together in the same rounds, after one calibration of
the session overhead: fewer, larger tasks spend less on it)."""

Items = list[tuple[Workload, frozenset[int]]]


@dataclass(frozen=True)
class TuneOptions:
    """How each workload is measured (`strategies.tune`'s options)."""

    target: str = "ort"
    trials: int = 8
    repeat: int = 3
    threads: int = 1
    """intra-op threads on ort, and the device description's thread count."""
    seed: int = 0


def model_workloads(model: ModelSource) -> tuple[Items, int]:
    """A model's distinct static workloads (with their constant inputs) and its weight bytes."""
    mod, params = load_model(model)
    items = [(w, c) for w, c in workload_constants(mod, params) if w.static]
    return items, program_weight_bytes(mod, params)


def measure_batch(task: tuple[Items, TuneOptions, int]) -> tuple[str, list[TuningRecord]]:
    """Measure a batch of workloads; the records, and the kind of device they were measured on."""
    items, options, weight_bytes = task
    records = [r for chunk in measure_workloads(items, options.target, options.trials, options.repeat, options.seed,
                                                options.threads, weight_bytes) for r in chunk]
    return this_device(options.threads).key, records


def _workloads_task(model: ModelSource) -> tuple[Items, int] | str:
    """`model_workloads`, or the one-line reason it failed (a model that does not import is a row, not a crash)."""
    try:
        return model_workloads(model)
    except Exception as err:  # the model's failure is reported in its row
        return failure(err)[1].removeprefix("error: ")


@dataclass
class TuneSummary:
    """What a batch tuning run did: per model its workloads, and the counts behind the dedupe ratio."""

    rows: list[dict[str, Any]]
    engine: str
    device: str
    seconds: float = 0.0
    total: int = 0
    """workloads over all models, each model's distinct ones counted."""
    unique: int = 0
    """distinct workloads over all models."""
    in_database: int = 0
    """of those, already measured on this kind of device before the run."""
    measured: int = 0
    """measured by this run."""
    by_others: int = 0
    """measured meanwhile by another run on the same database."""
    records: int = 0
    """records this run added."""
    lost: list[str] = field(default_factory=list)
    """why a batch of workloads could not be measured."""

    @property
    def dedupe_ratio(self) -> float:
        """Workloads over all models per distinct workload: how many measurements one measurement saves."""
        return self.total / self.unique if self.unique else 1.0

    def summary(self) -> str:
        failed = [r for r in self.rows if r["status"] != "ok"]
        lines = [f"{r['model']:<28} {r['status']:<7} {r.get('workloads', 0):>4} workload(s), {r.get('new', 0):>4} new"
                 + (f"  {r['error']}" if r.get("error") else "") for r in self.rows]
        lines.append(f"{len(self.rows)} model(s) ({len(failed)} failed): {self.total} workloads, {self.unique} distinct "
                     f"(dedupe ratio {self.dedupe_ratio:.2f}); {self.in_database} already in the database, "
                     f"{self.measured} measured now ({self.records} records), {self.by_others} by another run"
                     f"{'; ' + str(len(self.lost)) + ' batch(es) lost' if self.lost else ''}; "
                     f"{self.seconds:.1f} s on {self.engine}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "device": self.device, "seconds": self.seconds, "total": self.total,
                "unique": self.unique, "dedupe_ratio": self.dedupe_ratio, "in_database": self.in_database,
                "measured": self.measured, "by_others": self.by_others, "records": self.records, "lost": self.lost,
                "rows": self.rows}


def tune_batch(sources: Iterable[str], db: str | TuningDatabase, *, options: TuneOptions = TuneOptions(),
               small: bool = False, engine: Engine | None = None,
               progress: Callable[[int, int, dict[str, Any]], None] | None = None) -> TuneSummary:
    """Measure each distinct workload of the models `sources` name once, into the database `db` (a path or an
    open `TuningDatabase`), on `engine` (default: `choose_engine()`); see the module docstring.

    `progress(done, total, row)` is called as each model's workloads are known."""
    models = find_models(sources, small)
    target = as_target(options.target).kind
    require_device(as_target(options.target))
    database = db if isinstance(db, TuningDatabase) else TuningDatabase(db)
    device = this_device(options.threads).key
    engine = engine if engine is not None else choose_engine()
    owner = new_owner()
    start = time.perf_counter()
    rows: dict[int, dict[str, Any]] = {}
    summary = TuneSummary([], engine.name, device)
    seen: set[str] = set()
    waiting: dict[str, tuple[Items, int]] = {}
    measuring: dict[int, Items] = {}
    listed: dict[int, Any] = {}

    def send(items: Items, weight_bytes: int) -> Claim:
        """Claim the workloads not yet measured and send those out; wait for those another run measures."""
        claim = database.claim(target, device, [w.key for w, _ in items], owner)
        for key in claim.elsewhere:
            waiting[key] = ([(w, c) for w, c in items if w.key == key], weight_bytes)
        mine = [(w, c) for w, c in items if w.key in set(claim.mine)]
        for i in range(0, len(mine), WORKLOADS_PER_TASK):
            chunk = mine[i:i + WORKLOADS_PER_TASK]
            measuring[engine.submit(measure_batch, (chunk, options, weight_bytes))] = chunk
        return claim

    try:
        with engine:
            summary.engine = engine.name
            listing = {engine.submit(_workloads_task, model): i for i, model in enumerate(models)}
            while engine.running or waiting:
                if not engine.running:
                    time.sleep(POLL_SECONDS)
                    pending, waiting = waiting, {}
                    for items, weight_bytes in pending.values():
                        summary.by_others += len(send(items, weight_bytes).measured)
                    continue
                number, result = engine.next_done()
                if number in listing:
                    listed[listing[number]] = result
                    while len(rows) in listed:  # in the order of the sources: a shared workload is the first model's
                        i = len(rows)
                        rows[i] = _listed(models[i], listed.pop(i), seen, summary, send)
                        if progress:
                            progress(len(rows), len(models), rows[i])
                else:
                    chunk = measuring.pop(number)
                    if isinstance(result, TaskLost):
                        summary.lost.append(f"{len(chunk)} workload(s) of {chunk[0][0].op}...: {result.reason}")
                        continue
                    measured_on, records = result
                    records = [replace(r, device=measured_on) for r in records]
                    summary.records += database.add(records, owner)
                    summary.measured += len(chunk)
    finally:
        database.release(owner)
        if database is not db:
            database.close()
    summary.rows = [rows[i] for i in range(len(models))]
    summary.seconds = time.perf_counter() - start
    return summary


def _listed(model: ModelSource, result: Any, seen: set[str], summary: TuneSummary,
            send: Callable[[Items, int], Claim]) -> dict[str, Any]:
    """A model's row from its listing task (`_workloads_task`'s result); its workloads not seen earlier in the
    run are sent to be measured."""
    if isinstance(result, (str, TaskLost)):
        return {"model": model.name, "status": "failed", "error": getattr(result, "reason", result)}
    items, weight_bytes = result
    new = [(w, c) for w, c in items if w.key not in seen]
    seen.update(w.key for w, _ in new)
    summary.total += len(items)
    summary.unique += len(new)
    summary.in_database += len(send(new, weight_bytes).measured)
    return {"model": model.name, "status": "ok", "workloads": len(items), "new": len(new)}
