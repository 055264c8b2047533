"""Tuning records: the JSON-lines log format, reading it leniently, and `apply_history_best`.

One line per measurement (AutoTVM-like):

    {"version": 1, "target": "cpu", "workload": "<Workload.key>", "op": "nn.conv2d",
     "implementation": "conv2d_winograd.cpu", "config": {}, "costs_us": [812.5, 809.1, 815.0],
     "error": 0, "error_msg": "", "timestamp": 1718000000.0}

Reading never crashes on a bad log: a corrupt line, a record of another format version, a
record for another target or one naming an implementation the target does not offer is
skipped with a warning (logger "strategies"), and selection goes on without it.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import json
import logging
import os
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Iterator, Mapping

from .strategy import ConfigSpace

__all__ = [
    "FORMAT_VERSION", "ErrorCode", "TuningRecord", "TuningHistory", "load_records", "append_records",
    "apply_history_best", "current_history",
]

logger = logging.getLogger("strategies")

FORMAT_VERSION = 1


class ErrorCode(enum.IntEnum):
    """Why a measurement failed (0: it did not)."""

    NO_ERROR = 0
    RUNTIME_ERROR = 1     # the compute raised
    WRONG_RESULT = 2      # the compute disagreed with the reference kernel


@dataclass(frozen=True)
class TuningRecord:
    """One measurement of one implementation and configuration on one workload."""

    target: str
    workload: str
    op: str
    implementation: str
    config: dict[str, Any]
    costs_us: tuple[float, ...]
    error: int = ErrorCode.NO_ERROR
    error_msg: str = ""
    timestamp: float = 0.0
    version: int = FORMAT_VERSION

    @property
    def ok(self) -> bool:
        return self.error == ErrorCode.NO_ERROR and bool(self.costs_us)

    @property
    def latency_us(self) -> float:
        """The median measured latency, in microseconds."""
        return statistics.median(self.costs_us)

    def to_json(self) -> str:
        data = asdict(self)
        data["costs_us"] = list(self.costs_us)
        data["error"] = int(self.error)
        return json.dumps(data, sort_keys=True)

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> "TuningRecord":
        """A record from a parsed JSON object; raises ValueError naming what is missing or wrong."""
        if not isinstance(data, Mapping):
            raise ValueError("a record must be a JSON object")
        missing = [k for k in ("version", "target", "workload", "op", "implementation", "config", "costs_us", "error")
                   if k not in data]
        if missing:
            raise ValueError(f"missing field(s) {missing}")
        costs = data["costs_us"]
        if not isinstance(costs, list) or not all(isinstance(c, (int, float)) for c in costs):
            raise ValueError("costs_us must be a list of numbers")
        if not isinstance(data["config"], dict):
            raise ValueError("config must be an object")
        for name in ("target", "workload", "op", "implementation"):
            if not isinstance(data[name], str):
                raise ValueError(f"{name} must be a string")
        return TuningRecord(data["target"], data["workload"], data["op"], data["implementation"], dict(data["config"]),
                            tuple(float(c) for c in costs), int(data["error"]), str(data.get("error_msg", "")),
                            float(data.get("timestamp", 0.0)), int(data["version"]))


def load_records(path: str | os.PathLike) -> list[TuningRecord]:
    """The well-formed records of the current version in a log; other lines are skipped with a warning."""
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = TuningRecord.from_json(json.loads(line))
            except (ValueError, TypeError) as err:
                logger.warning("%s:%d: corrupt tuning record skipped (%s)", path, number, err)
                continue
            if record.version != FORMAT_VERSION:
                logger.warning("%s:%d: tuning record of format version %s skipped (this version reads %d)",
                               path, number, record.version, FORMAT_VERSION)
                continue
            records.append(record)
    return records


def append_records(path: str | os.PathLike, records: Iterable[TuningRecord]) -> None:
    """Append records to a JSON-lines log (created when missing)."""
    with open(path, "a", encoding="utf-8") as f:
        for record in records:
            f.write(record.to_json() + "\n")


class TuningHistory:
    """Records grouped by target and workload, answering "which implementation measured best?"."""

    def __init__(self, records: Iterable[TuningRecord], source: str = "<records>"):
        self.records = list(records)
        self.source = source
        self._by_key: dict[tuple[str, str], list[TuningRecord]] = {}
        self._warned: set[str] = set()
        for record in self.records:
            self._by_key.setdefault((record.target, record.workload), []).append(record)

    @staticmethod
    def load(log: "str | os.PathLike | TuningHistory | Iterable[TuningRecord]") -> "TuningHistory":
        """A history from a log path, a history, or records."""
        if isinstance(log, TuningHistory):
            return log
        if isinstance(log, (str, os.PathLike)):
            return TuningHistory(load_records(log), str(log))
        return TuningHistory(list(log))

    def _warn_once(self, key: str, message: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message, *args)

    def best(self, target: str, workload: str, spaces: Mapping[str, ConfigSpace]) -> TuningRecord | None:
        """The fastest successful record for `workload` on `target` among the offered implementations.

        `spaces` maps each implementation selection may pick to its config space; a record naming
        another implementation, or a config outside the space, is skipped with a warning.
        """
        self._warn_other_targets(target)
        usable = []
        for record in self._by_key.get((target, workload), ()):
            if not record.ok:
                continue
            space = spaces.get(record.implementation)
            if space is None:
                self._warn_once(f"impl:{record.implementation}:{record.op}",
                                "%s: record for %s names implementation %r, which target %s does not offer for "
                                "this workload; skipped", self.source, record.op, record.implementation, target)
            elif record.config not in space:
                self._warn_once(f"config:{record.implementation}:{json.dumps(record.config, sort_keys=True)}",
                                "%s: record for %s has config %s, which is not in %s's space %s; skipped",
                                self.source, record.op, record.config, record.implementation, space)
            else:
                usable.append(record)
        if not usable:
            return None
        return min(usable, key=lambda r: (r.latency_us, r.implementation, json.dumps(r.config, sort_keys=True)))

    def _warn_other_targets(self, target: str) -> None:
        others = sorted({r.target for r in self.records} - {target})
        if others:
            count = sum(1 for r in self.records if r.target != target)
            self._warn_once(f"target:{target}", "%s: %d record(s) for target(s) %s skipped (selecting for %s)",
                            self.source, count, ", ".join(others), target)


_HISTORY: contextvars.ContextVar[TuningHistory | None] = contextvars.ContextVar("strategies_history", default=None)


@contextlib.contextmanager
def apply_history_best(log: "str | os.PathLike | TuningHistory | Iterable[TuningRecord]") -> Iterator[TuningHistory]:
    """Within the block, selection picks the best measured implementation the log has for a workload.

    Workloads the log does not cover keep the highest-plevel implementation whose condition holds.

        with strategies.apply_history_best("tuning.jsonl"):
            exe = strategies.build(mod, "cpu", params)
    """
    history = TuningHistory.load(log)
    token = _HISTORY.set(history)
    try:
        yield history
    finally:
        _HISTORY.reset(token)


def current_history() -> TuningHistory | None:
    """The history of the innermost `apply_history_best` block, if any."""
    return _HISTORY.get()
