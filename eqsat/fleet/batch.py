"""`batch`: optimize many models with the same options, one task per model, resumable.

Each model's task runs `eqsat.optimize` as `eqsat optimize MODEL OUT.onnx` would (same target
rule: ort for an ONNX file, cpu for a zoo model, unless `BatchOptions.target` says otherwise;
the same ONNX written, the input kept when the speed check finds ours no faster) and returns the
program, its JSON report (`optimize --json`'s) and a row: stop reason, cost before and after,
verification, speed check, seconds. The driver writes `OUT/NAME.onnx` and `OUT/NAME.json` as each
task finishes (atomically: a killed run leaves whole files or none), then `OUT/batch.json` with
every row. A model that fails (an ONNX file that does not import, a result that fails
verification) is a failed row; the others go on. A re-run skips each model whose row says it
succeeded with the same options and the same input (zoo name, or file size and time).

    rows = eqsat.batch(["resnet50", "models/"], "out", options=BatchOptions(iterations=10), small=True)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import strategies
from strategies.tuning_db import TuningDatabase, is_database, this_device

from ..atomic import write_files
from ..cli_errors import EXIT_UNVERIFIED, failure
from ..cli_output import finite, original_of, report_record
from ..limits import Limits
from ..onnx_io import optimize_to_onnx
from ..optimize import DEFAULT_TRIALS
from ..target import in_session
from .engine import Engine, TaskLost, choose_engine
from .models import ModelSource, find_models, load_model

__all__ = ["BatchOptions", "BatchResult", "batch", "optimize_model"]


@dataclass(frozen=True)
class BatchOptions:
    """How every model of a batch is optimized: `eqsat optimize`'s options, applied to each."""

    target: str | None = None
    """a strategies target or "ops"; None: ort for an ONNX file, cpu for a zoo model."""
    rules: str | None = None
    """rule sets joined by '+'; None: the target's default rules."""
    iterations: int = Limits.iterations
    nodes: int = Limits.nodes
    seconds: float = Limits.seconds
    """saturation's limits (`eqsat.Limits`); a seconds limit makes results depend on the machine's speed."""
    extractor: str = "greedy"
    verify: int | bool = DEFAULT_TRIALS
    """input sets each result is verified on (False: not verified)."""
    standard_onnx: bool = False
    onnx_contrib: bool = False
    speed_check: bool = True
    """for the ort target, time ours against the input and keep the input when ours is not faster."""
    ort_optimizer: str = "all"
    threads: int = 1
    """intra-op threads of ONNX Runtime's sessions (and of the tuning records a database gives)."""
    log: str | None = None
    """a tuning log or database whose measurements (on this kind of device, for a database) price programs."""

    def fingerprint(self) -> str:
        """A short hash of the options: a re-run redoes a model whose options differ."""
        return hashlib.sha256(json.dumps(dataclasses.asdict(self), sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Outcome:
    """What one model's task hands back to the driver."""

    row: dict[str, Any]
    onnx: bytes | None = None
    report: dict[str, Any] | None = None


def _target(model: ModelSource, options: BatchOptions) -> str | strategies.Target:
    return in_session(options.target or ("ort" if model.is_file else "cpu"), options.ort_optimizer, options.threads)


def _log(options: BatchOptions, target: str | strategies.Target) -> Any:
    """The tuning records the cost model reads: a log's path as it is, a database's records for this device."""
    if options.log is None or target == "ops" or not is_database(options.log):
        return options.log
    with TuningDatabase(options.log) as db:
        return db.history(strategies.Target(target).kind if isinstance(target, str) else target.kind,
                          this_device(options.threads).key)


def optimize_model(task: tuple[ModelSource, BatchOptions]) -> Outcome:
    """One model's task: load, optimize, write ONNX, as `eqsat optimize MODEL OUT.onnx --json` would; a
    failure is a row saying why (status "failed", or "unverified" for a result that failed verification)."""
    model, options = task
    start = time.perf_counter()
    row: dict[str, Any] = {"model": model.name, "source": model.source}
    try:
        mod, params = load_model(model)
        target = _target(model, options)
        written = optimize_to_onnx(mod, params, original_of(model.source), target=target, rules=options.rules,
                                   log=_log(options, target),
                                   limits=Limits(options.iterations, options.nodes, options.seconds),
                                   extractor=options.extractor, verify=options.verify,
                                   standard_onnx=options.standard_onnx, onnx_contrib=options.onnx_contrib,
                                   speed=options.speed_check)
        onnx = written.serialized()
    except Exception as err:  # one model's failure is its row, not the batch's
        status, message = failure(err)
        row.update(status="unverified" if status == EXIT_UNVERIFIED else "failed",
                   error=message.removeprefix("error: "), seconds=time.perf_counter() - start)
        return Outcome(row)
    res, check = written.optimized, written.verdict
    verified = (written.kept or res).verification_status
    row.update(status="ok", target=res.target, stop_reason=res.report.stop_reason.value,
               iterations=res.report.iterations, cost_before=finite(res.cost_before),
               cost_after=finite(res.cost_after), unit=res.unit,
               verified=verified,
               speed_check=None if check is None else {"kept": check.kept, "median": check.median},
               seconds=time.perf_counter() - start)
    return Outcome(row, onnx, report_record(model.name, res, check))


@dataclass
class BatchResult:
    """Every model's row, in the order of the sources, and how the batch ran."""

    rows: list[dict[str, Any]]
    engine: str
    seconds: float
    out: str
    skipped: int = 0
    """models whose earlier result was kept (same options, same input)."""
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["status"] != "ok"]

    def table(self) -> str:
        """The summary table: one line per model, then the totals."""
        lines = [f"{'model':<28} {'status':<10} {'stop':<16} {'cost before':>12} {'cost after':>12} {'gain':>6} "
                 f"{'speed':<6} {'s':>7}"]
        for r in self.rows:
            if r["status"] != "ok":
                lines.append(f"{r['model']:<28} {r['status']:<10} {r.get('error', '')}")
                continue
            before, after = r["cost_before"], r["cost_after"]
            gain = f"{before / after:.2f}x" if before and after else "-"
            speed = (r["speed_check"] or {}).get("kept", "-")
            lines.append(f"{r['model']:<28} {'ok' + (' (kept)' if r.get('resumed') else ''):<10} "
                         f"{r['stop_reason']:<16} {_num(before):>12} {_num(after):>12} {gain:>6} {speed:<6} "
                         f"{r['seconds']:7.1f}")
        lines.append(f"{len(self.rows)} model(s): {len(self.rows) - len(self.failed)} ok, {len(self.failed)} failed, "
                     f"{self.skipped} kept from an earlier run; {self.seconds:.1f} s on {self.engine}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "seconds": self.seconds, "out": self.out, "skipped": self.skipped,
                "options": self.options, "rows": self.rows}


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _earlier(out: Path, model: ModelSource, fingerprint: str) -> dict[str, Any] | None:
    """The row of an earlier run that succeeded for the same model, options and input, if its files are there."""
    try:
        data = json.loads((out / f"{model.name}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not (out / f"{model.name}.onnx").is_file():
        return None
    row = data.get("row")
    if (data.get("options") != fingerprint or data.get("input") != model.fingerprint() or not isinstance(row, dict)
            or row.get("status") != "ok"):
        return None
    return row


def batch(sources: Iterable[str], out: str, *, options: BatchOptions = BatchOptions(), small: bool = False,
          engine: Engine | None = None, progress: Callable[[int, int, dict[str, Any]], None] | None = None
          ) -> BatchResult:
    """Optimize every model `sources` name (zoo names, .onnx files, directories, list files: see
    `eqsat.fleet.models`) with `options`, one task per model on `engine` (default: `choose_engine()`),
    writing each result into the directory `out` (created) as its task finishes; see the module docstring.

    `progress(done, total, row)` is called as each model finishes (kept ones included)."""
    models = find_models(sources, small)
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    fingerprint = options.fingerprint()
    rows: dict[str, dict[str, Any]] = {}
    start = time.perf_counter()
    todo = []
    for model in models:
        earlier = _earlier(directory, model, fingerprint)
        if earlier is None:
            todo.append(model)
            continue
        rows[model.name] = {**earlier, "resumed": True}
        if progress:
            progress(len(rows), len(models), rows[model.name])
    engine = engine if engine is not None else choose_engine()
    with engine:
        tasks = {engine.submit(optimize_model, (model, options)): model for model in todo}
        while engine.running:
            number, outcome = engine.next_done()
            model = tasks[number]
            if isinstance(outcome, TaskLost):
                outcome = Outcome({"model": model.name, "source": model.source, "status": "failed",
                                   "error": f"task lost: {outcome.reason}", "seconds": 0.0})
            _write(directory, model, fingerprint, outcome)
            rows[model.name] = outcome.row
            if progress:
                progress(len(rows), len(models), outcome.row)
    result = BatchResult([rows[m.name] for m in models], engine.name, time.perf_counter() - start, str(directory),
                         len(models) - len(todo), dataclasses.asdict(options))
    write_files({directory / "batch.json": (json.dumps(result.to_dict(), indent=2) + "\n").encode()})
    return result


def _write(out: Path, model: ModelSource, fingerprint: str, outcome: Outcome) -> None:
    """A finished model's files, all or none: its report (with the row) and, when it succeeded, its program
    (when it failed, a program an earlier run left is removed: no file outlives the row that explains it)."""
    record = {"row": outcome.row, "options": fingerprint, "input": model.fingerprint(), "report": outcome.report}
    files: dict[Any, bytes] = {out / f"{model.name}.json": (json.dumps(record, indent=2, default=str) + "\n").encode()}
    if outcome.onnx is not None:
        files[out / f"{model.name}.onnx"] = outcome.onnx
    else:
        (out / f"{model.name}.onnx").unlink(missing_ok=True)
    write_files(files)
