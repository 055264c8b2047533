"""HiGHS (scipy's `milp`) behind a hard deadline: each solve runs in a separate Python process that
is killed when the deadline passes, whatever HiGHS is doing.

HiGHS's own time limit is checked between phases only, and a solve was seen to run 260 s past a
60 s limit. A worker is a child interpreter started with `subprocess` (fork + exec: safe in a
parent that holds threads, unlike a bare `fork`, and, unlike multiprocessing's "spawn", it never
re-imports the caller's main script) running this file as a script, so it imports numpy and scipy
only. Workers are kept and reused (starting one costs about a second, mostly importing scipy);
one is killed at a missed deadline and a new one started for the next solve. Requests and replies
are pickled through the child's stdin and stdout, each preceded by its length.

Only numpy, scipy and the standard library may be imported here, and only plain tuples and numpy
arrays cross the pipe: the child runs this file alone, as `__main__`.
"""

from __future__ import annotations

import atexit
import os
import pickle
import re
import selectors
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

__all__ = ["MilpProblem", "MilpResult", "solve", "solve_with_deadline", "KILL_GRACE_S", "HIGHS_SHARE"]

KILL_GRACE_S = 0.5
"""how long past a solve's time limit its answer is awaited before the worker is killed."""
HIGHS_SHARE = 0.9
"""HiGHS is given this share of a solve's time limit, so that it usually stops by itself, with its
best solution and bound, before the worker has to be killed (a sub-MIP can outlast its check)."""
_HEADER = struct.Struct("<Q")


@dataclass(frozen=True)
class MilpProblem:
    """min c.x subject to row_lower <= A x <= row_upper, col_lower <= x <= col_upper, x[j] integer
    where integrality[j] is 1; A in CSR parts (data, indices, indptr) of shape (rows, len(c))."""

    c: np.ndarray
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    integrality: np.ndarray


@dataclass(frozen=True)
class MilpResult:
    """HiGHS's model status ("Optimal", "Time limit reached", ...), its best solution (None when
    there is none) and its proven lower bound (None when unknown); `killed` when the deadline passed."""

    status: str
    x: np.ndarray | None
    dual_bound: float | None
    killed: bool = False


def solve(problem: MilpProblem, seconds: float) -> MilpResult:
    """Solve in this process with HiGHS's own (soft) time limit."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix

    matrix = csr_matrix((problem.data, problem.indices, problem.indptr),
                        shape=(len(problem.row_lower), len(problem.c)))
    constraints = [LinearConstraint(matrix, problem.row_lower, problem.row_upper)] if matrix.shape[0] else []
    res = milp(problem.c, constraints=constraints, integrality=problem.integrality,
               bounds=Bounds(problem.col_lower, problem.col_upper),
               options={"time_limit": max(seconds, 1e-3), "disp": False})
    found = re.search(r"model_status is ([^;]*);", str(res.message)) or re.search(r"HiGHS Status \d+: ([^)]*)\)",
                                                                                  str(res.message))
    status = found.group(1).strip() if found else str(res.message)
    return MilpResult(status, res.x, getattr(res, "mip_dual_bound", None))


class _Worker:
    """One child process answering `solve` requests in turn."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-I", os.path.abspath(__file__)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, close_fds=True)
        os.set_blocking(self.proc.stdin.fileno(), False)

    def call(self, problem: MilpProblem, seconds: float, deadline: float) -> MilpResult | None:
        """The child's answer, or None when `deadline` (a `time.monotonic` value) passed first."""
        payload = pickle.dumps((tuple(vars(problem).values()), seconds), protocol=pickle.HIGHEST_PROTOCOL)
        if not _transfer(self.proc.stdin, _HEADER.pack(len(payload)) + payload, deadline):
            return None
        header = _receive(self.proc.stdout, _HEADER.size, deadline)
        body = None if header is None else _receive(self.proc.stdout, _HEADER.unpack(header)[0], deadline)
        return None if body is None else MilpResult(*pickle.loads(body))

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            pipe.close()


def _transfer(pipe: BinaryIO, data: bytes, deadline: float) -> bool:
    """Write all of `data` before `deadline`; False when it passed (or the child is gone)."""
    view = memoryview(data)
    with selectors.DefaultSelector() as sel:
        sel.register(pipe, selectors.EVENT_WRITE)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                return False
            try:
                view = view[os.write(pipe.fileno(), view):]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                return False
    return True


def _receive(pipe: BinaryIO, size: int, deadline: float) -> bytes | None:
    """Read exactly `size` bytes before `deadline`; None when it passed or the child is gone."""
    parts: list[bytes] = []
    with selectors.DefaultSelector() as sel:
        sel.register(pipe, selectors.EVENT_READ)
        while size:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                return None
            chunk = os.read(pipe.fileno(), min(size, 1 << 20))
            if not chunk:
                return None
            parts.append(chunk)
            size -= len(chunk)
    return b"".join(parts)


_idle: list[_Worker] = []
_lock = threading.Lock()


def solve_with_deadline(problem: MilpProblem, seconds: float, kill_after: float | None = None) -> MilpResult:
    """Solve in a worker process within `seconds` (HiGHS's own limit is `HIGHS_SHARE` of it); the
    worker is killed, and a result with `killed` set and no solution returned, `kill_after` seconds
    from now (default: `seconds + KILL_GRACE_S`)."""
    seconds = max(seconds, 0.0)
    deadline = time.monotonic() + (seconds + KILL_GRACE_S if kill_after is None else kill_after)
    seconds *= HIGHS_SHARE
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None or worker.proc.poll() is not None:
        try:
            worker = _Worker()
        except OSError:  # no interpreter to start (an embedded Python): HiGHS's own limit must do
            return solve(problem, seconds)
    result = worker.call(problem, seconds, deadline)
    if result is None:
        worker.kill()
        return MilpResult("Time limit reached (solver killed)", None, None, killed=True)
    with _lock:
        _idle.append(worker)
    return result


@atexit.register
def _close_idle() -> None:
    with _lock:
        while _idle:
            _idle.pop().kill()


def _serve(inp: BinaryIO, out: BinaryIO) -> None:
    """The child's loop: read a request, solve it, write the reply; stop at end of input."""
    while header := inp.read(_HEADER.size):
        fields, seconds = pickle.loads(inp.read(_HEADER.unpack(header)[0]))
        result = solve(MilpProblem(*fields), seconds)
        reply = pickle.dumps((result.status, result.x, result.dual_bound), protocol=pickle.HIGHEST_PROTOCOL)
        out.write(_HEADER.pack(len(reply)) + reply)
        out.flush()


if __name__ == "__main__":
    _serve(sys.stdin.buffer, sys.stdout.buffer)
