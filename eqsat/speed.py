"""Never slower, checked: the optimized ONNX program timed against the input in the session it will run in.

Both models run in ONNX Runtime sessions alike (graph optimizer `optimizer`, `threads` intra-op
threads) on the same inputs. After a warm-up, each of `rounds` rounds times a batch of runs of one
model, then of the other (the order alternates), so a change of load hits both alike; the
decision reads the per-round ratios ours / input. With one thread (the default) the clock is the
thread's CPU time, which foreign load on the machine barely moves, so the decision is the same
on a quiet and a loaded machine. Ours is kept only when it is faster in at least three rounds of
four (the upper quartile of the ratios is below 1): a program that is only as fast as the input
gives the input back, unchanged.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from strategies.ort_timing import ort_session, timing_clock

__all__ = ["SpeedCheck", "speed_check", "ROUNDS", "BATCH_SECONDS"]

ROUNDS = 9
"""timed rounds, each one batch of each model."""
BATCH_SECONDS = 0.05
"""the length of one batch of runs (at least one run), from the warm-up's timing."""


@dataclass(frozen=True)
class SpeedCheck:
    """The outcome of `speed_check`: per-round ratios ours / input and which model was kept."""

    ratios: tuple[float, ...]
    kept: str
    """"ours" or "input"."""
    optimizer: str
    threads: int
    clock: str

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)

    def quartiles(self) -> tuple[float, float]:
        q = np.percentile(self.ratios, [25, 75])
        return float(q[0]), float(q[1])

    def summary(self) -> str:
        low, high = self.quartiles()
        verdict = ("ours kept" if self.kept == "ours" else
                   "the input was kept: ours is not faster in three rounds of four")
        return (f"speed check under onnxruntime (optimizer {self.optimizer}, {self.threads} thread(s), {self.clock} "
                f"clock): ours / input {self.median:.3f} (quartiles {low:.3f}-{high:.3f} over {len(self.ratios)} "
                f"rounds); {verdict}")

    def to_dict(self) -> dict[str, Any]:
        return {"ratios": list(self.ratios), "median": self.median, "quartiles": list(self.quartiles()),
                "kept": self.kept, "optimizer": self.optimizer, "threads": self.threads, "clock": self.clock}


def speed_check(original: Any, ours: Any, feeds: Mapping[str, np.ndarray], *, optimizer: str = "all",
                threads: int = 1, rounds: int = ROUNDS) -> SpeedCheck:
    """Time `ours` against `original` (ONNX models or their bytes) on `feeds` as described above."""
    clock_name, clock = timing_clock(threads)
    sessions = [ort_session(m, threads, optimizer) for m in (original, ours)]
    runs = [_runner(s, feeds) for s in sessions]
    per_run = [_warm_up(run, clock) for run in runs]
    batch = [max(1, int(BATCH_SECONDS / max(t, 1e-6))) for t in per_run]
    ratios = []
    for r in range(rounds):
        times = [0.0, 0.0]
        for k in ((0, 1) if r % 2 == 0 else (1, 0)):
            start = clock()
            for _ in range(batch[k]):
                runs[k]()
            times[k] = (clock() - start) / batch[k]
        ratios.append(times[1] / times[0] if times[0] > 0 else 1.0)
    high = float(np.percentile(ratios, 75))
    return SpeedCheck(tuple(ratios), "ours" if high < 1.0 else "input", optimizer, threads, clock_name)


def _runner(session: Any, feeds: Mapping[str, np.ndarray]) -> Callable[[], Any]:
    names = {i.name for i in session.get_inputs()}
    mine = {k: v for k, v in feeds.items() if k in names}
    return lambda: session.run(None, mine)


def _warm_up(run: Callable[[], Any], clock: Callable[[], float], count: int = 3) -> float:
    """Seconds of one run, after `count` runs to warm caches and allocators."""
    for _ in range(count):
        run()
    start = clock()
    run()
    return clock() - start
