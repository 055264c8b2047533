"""Tuning records: the JSON-lines log format, reading it leniently, and `apply_history_best`.

One line per measurement (AutoTVM-like):

    {"version": 1, "target": "cpu", "workload": "<Workload.key>", "op": "nn.conv2d",
     "implementation": "conv2d_winograd.cpu", "config": {}, "costs_us": [812.5, 809.1, 815.0],
     "error": 0, "error_msg": "", "timestamp": 1718000000.0}

A record may also name the kind of device it was measured on (`"device"`, see `strategies.tuning_db`).

Reading never crashes on a bad log: each line is checked on its own (UTF-8, JSON, nesting depth,
finite numbers, the fields and their types, costs non-negative and at most `MAX_COST_US`, so that
summing them over any program stays finite), and a bad line, a
record of another format version, a record for another target or one naming an implementation the
target does not offer is skipped with a warning naming `file:line` (logger "strategies"), and
selection goes on with the rest.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import json
import logging
import math
import os
import statistics
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Iterator, Mapping

from .strategy import ConfigSpace

__all__ = [
    "FORMAT_VERSION", "MAX_COST_US", "ORT_IMPLEMENTATION", "ErrorCode", "TuningRecord", "TuningHistory", "SkippedLine", "TuningLog",
    "read_log", "parse_line", "load_records", "append_records", "apply_history_best", "current_history",
]

logger = logging.getLogger("strategies")

FORMAT_VERSION = 1

#: the largest measured latency a record may hold (about 11.6 days): far above any real kernel, and far
#: enough below float's range that the sum over any program (and the ILP's objective) stays finite
MAX_COST_US = 1e12
#: the implementation name of a record measured in ONNX Runtime: it prices the ort target's cost
#: model (`strategies.cost`) and names no implementation of the executor
ORT_IMPLEMENTATION = "onnxruntime"


class ErrorCode(enum.IntEnum):
    """Why a measurement failed (0: it did not)."""

    NO_ERROR = 0
    RUNTIME_ERROR = 1     # the compute raised
    WRONG_RESULT = 2      # the compute disagreed with the reference kernel


def _number(field: str, value: Any, *, non_negative: bool = False) -> float:
    """`value` as a finite float (non-negative if asked); ValueError naming `field` otherwise."""
    kind = "a finite non-negative number" if non_negative else "a finite number"
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ValueError(f"TuningRecord.{field} must be {kind}, got {type(value).__name__} {value!r}")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(f"TuningRecord.{field} must be {kind}, got an integer too large for a float") from None
    if not math.isfinite(number) or (non_negative and number < 0):
        raise ValueError(f"TuningRecord.{field} must be {kind}, got {value!r}")
    return number


@dataclass(frozen=True)
class TuningRecord:
    """One measurement of one implementation and configuration on one workload.

    Building one checks every field: strings, a dict config, int error and version, a finite
    timestamp and costs that are finite and non-negative (ValueError naming the field otherwise).
    """

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
    device: str = ""
    """the kind of device it was measured on (`strategies.tuning_db.Device.key`); empty when not recorded."""

    def __post_init__(self) -> None:
        for name in ("target", "workload", "op", "implementation", "error_msg", "device"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"TuningRecord.{name} must be a string, got {type(getattr(self, name)).__name__}")
        if not isinstance(self.config, dict):
            raise ValueError(f"TuningRecord.config must be a dict, got {type(self.config).__name__}")
        for name in ("error", "version"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"TuningRecord.{name} must be an integer, got {type(value).__name__} {value!r}")
        if not isinstance(self.costs_us, (tuple, list)):
            raise ValueError(f"TuningRecord.costs_us must be a sequence of numbers, got {type(self.costs_us).__name__}")
        costs = tuple(_number(f"costs_us[{i}]", c, non_negative=True) for i, c in enumerate(self.costs_us))
        if any(c > MAX_COST_US for c in costs):
            raise ValueError(f"TuningRecord.costs_us holds {max(costs)!r} µs, over the {MAX_COST_US:g} µs that any "
                             f"measured latency may be")
        object.__setattr__(self, "costs_us", costs)
        object.__setattr__(self, "timestamp", _number("timestamp", self.timestamp))

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
        if not self.device:
            del data["device"]
        return json.dumps(data, sort_keys=True, allow_nan=False)

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> "TuningRecord":
        """A record from a parsed JSON object; raises ValueError naming what is missing or wrong."""
        if not isinstance(data, Mapping):
            raise ValueError("a record must be a JSON object")
        missing = [k for k in ("version", "target", "workload", "op", "implementation", "config", "costs_us", "error")
                   if k not in data]
        if missing:
            raise ValueError(f"missing field(s) {missing}")
        return TuningRecord(data["target"], data["workload"], data["op"], data["implementation"], data["config"],
                            data["costs_us"], data["error"], data.get("error_msg", ""), data.get("timestamp", 0.0),
                            data["version"], data.get("device", ""))


@dataclass(frozen=True)
class SkippedLine:
    """A line of a tuning log that reading left out, and why."""

    path: str
    line: int
    reason: str

    @property
    def where(self) -> str:
        """`file:line`."""
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class TuningLog:
    """What `read_log` found in a log: the usable records, in order, and the lines it skipped."""

    records: list[TuningRecord]
    skipped: list[SkippedLine]


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def parse_line(raw: bytes) -> TuningRecord:
    """The record on one line of a log (or one row of a `strategies.tuning_db` database); ValueError saying
    what is wrong with it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"invalid UTF-8 at byte {err.start + 1}") from None
    try:
        data = json.loads(text, parse_float=_finite_float, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise ValueError(f"invalid JSON: {err.msg} at column {err.colno}") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if isinstance(data, Mapping) and data.get("version", FORMAT_VERSION) != FORMAT_VERSION:
        raise ValueError(f"format version {data['version']!r}; this version reads {FORMAT_VERSION}")
    try:
        return TuningRecord.from_json(data)
    except ValueError as err:
        raise ValueError(f"corrupt record: {err}") from None


def read_log(path: str | os.PathLike) -> TuningLog:
    """Every line of a JSON-lines log checked on its own; bad lines are returned as `skipped`, not logged.

    Blank lines are ignored. Raises OSError only when the file cannot be read at all.
    """
    records, skipped = [], []
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                records.append(parse_line(raw))
            except ValueError as err:
                skipped.append(SkippedLine(os.fspath(path), number, str(err)))
    return TuningLog(records, skipped)


def load_records(path: str | os.PathLike) -> list[TuningRecord]:
    """The usable records of a log; each bad line is skipped with a warning naming `file:line` and why."""
    log = read_log(path)
    for line in log.skipped:
        logger.warning("%s: tuning record skipped (%s)", line.where, line.reason)
    return log.records


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
        another implementation, or a config outside the space, is skipped with a warning. Records
        measured in ONNX Runtime (`ORT_IMPLEMENTATION`) are skipped silently: they cost programs,
        they do not choose kernels.
        """
        self._warn_other_targets(target)
        usable = []
        for record in self._by_key.get((target, workload), ()):
            if not record.ok or record.implementation == ORT_IMPLEMENTATION:
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
