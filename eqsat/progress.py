"""A progress display for saturation runs: iteration, e-graph size and what is left of each limit.

`ProgressLine` is a `progress` callback for `saturate` / `optimize`. On a terminal it rewrites
one line in place and clears it when closed; on any other stream it writes a line per iteration.

    with ProgressLine(limits) as show:
        eqsat.optimize(mod, params, limits=limits, progress=show)

    iteration 3/30 · 1642/50000 e-nodes · 921 e-classes · 58.7 s of 60 s left · add-commute 253
"""

from __future__ import annotations

import sys
from typing import TextIO

from .limits import Limits
from .report import IterationRow

__all__ = ["ProgressLine", "progress_text"]


def progress_text(row: IterationRow, limits: Limits, elapsed: float) -> str:
    """One line: the iteration and e-nodes against their limits, the seconds left, the busiest rule."""
    top = max(row.matches_per_rule.items(), key=lambda kv: (kv[1], kv[0]), default=None)
    busiest = f" · {top[0]} {top[1]}" if top else ""
    left = max(limits.seconds - elapsed, 0.0)
    return (f"iteration {row.iteration}/{limits.iterations} · {row.enodes}/{limits.nodes} e-nodes · "
            f"{row.eclasses} e-classes · {left:.1f} s of {limits.seconds:g} s left{busiest}")


class ProgressLine:
    """Shows `progress_text` after every iteration on `stream` (live on a terminal, else one line each)."""

    def __init__(self, limits: Limits, stream: TextIO | None = None, live: bool | None = None):
        self.limits = limits
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.elapsed = 0.0
        """saturation seconds so far (the iterations' own times, so lowering is not counted)."""
        self._width = 0

    def __call__(self, row: IterationRow) -> None:
        self.elapsed += row.total_seconds
        text = progress_text(row, self.limits, self.elapsed)
        if self.live:
            self.stream.write("\r" + text.ljust(self._width))
            self._width = max(self._width, len(text))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Clear a live line, so what is printed next starts at the left margin."""
        if self.live and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
        self._width = 0

    def __enter__(self) -> "ProgressLine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
