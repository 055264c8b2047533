"""The tuning database: every tuning record keyed by workload and kind of device, in one SQLite file.

A workload measured once is never measured again on the same kind of device (`Device`: CPU model,
widest vector extension, ONNX Runtime version, threads). Several processes on one machine read and
write the file at once (SQLite's write-ahead log; each write is one short transaction, so a process
killed at any point leaves every committed record in place). Processes that tune the same workloads
at the same time do not measure them twice: before measuring, a process `claim`s the workloads; a
claim held by another live owner makes it wait for that owner's records instead (`tune_workloads`
with a database). A claim whose owner died on this machine, or is older than `CLAIM_LEASE_SECONDS`,
is free again.

    db = TuningDatabase("tuning.db")
    db.import_log("tuning.jsonl")                    # today's JSON-lines log, device: this machine
    history = db.history("ort", this_device().key)   # what the cost model and selection read
    db.export_log("ort.jsonl", target="ort")         # back to JSON lines, each line naming its device

Reading never crashes on a bad row: a row whose record does not parse is skipped and named as
`file:row`, like a bad line of a log (`strategies.records.read_log`). A file that is not a tuning
database is a `TuningDatabaseError` naming it. SQLite over a network file system is not safe:
keep the file on the machine whose processes write it (`eqsat batch` writes it from the driver).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import logging
import os
import platform
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

from .errors import StrategyError
from .ort_timing import default_threads
from .records import SkippedLine, TuningHistory, TuningLog, TuningRecord, append_records, parse_line, read_log

if TYPE_CHECKING:
    from .workload import Workload

__all__ = ["SCHEMA_VERSION", "BUSY_SECONDS", "CLAIM_LEASE_SECONDS", "Device", "this_device", "TuningDatabaseError",
           "Claim", "TuningDatabase", "measure_once", "new_owner", "is_database", "POLL_SECONDS"]

logger = logging.getLogger("strategies")

SCHEMA_VERSION = 1
BUSY_SECONDS = 120.0
"""how long a write waits for another process's write transaction before failing."""
POLL_SECONDS = 0.5
"""how often a process waiting for workloads another one is measuring looks for their records."""
CLAIM_LEASE_SECONDS = 3600.0
"""a claim older than this is free again, whoever holds it (a dead owner on another machine)."""

#: vector extensions, widest first: a device is described by the first its CPU has
_VECTOR_EXTENSIONS = ("avx512f", "avx2", "avx", "sse4_2", "sve", "asimd", "neon")
_SQLITE_MAGIC = b"SQLite format 3\x00"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY, target TEXT NOT NULL, device TEXT NOT NULL, "
    "workload TEXT NOT NULL, implementation TEXT NOT NULL, config TEXT NOT NULL, record TEXT NOT NULL, "
    "UNIQUE (target, device, workload, implementation, config))",
    "CREATE TABLE IF NOT EXISTS claims (target TEXT NOT NULL, device TEXT NOT NULL, workload TEXT NOT NULL, "
    "owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, claimed_at REAL NOT NULL, "
    "PRIMARY KEY (target, device, workload))",
)
"""the tables: one row per record (the record itself as its log line, keyed by its columns); one per claim."""


class TuningDatabaseError(StrategyError):
    """A file that is not a tuning database (or one of a newer schema); the message names it."""


@dataclass(frozen=True)
class Device:
    """The kind of device a measurement holds for: records measured on one `Device` price programs on
    every machine with an equal one."""

    cpu: str
    """the CPU's model name."""
    vector: str
    """its widest vector extension (avx512f, avx2, ..., asimd), or the architecture when none is known."""
    onnxruntime: str
    """the installed ONNX Runtime version ("none" without it)."""
    threads: int
    """intra-op threads the measurements ran with."""

    @property
    def key(self) -> str:
        """The device as the database keys it, e.g. "Intel(R) Xeon(R) | avx512f | onnxruntime 1.20.1 | 1 thread(s)"."""
        return f"{self.cpu} | {self.vector} | onnxruntime {self.onnxruntime} | {self.threads} thread(s)"


@lru_cache(maxsize=None)
def _cpuinfo() -> tuple[str, frozenset[str]]:
    """The CPU model name and feature flags /proc/cpuinfo gives (empty where there is none)."""
    model, flags = "", frozenset()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                name, _, value = line.partition(":")
                name = name.strip()
                if name in ("model name", "Model", "cpu model") and not model:
                    model = value.strip()
                elif name in ("flags", "Features") and not flags:
                    flags = frozenset(value.split())
    return model, flags


def _onnxruntime_version() -> str:
    try:
        return importlib.metadata.version("onnxruntime")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def this_device(threads: int | None = None) -> Device:
    """This machine as a `Device`, measuring with `threads` intra-op threads (default: the CPUs this
    process may use, as `tune` does)."""
    model, flags = _cpuinfo()
    vector = next((v for v in _VECTOR_EXTENSIONS if v in flags), platform.machine() or "unknown")
    return Device(model or platform.processor() or platform.machine() or "unknown", vector, _onnxruntime_version(),
                  default_threads() if threads is None else threads)


def new_owner() -> str:
    """A fresh claim owner: this process, and a random part so that two runs in one process differ."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def is_database(path: str | os.PathLike) -> bool:
    """True when `path` is an SQLite file (a tuning database rather than a JSON-lines log)."""
    with contextlib.suppress(OSError), open(path, "rb") as f:
        return f.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    return False


@dataclass(frozen=True)
class Claim:
    """What `TuningDatabase.claim` found for the workloads asked about."""

    mine: tuple[str, ...]
    """workloads claimed now, for the caller to measure."""
    elsewhere: tuple[str, ...]
    """workloads another live owner is measuring."""
    measured: tuple[str, ...]
    """workloads the database already holds records for."""


def _alive_here(host: str, pid: int) -> bool:
    """False only when the owner ran on this machine and its process is gone."""
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class TuningDatabase:
    """Tuning records in an SQLite file (created when missing), keyed by target, device and workload.

    Each method runs in its own transaction; the object may be shared by the threads of one process
    only through separate instances (one connection each)."""

    def __init__(self, path: str | os.PathLike, busy_seconds: float = BUSY_SECONDS):
        self.path = os.fspath(path)
        if os.path.isdir(self.path):
            raise TuningDatabaseError(f"{self.path} is a directory, not a tuning database")
        try:
            self._db = sqlite3.connect(self.path, timeout=busy_seconds, isolation_level=None)
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise TuningDatabaseError(f"{self.path} is a tuning database of schema {version}; this version "
                                          f"reads {SCHEMA_VERSION}")
            self._db.execute("PRAGMA journal_mode=WAL")
            with self._write() as db:
                for statement in _SCHEMA:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as err:
            with contextlib.suppress(AttributeError):
                self._db.close()
            raise TuningDatabaseError(f"{self.path} is not a tuning database: {err}") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "TuningDatabase":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (BEGIN IMMEDIATE) so that it never fails half way for a lock."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def read(self, target: str | None = None, device: str | None = None) -> TuningLog:
        """The usable records (of `target` and `device` when given), in the order they were added, and the
        rows skipped as `file:row` with why."""
        where, args = _filter(target, device)
        records, skipped = [], []
        for row, text in self._db.execute(f"SELECT id, record FROM records {where} ORDER BY id", args):
            raw = text if isinstance(text, bytes) else str(text).encode("utf-8", "surrogatepass")
            try:
                records.append(parse_line(raw))
            except ValueError as err:
                skipped.append(SkippedLine(self.path, row, str(err)))
        return TuningLog(records, skipped)

    def history(self, target: str, device: str) -> TuningHistory:
        """The usable records of `target` measured on `device`, as selection and the cost model read them; each
        bad row is skipped with a warning naming `file:row` and why (logger "strategies")."""
        read = self.read(target, device)
        for row in read.skipped:
            logger.warning("%s: tuning record skipped (%s)", row.where, row.reason)
        return TuningHistory(read.records, self.path)

    def measured(self, target: str, device: str, workloads: Iterable[str]) -> set[str]:
        """The workloads among `workloads` that the database holds records of for `target` on `device`."""
        wanted = set(workloads)
        rows = self._db.execute("SELECT DISTINCT workload FROM records WHERE target = ? AND device = ?",
                                (target, device))
        return {w for (w,) in rows if w in wanted}

    def claim(self, target: str, device: str, workloads: Sequence[str], owner: str) -> Claim:
        """Claim, in one transaction, each workload that is neither measured nor claimed by another live owner.

        A claim of `owner` itself (a retried task) is taken over; one whose owner died on this machine or
        that is older than `CLAIM_LEASE_SECONDS` is free."""
        host, pid, now = socket.gethostname(), os.getpid(), time.time()
        mine, elsewhere = [], []
        with self._write() as db:
            done = self.measured(target, device, workloads)
            for workload in dict.fromkeys(workloads):
                if workload in done:
                    continue
                held = db.execute("SELECT owner, host, pid, claimed_at FROM claims WHERE target = ? AND device = ? "
                                  "AND workload = ?", (target, device, workload)).fetchone()
                if held is not None and held[0] != owner and now - held[3] < CLAIM_LEASE_SECONDS \
                        and _alive_here(held[1], held[2]):
                    elsewhere.append(workload)
                    continue
                db.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (target, device, workload, owner, host, pid, now))
                mine.append(workload)
        return Claim(tuple(mine), tuple(elsewhere), tuple(w for w in dict.fromkeys(workloads) if w in done))

    def add(self, records: Iterable[TuningRecord], owner: str | None = None) -> int:
        """Store `records`, each under the device it names, and release `owner`'s claims on their workloads,
        in one transaction; a record the database already holds (same target, device, workload,
        implementation and configuration) is left as it is. Returns how many were added."""
        added = 0
        with self._write() as db:
            for record in records:
                if not record.device:
                    raise ValueError(f"a record of {record.workload} names no device; the database keys records "
                                     "by device (dataclasses.replace(record, device=this_device().key))")
                cursor = db.execute("INSERT OR IGNORE INTO records (target, device, workload, implementation, config, "
                                    "record) VALUES (?, ?, ?, ?, ?, ?)", _row(record))
                added += cursor.rowcount
                if owner is not None:
                    db.execute("DELETE FROM claims WHERE target = ? AND device = ? AND workload = ? AND owner = ?",
                               (record.target, record.device, record.workload, owner))
        return added

    def release(self, owner: str) -> None:
        """Drop every claim `owner` still holds (workloads it gave up on)."""
        with self._write() as db:
            db.execute("DELETE FROM claims WHERE owner = ?", (owner,))

    def import_log(self, path: str | os.PathLike, device: str | None = None) -> tuple[int, list[SkippedLine]]:
        """Add the records of a JSON-lines log; a record naming no device is taken as measured on `device`
        (default: this machine, `this_device()`). Returns how many were new, and the lines skipped."""
        log = read_log(path)
        default = device if device is not None else this_device().key
        return self.add(r if r.device else replace(r, device=default) for r in log.records), log.skipped

    def export_log(self, path: str | os.PathLike, target: str | None = None, device: str | None = None) -> int:
        """Append the usable records (of `target` and `device` when given) to a JSON-lines log, each line
        naming its device; returns how many were written."""
        records = self.read(target, device).records
        append_records(path, records)
        return len(records)


def measure_once(db: TuningDatabase, items: Sequence[tuple[Workload, frozenset[int]]], target: str, device: str,
                 measure: Callable[[list[tuple[Workload, frozenset[int]]]], Iterable[list[TuningRecord]]],
                 owner: str | None = None, poll_seconds: float = POLL_SECONDS) -> list[TuningRecord]:
    """Measure with `measure` each workload of `items` that `db` holds no record of for `target` on `device`,
    adding each chunk of records as `measure` yields it; workloads another live owner has claimed are
    waited for (checked every `poll_seconds`) and measured here only if their claim is given up.
    Returns the records this call added (with their device)."""
    owner = owner or new_owner()
    pending = {workload.key: (workload, constant) for workload, constant in items}
    written: list[TuningRecord] = []
    try:
        while pending:
            claim = db.claim(target, device, list(pending), owner)
            for records in measure([pending[key] for key in claim.mine]) if claim.mine else ():
                records = [replace(r, device=device) for r in records]
                db.add(records, owner)
                written.extend(records)
            pending = {key: pending[key] for key in claim.elsewhere}
            if pending and not claim.mine:
                time.sleep(poll_seconds)
    finally:
        db.release(owner)
    return written


def _filter(target: str | None, device: str | None) -> tuple[str, tuple[str, ...]]:
    """The WHERE clause selecting `target` and `device` (each when given), and its arguments."""
    terms = [(name, value) for name, value in (("target", target), ("device", device)) if value is not None]
    if not terms:
        return "", ()
    return "WHERE " + " AND ".join(f"{name} = ?" for name, _ in terms), tuple(value for _, value in terms)


def _row(record: TuningRecord) -> tuple[str, ...]:
    """A record's columns: its key, then the record itself as a log line."""
    return (record.target, record.device, record.workload, record.implementation,
            json.dumps(record.config, sort_keys=True), record.to_json())
