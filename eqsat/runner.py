"""Equality saturation under explicit limits: search in egglog, apply in Python, rebuild in egglog.

Each iteration: (1) every rule the scheduler lets in runs its queries once (egglog finds only
matches that are new since the rule last ran); (2) Python reads the matches, asks each rule for
its results, type-checks and lowers them, and queues unions; (3) one egglog batch adds the new
nodes and merges classes, which also restores congruence. Limits are checked between phases and
before every match applied, so egglog's lack of node and time limits does not matter. The
time budget is kept from both sides: applying stops when flushing what is pending would overrun
it, and the run stops (with `time_limit`) when the next search is predicted to overrun it. A
search that finds far more matches than predicted (associativity on a long chain can find a
million) is cut short while its rows are read, which is where its time goes, and the rules are
searched one egglog call each, so the budget is overrun by at most egglog's search of one rule.
A rule whose callback raises on a match (a bug in the rule, e.g. a guard that assumes a static
dimension where the program has a symbolic one) is skipped for that match, which is always sound;
its first error is kept in `Report.rule_errors`.
Ctrl-C (SIGINT, when saturating on the main thread) is noted and honoured at the same points as
the limits: the run stops with `interrupted`, and the e-graph stays consistent for extraction.
A row that a rule cannot decide yet (`RETRY_LATER`: a dominator region whose path has no
matching form so far) waits, and is decoded again after the next iteration that changed the
e-graph; it does not keep a run from saturating.
"""

from __future__ import annotations

import signal
import threading
from collections import Counter
from contextlib import contextmanager
from time import perf_counter
from typing import Callable, Iterable, Iterator, Sequence

import ir
from ir import Expr

from .egraph.egraph import EGraph, Merge
from .egraph.lower import add_expr, add_program
from .egraph.terms import Handle
from .limits import Limits, Stop, StopReason
from .report import IterationRow, Report
from .rules.install import can_match, install_rule
from .rules.match import Match
from .rules.rule import RETRY_LATER, Result, Rule, Undecided
from .scheduler import BackoffScheduler, Scheduler

__all__ = ["StopRun", "saturate", "run_schedule", "prove"]


class StopRun(Exception):
    """Raised by a rule to end the run on purpose (the soundness bisection does on a finding or when
    its time is spent): it propagates to the caller, where any other error of a rule skips the match."""

_ROWS_PER_CHECK = 4096  # match rows queued between two limit checks
_CLEAR_SECONDS_PER_ROW = 2.5e-7  # deleting stored match rows, measured; raised to the slowest rate seen
_TIMED_CLEAR_ROWS = 10_000  # below this many rows the call's overhead dominates the rate


def _lower_result(egraph: EGraph, res: Result, m: Match, rule: str) -> Handle | None:
    """The class of a rule's result (its new e-nodes marked as made by `rule`), or None when the
    result does not type-check."""
    try:
        ir.infer_type(res.expr)
    except ir.IRError:
        return None
    return add_expr(egraph, res.expr, m.placeholders, origin=rule)


class _Run:
    """The state of one `saturate` call."""

    def __init__(self, egraph: EGraph, rules: list[Rule], limits: Limits, scheduler: Scheduler):
        self.egraph, self.rules, self.limits, self.scheduler = egraph, rules, limits, scheduler
        self.keys: dict[str, tuple[str, list[tuple[str, object]]]] = {}
        """rule name -> its backend key and queries, for the rules installed so far (`wake`)."""
        self.dormant = list(rules)
        """the rules not installed: none of their queries could match yet."""
        self.wake()
        self.deferred: dict[str, list[tuple[object, tuple]]] = {}
        self.waiting: dict[str, list[tuple[object, tuple]]] = {}
        self.seen: dict[str, set[tuple]] = {r.name: set() for r in rules}
        self.rejected: Counter[str] = Counter()
        self.errors: dict[str, str] = {}  # rule -> the first error its callback raised
        self.flush_seconds_per_change = 0.0
        self.search_seconds_per_node = 0.0
        self.clear_seconds_per_row = _CLEAR_SECONDS_PER_ROW
        self.interrupted = False
        self.truncated = False
        """the last search stopped reading matches early (time is up or the run was interrupted)."""
        self.start = perf_counter()

    def elapsed(self) -> float:
        return perf_counter() - self.start

    def out_of_time(self, reserve: float = 0.0) -> bool:
        """True once the time budget, less `reserve` seconds, is spent or Ctrl-C was pressed."""
        return self.interrupted or self.elapsed() + reserve >= self.limits.seconds

    def wake(self) -> None:
        """Install the dormant rules that could match the e-graph now (`can_match`)."""
        dormant = []
        for r in self.dormant:
            if can_match(self.egraph, r):
                self.keys[r.name] = install_rule(self.egraph, r)
            else:
                dormant.append(r)
        self.dormant = dormant

    def search(self, active: list[Rule]) -> tuple[dict[str, int], dict[str, list[tuple[object, tuple]]]]:
        """New match counts, and the queue (waiting matches first, then new ones) per active rule
        that is installed (a dormant rule has no match)."""
        self.wake()
        active = [r for r in active if r.name in self.keys]
        backend = self.egraph.backend
        searched = backend.search((self.keys[r.name][0] for r in active), stop=self.out_of_time)
        queries = [q for r in active for q, _ in self.keys[r.name][1]]
        stored = backend.match_count(queries)
        clearing = self.clear_seconds_per_row * stored  # deleting the rows afterwards cannot be stopped
        frozen = self.egraph.refresh(queries, stop=lambda: self.out_of_time(reserve=clearing))
        t0 = perf_counter()
        backend.clear_matches(self.keys[r.name][0] for r in active)
        if stored >= _TIMED_CLEAR_ROWS:
            self.clear_seconds_per_row = max(self.clear_seconds_per_row, (perf_counter() - t0) / stored)
        self.truncated = frozen.truncated or not searched
        new: dict[str, int] = {}
        queues: dict[str, list[tuple[object, tuple]]] = {}
        for r in active:
            queue = self.deferred.pop(r.name, [])
            waiting, seen = len(queue), self.seen[r.name]
            for qname, mq in self.keys[r.name][1]:
                rows = frozen.matches[qname] if self.truncated else sorted(frozen.matches[qname])
                for start in range(0, len(rows), _ROWS_PER_CHECK):
                    if self.truncated or self.out_of_time():
                        self.truncated = True
                        break
                    for row in rows[start:start + _ROWS_PER_CHECK]:
                        if (qname, row) not in seen:
                            seen.add((qname, row))
                            queue.append((mq, row))
            new[r.name] = len(queue) - waiting
            queues[r.name] = queue
        return new, queues

    def apply(self, admitted: dict[str, list[tuple[object, tuple]]], enodes_before: int) -> Counter[str]:
        """Fire the admitted matches in rule order; when a limit is near, the rest wait (deferred)."""
        applied: Counter[str] = Counter()
        stopped = False
        for r in self.rules:
            queue = admitted.get(r.name, [])
            if stopped:
                if queue:
                    self.deferred.setdefault(r.name, []).extend(queue)
                continue
            decoded = [(mq, row, mq.decode(self.egraph, row)) for mq, row in queue]
            chosen = {id(m) for m in r.select([m for _, _, m in decoded if isinstance(m, Match)])}
            for i, (mq, row, m) in enumerate(decoded):
                if self._over(enodes_before):  # before every match: the node limit's margin is one application
                    stopped = True
                    self.deferred.setdefault(r.name, []).extend((q, w) for q, w, _ in decoded[i:])
                    break
                if m is RETRY_LATER:
                    self.waiting.setdefault(r.name, []).append((mq, row))
                elif id(m) in chosen:
                    fired = self._fire(r, m)
                    if fired is None:  # the rule cannot decide yet: again after the next change
                        self.waiting.setdefault(r.name, []).append((mq, row))
                    elif fired:
                        applied[r.name] += 1
        return applied

    def retry_waiting(self) -> None:
        """Queue the rows parked by `RETRY_LATER` again (called after the e-graph changed)."""
        for name, rows in self.waiting.items():
            self.deferred.setdefault(name, []).extend(rows)
        self.waiting.clear()

    def _over(self, enodes_before: int) -> bool:
        """True when the time or node budget would run out once the pending batch is flushed."""
        flush_estimate = self.flush_seconds_per_change * self.egraph.num_pending_changes
        return (self.out_of_time(reserve=flush_estimate)
                or enodes_before + self.egraph.num_pending >= self.limits.nodes)

    def flush(self) -> bool:
        """Send the pending batch to egglog and update the flush-time estimate."""
        pending = self.egraph.num_pending_changes
        t0 = perf_counter()
        changed = self.egraph.flush()
        if pending:  # the slowest rate seen so far: overrunning the budget is worse than stopping early
            self.flush_seconds_per_change = max(self.flush_seconds_per_change, (perf_counter() - t0) / pending)
        return changed

    def predicted_end(self, enodes: int) -> float:
        """When the next iteration's search would end: searches scale with the e-graph's size."""
        return self.elapsed() + self.search_seconds_per_node * enodes

    def _fire(self, r: Rule, m: Match) -> bool | None:
        """Whether firing `m` merged anything; None where the rule answered `Undecided`."""
        try:
            results = r.fire(m)
        except ir.IRError:  # the rule built an invalid call (e.g. a bad attribute value)
            self.rejected[r.name] += 1
            return False
        except (MemoryError, StopRun):
            raise
        except Exception as err:  # noqa: BLE001  (a rule's callback failed on this match: a bug in the rule)
            self.rejected[r.name] += 1  # not rewriting is always sound: the match is skipped, the run goes on
            self.errors.setdefault(r.name, f"{type(err).__name__}: {err}")
            return False
        if isinstance(results, Undecided):
            return None
        merged = False
        for res in results:
            handle = _lower_result(self.egraph, res, m, r.name)
            outcome = Merge.TYPE_MISMATCH if handle is None else self.egraph.union(res.root, handle)
            if outcome is Merge.TYPE_MISMATCH:
                self.rejected[r.name] += 1
                continue
            merged = merged or outcome is Merge.MERGED
            if res.interior:
                self.egraph.close_region(handle, res.interior)
        return merged


def saturate(egraph: EGraph, rules: Iterable[Rule], limits: Limits = Limits(), *,
             scheduler: Scheduler | None = None, goal: tuple[Handle, Handle] | None = None,
             progress: Callable[[IterationRow], None] | None = None) -> Report:
    """Apply `rules` until saturation or a limit; `goal` stops the run once its two classes merge.

    The default scheduler is `BackoffScheduler()`. `progress` is called after every iteration.
    Ctrl-C stops the run with `StopReason.INTERRUPTED` (a second Ctrl-C raises as usual).
    """
    rules = list(rules)
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise ValueError(f"rule names must be unique, got {sorted(n for n in names if names.count(n) > 1)}")
    run = _Run(egraph, rules, limits, scheduler or BackoffScheduler())
    with _noting_interrupts(run):
        return _saturate(run, goal, progress)


@contextmanager
def _noting_interrupts(run: _Run) -> Iterator[None]:
    """While saturating on the main thread, the first SIGINT sets `run.interrupted` instead of
    raising in the middle of an update; the previous handler comes back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def note(signum, frame) -> None:
        run.interrupted = True
        signal.signal(signal.SIGINT, previous)  # a second Ctrl-C is not swallowed

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _saturate(run: _Run, goal: tuple[Handle, Handle] | None,
              progress: Callable[[IterationRow], None] | None) -> Report:
    egraph, rules, limits = run.egraph, run.rules, run.limits
    initial_enodes, initial_eclasses = egraph.enode_count(), egraph.eclass_count()
    rows: list[IterationRow] = []
    stop: Stop | None = None
    enodes = initial_enodes
    while stop is None:
        iteration = len(rows) + 1
        t0 = perf_counter()
        banned = run.scheduler.banned(iteration)
        active = [r for r in rules if r.name not in banned]
        new, queues = run.search(active)
        run.search_seconds_per_node = max(run.search_seconds_per_node, (perf_counter() - t0) / max(enodes, 1))
        admitted: dict[str, list] = {}
        held = set(banned)
        for name, queue in queues.items():
            if queue and not run.scheduler.admit(name, iteration, len(queue)):
                run.deferred[name] = queue
                held.add(name)
            else:
                admitted[name] = queue
        t1 = perf_counter()
        applied = run.apply(admitted, enodes) if not (run.truncated or run.interrupted) else Counter()
        t2 = perf_counter()
        changed = run.flush()
        if changed:
            run.retry_waiting()
        t3 = perf_counter()
        enodes = egraph.enode_count()
        row = IterationRow(iteration, enodes, egraph.eclass_count(),
                           {n: k for n, k in sorted(new.items()) if k},
                           dict(sorted((n, k) for n, k in applied.items() if k)),
                           {"search": t1 - t0, "apply": t2 - t1, "rebuild": t3 - t2},
                           tuple(sorted(held)))
        rows.append(row)
        if progress is not None:
            progress(row)
        if goal is not None and egraph.canonical(goal[0]) == egraph.canonical(goal[1]):
            stop = Stop(StopReason.GOAL_REACHED)
        elif run.interrupted:
            stop = Stop(StopReason.INTERRUPTED)
        elif run.truncated:
            stop = Stop(StopReason.TIME_LIMIT, run.elapsed())
        elif not changed and not run.deferred and not run.scheduler.banned(iteration + 1):
            stop = Stop(StopReason.SATURATED)
        else:
            stop = limits.first_exceeded(iteration=iteration, nodes=enodes, elapsed=run.predicted_end(enodes))
            if stop is None and not changed:
                run.scheduler.release()
    return Report(stop, limits, tuple(rows), initial_enodes, initial_eclasses, run.elapsed(),
                  dict(sorted(run.rejected.items())), dict(sorted(run.errors.items())))


def run_schedule(egraph: EGraph, phases: Sequence[tuple[Iterable[Rule], Limits]], *,
                 scheduler_factory: Callable[[], Scheduler] = BackoffScheduler) -> list[Report]:
    """Saturate phase by phase (e.g. cheap simplifications to saturation, then exploratory rules
    under a tight budget); each phase gets a fresh scheduler and its own report."""
    return [saturate(egraph, rules, limits, scheduler=scheduler_factory()) for rules, limits in phases]


def prove(start: Expr, goal: Expr, rules: Iterable[Rule], limits: Limits = Limits(), *,
          scheduler: Scheduler | None = None) -> Report:
    """Saturate an e-graph holding both expressions; `GOAL_REACHED` when they become equal."""
    egraph = EGraph()
    handles = []
    for e in (start, goal):
        ir.infer_type(e)
        handles.append(add_program(egraph, e))
    egraph.flush()
    egraph.refresh()
    if egraph.canonical(handles[0]) == egraph.canonical(handles[1]):
        return Report(Stop(StopReason.GOAL_REACHED), limits, (), egraph.enode_count(), egraph.eclass_count(), 0.0)
    return saturate(egraph, rules, limits, scheduler=scheduler, goal=(handles[0], handles[1]))
