"""Never slower, checked: the optimized ONNX program timed against the input in the session it will run in.

Both models run in ONNX Runtime sessions alike (graph optimizer `optimizer`, `threads` intra-op
threads) on the same inputs, and the input runs in a second session too, the control. After a
warm-up, each round times a batch of runs of each of the three (the order turns from round to
round), so a change of load hits all alike; the decision reads the per-round ratios ours / input,
and the control's ratios control / input say how far two sessions of one program drift apart in
this run. With one thread (the default) the clock is the thread's CPU time, which foreign load on
the machine moves far less than wall time (a large model's runs still wait on memory that other
work shares).

The decision is sequential (`RULE`). Rounds come `ROUNDS` at a time. After each block, the median
ratio's confidence interval (`CONFIDENCE`, distribution-free: order statistics of the ratios) is
compared with `1 - margin`, where the margin is `MARGIN` plus the control's distance from 1 (the
noise this run measured): wholly below, ours is kept; wholly above, the input; across it, another
block is timed, up to `MAX_ROUNDS` (fewer for a large model: `TIMED_SECONDS`, `VERDICT_SECONDS`),
after which the input is kept. So a clear call costs one block, and a close one is either resolved
by more rounds or settled on the input: a program must be faster than the input by more than the
margin, and by more than the spread of its own ratios, to be kept. A program that is not gives the
input back, unchanged, unless a program with only part of ours is faster by the same rule
(`SpeedVerdict`, `eqsat.regions`).
"""

from __future__ import annotations

import itertools
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from scipy.stats import binom

from strategies.ort_timing import ort_session, quiet_runner, timing_clock

from .errors import SpeedCheckError

__all__ = ["SpeedCheck", "Tried", "SpeedVerdict", "InputSessions", "speed_check", "decision", "margin",
           "median_interval", "ROUNDS", "MAX_ROUNDS", "BATCH_SECONDS", "TIMED_SECONDS", "VERDICT_SECONDS",
           "WARM_SECONDS", "MARGIN", "CONFIDENCE", "RULE"]

ROUNDS = 9
"""timed rounds per block, each one batch of each model."""
MAX_ROUNDS = 27
"""the most rounds one program is timed for; a call still open then keeps the input."""
TIMED_SECONDS = 10.0
"""the CPU seconds of timed runs one check may take, as estimated from the warm-up: as many blocks
as fit, one at least. A large model (BERT-base: a round of its three sessions takes a second or
more) gets one block; its rounds are noisier than a small model's (its weights stream from
memory, which other work on the machine shares), and more of them rarely decide it."""
VERDICT_SECONDS = 15.0
"""the CPU seconds of timed runs all the checks of one verdict may take together: a check's blocks
fit in what is left of it too (one at least), and a program without some families is timed only
while one block of the last check's length fits (BERT-base: ours and one such program; a small
model: every program, each with all its blocks)."""
BATCH_SECONDS = 0.05
"""the length of one batch of runs (at least one run), from the warm-up's timing."""
MARGIN = 0.01
"""how much faster than the input a program must be, beyond the control's distance from 1."""
CONFIDENCE = 0.95
"""the least coverage of the median ratio's interval: of each check's, or where a verdict may time
several programs, of all its checks together (`speed_check`'s `confidence`)."""
RULE = (f"the first program, in the order tried, whose median ratio (program / input) lies below 1 - margin "
        f"with {CONFIDENCE:.0%} confidence over all programs tried, the margin being {MARGIN:g} plus the distance "
        f"from 1 of the median ratio of a second session of the input (the control); timed in blocks of {ROUNDS} rounds while the "
        f"interval spans 1 - margin, at most {MAX_ROUNDS} and at most as many blocks as take {TIMED_SECONDS:g} "
        f"CPU seconds (one at least) and fit in the {VERDICT_SECONDS:g} CPU seconds all programs of one verdict "
        f"may take (a program after ours is timed only while one block fits); else the input")
"""which model a `SpeedVerdict` keeps."""


@dataclass(frozen=True)
class SpeedCheck:
    """The outcome of `speed_check`: per-round ratios ours / input and which model was kept."""

    ratios: tuple[float, ...]
    controls: tuple[float, ...]
    """per round, the control's time / the input's: two sessions of the input."""
    kept: str
    """"ours" or "input"."""
    optimizer: str
    threads: int
    clock: str
    confidence: float = CONFIDENCE
    """the coverage of this check's interval."""

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)

    def quartiles(self) -> tuple[float, float]:
        q = np.percentile(self.ratios, [25, 75])
        return float(q[0]), float(q[1])

    def interval(self) -> tuple[float, float]:
        """The median ratio's confidence interval (`median_interval`)."""
        return median_interval(self.ratios, self.confidence)

    @property
    def margin(self) -> float:
        """How much faster than the input ours had to be (`margin`)."""
        return margin(self.controls)

    def spread(self) -> str:
        """The median ratio, its interval, the rounds it was measured over and the margin."""
        low, high = self.interval()
        return (f"{self.median:.3f} ({self.confidence:.1%} interval {low:.3f}-{high:.3f} over "
                f"{len(self.ratios)} rounds; control {statistics.median(self.controls):.3f}, margin {self.margin:.1%})")

    def timing(self) -> str:
        """Where and how it was timed, and the ratios."""
        return (f"speed check under onnxruntime (optimizer {self.optimizer}, {self.threads} thread(s), {self.clock} "
                f"clock): ours / input {self.spread()}")

    def summary(self) -> str:
        verdict = "ours kept" if self.kept == "ours" else f"the input was kept: {NOT_FASTER}"
        return f"{self.timing()}; {verdict}"

    def measures(self) -> dict[str, Any]:
        """What was measured and what the decision read, enough to redo it (`decision`)."""
        return {"ratios": list(self.ratios), "controls": list(self.controls), "median": self.median,
                "interval": list(self.interval()), "quartiles": list(self.quartiles()), "margin": self.margin,
                "confidence": self.confidence}

    def to_dict(self) -> dict[str, Any]:
        return {**self.measures(), "kept": self.kept, "optimizer": self.optimizer, "threads": self.threads,
                "clock": self.clock}


NOT_FASTER = "ours is not faster by the margin with the stated confidence"


@dataclass(frozen=True)
class Tried:
    """One program timed against the input: ours, or ours without some op families (`eqsat.regions`)."""

    without: tuple[str, ...] = ()
    """the families left out (none for ours)."""
    ops: tuple[str, ...] = ()
    """their ops."""
    check: SpeedCheck | None = None
    note: str = ""
    """why it was not timed (the same program as one tried before, the input's, one that does not run),
    or, timed faster, why it was not kept (it failed verification: programs are verified once they
    are timed faster)."""

    @property
    def name(self) -> str:
        return "ours" + (f" without {', '.join(self.without)}" if self.without else "")

    @property
    def faster(self) -> bool:
        """Timed faster than the input by the rule."""
        return self.check is not None and self.check.kept == "ours"

    @property
    def kept(self) -> bool:
        """Faster, and verified."""
        return self.faster and not self.note

    def summary(self) -> str:
        if self.check is None:
            return f"{self.name}: not timed, {self.note}"
        verdict = "faster" if self.faster else "not faster"
        return f"{self.name} / input {self.check.spread()}: {verdict}{f', but {self.note}' if self.note else ''}"

    def to_dict(self) -> dict[str, Any]:
        timed = {**self.check.measures(), **({"note": self.note} if self.note else {})} if self.check else {
            "note": self.note}
        return {"program": self.name, "without": list(self.without), "ops": list(self.ops), "faster": self.faster,
                "kept": self.kept, **timed}


@dataclass(frozen=True)
class SpeedVerdict:
    """Which model is kept: the first of `tried` (ours first, then ours without some families) that is
    faster than the input, else the input (`RULE`); with the kept program's result."""

    tried: tuple[Tried, ...]
    result: Any = field(default=None, compare=False, repr=False)
    """the `eqsat.Optimized` of the kept program, verified (ours or ours without some families);
    None when the input is kept."""

    @property
    def ours(self) -> SpeedCheck:
        check = self.tried[0].check
        assert check is not None, "ours is always timed"
        return check

    @property
    def kept(self) -> str:
        """"ours", "ours without <families>" or "input"."""
        return next((t.name for t in self.tried if t.kept), "input")

    @property
    def median(self) -> float:
        """The median ratio of the kept program, or of ours when the input is kept."""
        return next((t.check.median for t in self.tried if t.kept and t.check), self.ours.median)

    def summary(self) -> str:
        if len(self.tried) == 1:
            return self.ours.summary()
        kept = self.kept
        ending = ("the regions that pay were kept" if kept != "input" else
                  "the input was kept: no program tried is faster by the rule")
        return "\n".join([f"{self.ours.timing()}; {NOT_FASTER}, so programs with part of it were timed:",
                          *("  " + t.summary() for t in self.tried[1:]),
                          f"  kept: {kept}; {ending}"])

    def to_dict(self) -> dict[str, Any]:
        return {**self.ours.to_dict(), "kept": self.kept, "rule": RULE, "rounds": len(self.ours.ratios),
                "tried": [t.to_dict() for t in self.tried]}


class InputSessions:
    """The input model in two sessions (the input and the control), warmed up on the first input set
    it runs on: what each program of one verdict is timed against (`check`). Raises
    `SpeedCheckError` when the input model runs on none of `feeds`."""

    def __init__(self, original: Any, feeds: Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]], *,
                 optimizer: str = "all", threads: int = 1):
        self.optimizer, self.threads = optimizer, threads
        self.clock_name, self.clock = timing_clock(threads)
        self.spent = 0.0
        """CPU seconds of timed rounds so far, over every check."""
        self.block = 0.0
        """the last check's estimated CPU seconds per block."""
        model = original.SerializeToString() if hasattr(original, "SerializeToString") else original  # once, for both
        sessions = [ort_session(model, threads, optimizer) for _ in range(2)]
        for feed in [feeds] if isinstance(feeds, Mapping) else feeds:
            runs = [_runner(s, feed) for s in sessions]
            try:
                first = _warm_up(runs[0], self.clock)
            except Exception:  # noqa: BLE001 - the input model fails on this input set: the next one
                continue
            self.feed, self.runs, self.per_run = feed, runs, [first, _warm_up(runs[1], self.clock)]
            break
        else:
            raise SpeedCheckError("the speed check cannot time the programs: the input model fails on every input "
                                  "set drawn for it (optimize without the speed check to skip it)")

    def affords_another(self) -> bool:
        """Whether one more check of the last one's block length fits in `VERDICT_SECONDS`."""
        return self.spent + self.block <= VERDICT_SECONDS

    def check(self, ours: Any, *, external: Mapping[str, np.ndarray] | None = None, max_rounds: int = MAX_ROUNDS,
              confidence: float = CONFIDENCE) -> SpeedCheck:
        """Time `ours` (an ONNX model or its bytes; `external` holds the arrays of the weights it
        writes as held in memory, `ir.frontend.to_onnx(external=...)`) against the input as
        described above; the median ratio's interval covers it with probability `confidence` (a
        caller that may time k programs passes 1 - (1 - CONFIDENCE) / k, so that noise keeps a
        program as fast as the input with probability at most 1 - CONFIDENCE over all k)."""
        clock = self.clock
        run = _runner(ort_session(ours, self.threads, self.optimizer, external), self.feed)
        runs = [self.runs[0], run, self.runs[1]]
        per_run = [self.per_run[0], _warm_up(run, clock), self.per_run[1]]
        batch = [max(1, int(BATCH_SECONDS / max(t, 1e-6))) for t in per_run]
        block = ROUNDS * sum(b * t for b, t in zip(batch, per_run))
        seconds = min(TIMED_SECONDS, VERDICT_SECONDS - self.spent)
        rounds = ROUNDS * max(1, min(max_rounds // ROUNDS, int(seconds // max(block, 1e-9))))  # whole blocks
        self.block = block
        ratios: list[float] = []
        controls: list[float] = []
        kept = None
        while kept is None and len(ratios) < rounds:
            for r in range(len(ratios), len(ratios) + ROUNDS):
                times = [0.0, 0.0, 0.0]
                for k in _ORDERS[r % len(_ORDERS)]:
                    start = clock()
                    for _ in range(batch[k]):
                        runs[k]()
                    times[k] = (clock() - start) / batch[k]
                self.spent += sum(b * t for b, t in zip(batch, times))
                ratios.append(times[1] / times[0] if times[0] > 0 else 1.0)
                controls.append(times[2] / times[0] if times[0] > 0 else 1.0)
            kept = decision(ratios, controls, confidence)
        return SpeedCheck(tuple(ratios), tuple(controls), kept or "input", self.optimizer, self.threads,
                          self.clock_name, confidence)


def speed_check(original: Any, ours: Any, feeds: Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]], *,
                optimizer: str = "all", threads: int = 1, max_rounds: int = MAX_ROUNDS,
                confidence: float = CONFIDENCE) -> SpeedCheck:
    """Time `ours` against `original` (ONNX models or their bytes) on `feeds` as described above (see
    `InputSessions`; given several input sets, on the first the original runs on: a mask as long as
    the past and new tokens together, say)."""
    return InputSessions(original, feeds, optimizer=optimizer, threads=threads).check(
        ours, max_rounds=max_rounds, confidence=confidence)


_ORDERS = tuple(itertools.permutations(range(3)))
"""the orders the input, ours and the control run in, one per round in turn."""


def margin(controls: Sequence[float]) -> float:
    """`MARGIN` plus the distance from 1 of the control's median ratio: how far two sessions of the
    same program drifted apart in this run."""
    return MARGIN + abs(statistics.median(controls) - 1)


def decision(ratios: Sequence[float], controls: Sequence[float], confidence: float = CONFIDENCE) -> str | None:
    """"ours" when the median ratio's interval lies below 1 - `margin`, "input" when it does not
    reach below it, None when it spans it (time more rounds)."""
    low, high = median_interval(ratios, confidence)
    bar = 1 - margin(controls)
    return "ours" if high < bar else "input" if low >= bar else None


def median_interval(ratios: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """A distribution-free confidence interval of the median of `ratios`: the j-th smallest and the
    j-th largest, for the largest j at which the median falls outside them with probability at most
    1 - `confidence` (two binomial tails); the extremes where no j is small enough."""
    ordered = sorted(ratios)
    n = len(ordered)
    j = 1
    while j < n // 2 and 2 * binom.cdf(j, n, 0.5) <= 1 - confidence:
        j += 1
    return ordered[j - 1], ordered[n - j]


def _runner(session: Any, feeds: Mapping[str, np.ndarray]) -> Callable[[], Any]:
    run = quiet_runner(session)  # an input set the input model fails on is passed over, not logged
    return lambda: run(feeds)


WARM_SECONDS = 0.2
"""how long the untimed runs before a session's first timed one last, at least (`_warm_up`)."""


def _warm_up(run: Callable[[], Any], clock: Callable[[], float], count: int = 3) -> float:
    """Seconds of one run, after `count` runs to warm caches and allocators, or fewer (one at least)
    that take `WARM_SECONDS` (a large model's first run has done that work)."""
    warm = time.perf_counter() + WARM_SECONDS
    for _ in range(count):
        run()
        if time.perf_counter() >= warm:
            break
    start = clock()
    run()
    return clock() - start
