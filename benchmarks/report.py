"""Shared output for benchmarks: one JSON file and one markdown table per benchmark run."""

from __future__ import annotations

import json
import platform
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

RESULTS = Path(__file__).resolve().parent / "results"

__all__ = ["RESULTS", "Stopwatch", "Section", "write_results", "markdown_table"]


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


def write_results(name: str, rows: Sequence[dict[str, Any]], columns: Sequence[str], notes: str = "",
                  sections: Sequence[Section] = ()) -> Path:
    """Write `results/<name>.json` and `results/<name>.md`; returns the markdown path.

    `sections` follow the main table in the markdown, each under its title; the JSON keeps their
    rows under `sections` by title.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {"benchmark": name, "python": platform.python_version(), "machine": platform.machine(),
            "processor": platform.processor(), "unix_time": int(time.time())}
    data: dict[str, Any] = {"meta": meta, "rows": list(rows)}
    if sections:
        data["sections"] = {s.title: list(s.rows) for s in sections}
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2, default=str))
    parts = [f"# {name}", notes.strip(), markdown_table(rows, columns)]
    for s in sections:
        parts += [f"## {s.title}", s.notes.strip(), markdown_table(s.rows, s.columns)]
    md = RESULTS / f"{name}.md"
    md.write_text("\n\n".join(p for p in parts if p) + "\n")
    return md
