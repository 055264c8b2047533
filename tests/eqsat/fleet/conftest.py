"""Fixtures of the fleet tests: a local Ray cluster of two workers (skipped without Ray), FIFO model files
that block the task reading them until the test hands the model over, and killing that task's worker."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Callable, Iterator

import pytest

import ir
from eqsat.fleet import ProcessPool, RayCluster, ray_available


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """A local Ray cluster of two worker CPUs for the session (the engine uses it and leaves it running)."""
    if not ray_available():
        pytest.skip("Ray is not installed (pip install 'relay-eqsat[distributed]')")
    import ray
    ray.init(num_cpus=2, object_store_memory=256 << 20, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(params=["processes", "ray"])
def engine(request: pytest.FixtureRequest) -> Callable[[], object]:
    """A fresh engine of two workers: a process pool, or the session's local Ray cluster."""
    if request.param == "ray":
        request.getfixturevalue("ray_cluster")
        return RayCluster
    return lambda: ProcessPool(2)


def onnx_bytes(name: str) -> bytes:
    """A small zoo model as ONNX."""
    return ir.frontend.to_onnx(*ir.models.get(name, small=True)).SerializeToString()


def readers(path: Path) -> list[int]:
    """The processes (other than this one) that have `path` open."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in fds):
                found.append(int(pid))
        except OSError:  # gone meanwhile, or not ours to look at
            continue
    return found


def wait_for(condition: Callable[[], object], what: str, polls: int = 6000) -> None:
    """Wait until `condition()` holds (a guard against a hang, not a timing assertion)."""
    event = threading.Event()
    for _ in range(polls):
        if condition():
            return
        event.wait(0.05)
    raise AssertionError(f"gave up waiting for {what}")


@contextlib.contextmanager
def blocking_model(path: Path, data: bytes) -> Iterator[Callable[[], int]]:
    """A FIFO at `path` whose reader (a task loading it as a model) blocks until the block ends, then reads
    `data`. The block gets a function that kills the worker blocked reading it (inside its task) and
    returns its pid; the task's retry then blocks the same way.

    This process holds the FIFO open for writing (and reading, so that opening never blocks: a
    reader's file descriptor is then visible while it waits in `read`)."""
    os.mkfifo(path)
    held = os.open(path, os.O_RDWR)

    def kill() -> int:
        wait_for(lambda: readers(path), f"a worker to open {path}")
        (victim,) = readers(path)
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: victim not in readers(path), "the killed worker to let go of the FIFO")
        return victim

    def feed() -> None:
        with os.fdopen(held, "wb") as f:  # the reader gets `data`, then end of file
            f.write(data)

    try:
        yield kill
    finally:  # a writer thread: the pipe holds 64 KiB, the rest waits for a reader
        threading.Thread(target=feed, daemon=True).start()
