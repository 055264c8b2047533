"""Foreign load on the machine: busy processes beside a measurement that must not depend on it."""

from __future__ import annotations

import contextlib
import multiprocessing
from typing import Iterator

__all__ = ["cpu_hogs"]


def _spin() -> None:
    """Busy until terminated."""
    while True:
        pass


@contextlib.contextmanager
def cpu_hogs(count: int | None = None) -> Iterator[None]:
    """`count` busy processes (default: two per core) for the duration of the block."""
    hogs = [multiprocessing.Process(target=_spin, daemon=True)
            for _ in range(count if count is not None else 2 * multiprocessing.cpu_count())]
    for h in hogs:
        h.start()
    try:
        yield
    finally:
        for h in hogs:
            h.terminate()
            h.join()
