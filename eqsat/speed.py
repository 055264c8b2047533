"""Never slower, checked: the optimized ONNX program timed against the input in the session it will run in.

Both models run in ONNX Runtime sessions alike (graph optimizer `optimizer`, `threads` intra-op
threads) on the same inputs. After a warm-up, each of `rounds` rounds times a batch of runs of one
model, then of the other (the order alternates), so a change of load hits both alike; the
decision reads the per-round ratios ours / input. With one thread (the default) the clock is the
thread's CPU time, which foreign load on the machine barely moves, so the decision is the same
on a quiet and a loaded machine. Ours is kept only when it is faster in at least three rounds of
four (the upper quartile of the ratios is below 1): a program that is only as fast as the input
gives the input back, unchanged, unless a program with only part of ours is faster by the same
rule (`SpeedVerdict`, `eqsat.regions`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from strategies.ort_timing import ort_session, quiet_runner, timing_clock

from .errors import SpeedCheckError

__all__ = ["SpeedCheck", "Tried", "SpeedVerdict", "speed_check", "ROUNDS", "BATCH_SECONDS", "RULE"]

ROUNDS = 9
"""timed rounds, each one batch of each model."""
BATCH_SECONDS = 0.05
"""the length of one batch of runs (at least one run), from the warm-up's timing."""
RULE = ("the first program, in the order tried, whose upper quartile of the ratios (program / input) is below 1; "
        "else the input")
"""which model a `SpeedVerdict` keeps."""


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

    def timing(self) -> str:
        """Where and how it was timed, and the ratios."""
        low, high = self.quartiles()
        return (f"speed check under onnxruntime (optimizer {self.optimizer}, {self.threads} thread(s), {self.clock} "
                f"clock): ours / input {self.median:.3f} (quartiles {low:.3f}-{high:.3f} over {len(self.ratios)} "
                f"rounds)")

    def summary(self) -> str:
        verdict = ("ours kept" if self.kept == "ours" else
                   "the input was kept: ours is not faster in three rounds of four")
        return f"{self.timing()}; {verdict}"

    def to_dict(self) -> dict[str, Any]:
        return {"ratios": list(self.ratios), "median": self.median, "quartiles": list(self.quartiles()),
                "kept": self.kept, "optimizer": self.optimizer, "threads": self.threads, "clock": self.clock}


@dataclass(frozen=True)
class Tried:
    """One program timed against the input: ours, or ours without some op families (`eqsat.regions`)."""

    without: tuple[str, ...] = ()
    """the families left out (none for ours)."""
    ops: tuple[str, ...] = ()
    """their ops."""
    check: SpeedCheck | None = None
    note: str = ""
    """why it was not timed: the same program as one tried before, the input's, or not verified."""

    @property
    def name(self) -> str:
        return "ours" + (f" without {', '.join(self.without)}" if self.without else "")

    @property
    def faster(self) -> bool:
        return self.check is not None and self.check.kept == "ours"

    def summary(self) -> str:
        if self.check is None:
            return f"{self.name}: not timed, {self.note}"
        low, high = self.check.quartiles()
        return (f"{self.name} / input {self.check.median:.3f} (quartiles {low:.3f}-{high:.3f}): "
                f"{'faster' if self.faster else 'not faster'}")

    def to_dict(self) -> dict[str, Any]:
        timed = {"ratios": list(self.check.ratios), "median": self.check.median,
                 "quartiles": list(self.check.quartiles())} if self.check else {"note": self.note}
        return {"program": self.name, "without": list(self.without), "ops": list(self.ops), "faster": self.faster,
                **timed}


@dataclass(frozen=True)
class SpeedVerdict:
    """Which model is kept: the first of `tried` (ours first, then ours without some families) that is
    faster than the input, else the input (`RULE`); with the kept program's result when it is not ours."""

    tried: tuple[Tried, ...]
    result: Any = field(default=None, compare=False, repr=False)
    """the `eqsat.Optimized` of the kept program when it is ours without some families, else None."""

    @property
    def ours(self) -> SpeedCheck:
        check = self.tried[0].check
        assert check is not None, "ours is always timed"
        return check

    @property
    def kept(self) -> str:
        """"ours", "ours without <families>" or "input"."""
        return next((t.name for t in self.tried if t.faster), "input")

    @property
    def median(self) -> float:
        """The median ratio of the kept program, or of ours when the input is kept."""
        return next((t.check.median for t in self.tried if t.faster and t.check), self.ours.median)

    def summary(self) -> str:
        if len(self.tried) == 1:
            return self.ours.summary()
        kept = self.kept
        ending = ("the regions that pay were kept" if kept != "input" else
                  "the input was kept: no program tried is faster in three rounds of four")
        return "\n".join([f"{self.ours.timing()}; ours is not faster in three rounds of four, so programs with "
                          f"part of it were timed:", *("  " + t.summary() for t in self.tried[1:]),
                          f"  kept: {kept}; {ending}"])

    def to_dict(self) -> dict[str, Any]:
        return {**self.ours.to_dict(), "kept": self.kept, "rule": RULE, "rounds": len(self.ours.ratios),
                "tried": [t.to_dict() for t in self.tried]}


def speed_check(original: Any, ours: Any, feeds: Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]], *,
                optimizer: str = "all", threads: int = 1, rounds: int = ROUNDS) -> SpeedCheck:
    """Time `ours` against `original` (ONNX models or their bytes) on `feeds` as described above; given
    several input sets, on the first the original runs on (a mask as long as the past and new tokens
    together, say). Raises `SpeedCheckError` when it runs on none."""
    clock_name, clock = timing_clock(threads)
    sessions = [ort_session(m, threads, optimizer) for m in (original, ours)]
    for feed in [feeds] if isinstance(feeds, Mapping) else feeds:
        runs = [_runner(s, feed) for s in sessions]
        try:
            first = _warm_up(runs[0], clock)
        except Exception:  # noqa: BLE001 - the input model fails on this input set: the next one
            continue
        per_run = [first, _warm_up(runs[1], clock)]
        break
    else:
        raise SpeedCheckError("the speed check cannot time the programs: the input model fails on every input set "
                              "drawn for it (optimize without the speed check to skip it)")
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
    run = quiet_runner(session)  # an input set the input model fails on is passed over, not logged
    return lambda: run(feeds)


def _warm_up(run: Callable[[], Any], clock: Callable[[], float], count: int = 3) -> float:
    """Seconds of one run, after `count` runs to warm caches and allocators."""
    for _ in range(count):
        run()
    start = clock()
    run()
    return clock() - start
