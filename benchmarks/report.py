"""Shared output for benchmarks: one JSON file and one markdown table per benchmark run."""

from __future__ import annotations

import argparse
import json
import platform
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from strategies.tuning_db import this_device

RESULTS = Path(__file__).resolve().parent / "results"

__all__ = ["RESULTS", "Stopwatch", "Section", "cpu_description", "write_results", "markdown_table"]


class Stopwatch:
    """Collects named wall-clock durations (seconds): `with sw("build"): ...`."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = time.perf_counter() - start


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


@dataclass(frozen=True)
class Section:
    """A further table of a benchmark run: its heading, a paragraph of notes, its rows and columns."""

    title: str
    rows: Sequence[dict[str, Any]]
    columns: Sequence[str]
    notes: str = ""


def cpu_description() -> dict[str, Any]:
    """The CPU model, the CPUs this process may use, and its widest vector extension: what a timing
    depends on (ONNX Runtime's NCHWc block is 16 floats with AVX-512, 8 with AVX2)."""
    device = this_device()
    return {"cpu": device.cpu, "cpus": device.threads, "vector_isa": device.vector}


def write_results(name: str, rows: Sequence[dict[str, Any]], columns: Sequence[str], notes: str = "",
                  sections: Sequence[Section] = ()) -> Path:
    """Write `results/<name>.json` and `results/<name>.md`; returns the markdown path.

    `sections` follow the main table in the markdown, each under its title; the JSON keeps their
    rows under `sections` by title.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {"benchmark": name, "python": platform.python_version(), "machine": platform.machine(),
            "processor": platform.processor(), **cpu_description(), "unix_time": int(time.time())}
    data: dict[str, Any] = {"meta": meta, "rows": list(rows)}
    if sections:
        data["sections"] = {s.title: list(s.rows) for s in sections}
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2, default=str))
    parts = [f"# {name}", f"Machine: {meta['cpu']}, {meta['cpus']} CPUs, vector units: {meta['vector_isa']}.",
             notes.strip(), markdown_table(rows, columns)]
    for s in sections:
        parts += [f"## {s.title}", s.notes.strip(), markdown_table(s.rows, s.columns)]
    md = RESULTS / f"{name}.md"
    md.write_text("\n\n".join(p for p in parts if p) + "\n")
    return md


def timing_parser(doc: str, small: str, seconds: float, seconds_help: str, repeat_help: str) -> argparse.ArgumentParser:
    """A benchmark's command line: `--small` (`small` says what it shrinks), `--repeat` (least timed
    rounds, default 10) and `--seconds` (least seconds the reference runs, default `seconds`)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help=small)
    parser.add_argument("--repeat", type=int, default=10, help=repeat_help)
    parser.add_argument("--seconds", type=float, default=seconds, help=seconds_help)
    return parser


def checked_choices(parser: argparse.ArgumentParser, args: argparse.Namespace, text: str, choices: Sequence[str],
                    what: str) -> list[str]:
    """The comma-separated `text` as a list, each one of `choices` (else a usage error naming `what`);
    `--repeat` is checked too, where the command has one."""
    names = text.split(",")
    unknown = [n for n in names if n not in choices]
    if unknown:
        parser.error(f"unknown {what} {unknown}; choose from {', '.join(choices)}")
    if getattr(args, "repeat", 1) < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    return names
