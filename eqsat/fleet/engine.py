"""Where fleet tasks run: Ray (a local cluster or `ray://...`), or a process pool on this machine.

A task is a picklable top-level function and one argument; its result comes back to the driver,
which alone writes files and the tuning database. Tasks must not depend on which worker runs them.
Both engines retry a task whose worker died (`RETRIES` times): Ray re-runs it on another worker;
the process pool, which breaks as a whole when one of its processes dies, is restarted and re-runs
every task that had not finished. A task that raises is not retried: its exception comes back as
a `TaskLost` result, as does a task whose retries are spent.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Protocol

__all__ = ["RETRIES", "TaskLost", "Engine", "ProcessPool", "RayCluster", "ray_available", "choose_engine"]

RETRIES = 3
"""times a task whose worker died is run again before it is given up."""


@dataclass(frozen=True)
class TaskLost:
    """The result of a task that raised, or whose worker died more than `RETRIES` times."""

    reason: str


class Engine(Protocol):
    """Runs tasks and hands back each result as its task finishes; a context manager."""

    name: str
    """what the engine is, for reports (e.g. "ray (local, 2 CPUs)", "process pool (2 workers)")."""

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> int:
        """Start `fn(arg)` somewhere; returns the task's number."""

    def next_done(self) -> tuple[int, Any]:
        """Wait for any running task to finish: its number and result (`TaskLost` when it failed)."""

    @property
    def running(self) -> int:
        """Tasks submitted and not yet handed back by `next_done`."""

    def __enter__(self) -> "Engine": ...

    def __exit__(self, *exc: object) -> None: ...


def ray_available() -> bool:
    """True when Ray can be imported (the optional `distributed` extra)."""
    return importlib.util.find_spec("ray") is not None


def choose_engine(workers: int | None = None, address: str | None = None) -> Engine:
    """The engine the command line asks for: Ray at `address` (or `RAY_ADDRESS`) when given; else a
    process pool of `workers` when given or when Ray is not installed (default: this machine's
    CPUs); else a local Ray cluster."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        if workers is not None:
            raise ValueError("give a Ray cluster's address or a number of local workers, not both")
        return RayCluster(address=address)
    if workers is not None or not ray_available():
        return ProcessPool(workers or os.cpu_count() or 1)
    return RayCluster()


class ProcessPool:
    """Tasks in `workers` processes on this machine (spawned: nothing of the driver's state is inherited)."""

    def __init__(self, workers: int):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.name = f"process pool ({workers} worker{'s' if workers > 1 else ''})"
        self._pool: ProcessPoolExecutor | None = None
        self._tasks: dict[int, tuple[Callable[[Any], Any], Any]] = {}
        self._futures: dict[Future, int] = {}
        self._attempts: dict[int, int] = {}
        self._lost: deque[tuple[int, TaskLost]] = deque()

    def __enter__(self) -> "ProcessPool":
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _start(self) -> None:
        self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> int:
        number = len(self._attempts)
        self._tasks[number] = (fn, arg)
        self._attempts[number] = 0
        self._launch(number)
        return number

    def _launch(self, number: int) -> None:
        self._attempts[number] += 1
        fn, arg = self._tasks[number]
        assert self._pool is not None, "ProcessPool is used as a context manager"
        self._futures[self._pool.submit(fn, arg)] = number

    @property
    def running(self) -> int:
        return len(self._tasks) + len(self._lost)

    def next_done(self) -> tuple[int, Any]:
        while not self._lost:
            done, _ = wait(list(self._futures), return_when=FIRST_COMPLETED)
            broken = False
            for future in done:
                number = self._futures.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool:
                    broken = True
                    self._futures[future] = number  # re-run below, with the others the pool lost
                    continue
                except Exception as err:  # the task itself raised: its failure is its result
                    result = TaskLost(f"{type(err).__name__}: {err}")
                del self._tasks[number]
                return number, result
            if broken:
                self._restart()
        number, lost = self._lost.popleft()
        return number, lost

    def _restart(self) -> None:
        """A worker died and took the pool down: a new pool re-runs every unfinished task."""
        unfinished = sorted(self._futures.values())
        self._futures.clear()
        assert self._pool is not None
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._start()
        for number in unfinished:
            if self._attempts[number] > RETRIES:
                del self._tasks[number]
                self._lost.append((number, TaskLost(f"its worker died {self._attempts[number]} times")))
            else:
                self._launch(number)


class RayCluster:
    """Tasks on a Ray cluster: the one at `address` (`ray://host:10001`, or "auto"), the one this
    process is already connected to, or else a local one of `num_cpus` CPUs started for the block."""

    def __init__(self, address: str | None = None, num_cpus: int | None = None):
        if not ray_available():
            raise ModuleNotFoundError("running on Ray needs the ray package: pip install 'relay-eqsat[distributed]'",
                                      name="ray")
        self.address, self.num_cpus = address, num_cpus
        self.name = f"ray ({address})" if address else "ray (local)"
        self._started = False
        self._remote: dict[Callable[[Any], Any], Any] = {}
        self._refs: dict[Any, int] = {}
        self._count = 0

    def __enter__(self) -> "RayCluster":
        import ray
        if not ray.is_initialized():
            options: dict[str, Any] = {"address": self.address} if self.address else {"num_cpus": self.num_cpus}
            ray.init(**options, include_dashboard=False, log_to_driver=False, configure_logging=False)
            self._started = True
        cpus = int(ray.cluster_resources().get("CPU", 0))
        self.name = f"{self.name.split(' (')[0]} ({self.address or 'local'}, {cpus} CPUs)"
        return self

    def __exit__(self, *exc: object) -> None:
        import ray
        for ref in self._refs:
            ray.cancel(ref, force=True)
        self._refs.clear()
        if self._started:
            ray.shutdown()
            self._started = False

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> int:
        import ray
        if fn not in self._remote:
            self._remote[fn] = ray.remote(max_retries=RETRIES, retry_exceptions=False)(fn)
        number = self._count
        self._count += 1
        self._refs[self._remote[fn].remote(arg)] = number
        return number

    @property
    def running(self) -> int:
        return len(self._refs)

    def next_done(self) -> tuple[int, Any]:
        import ray
        (ref,), _ = ray.wait(list(self._refs), num_returns=1)
        number = self._refs.pop(ref)
        try:
            return number, ray.get(ref)
        except Exception as err:  # a task that raised, or whose worker died past its retries
            cause = getattr(err, "cause", None) or err
            return number, TaskLost(f"{type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}")
