"""Writing output files all or nothing: no reader ever sees a partial file, and a failure leaves none behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Mapping

__all__ = ["write_files"]


def _default_mode() -> int:
    """The permissions a newly created file gets under the process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_files(outputs: Mapping[str | os.PathLike, bytes]) -> None:
    """Write every file in `outputs` (path -> contents), or none of them.

    Each file is written to a temporary file in its own directory and synced; only when all are
    written are they moved into place with `os.replace`, so an existing file is replaced whole or
    not at all. On any failure (an interrupt included) the temporary files are removed and the
    exception propagates.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in outputs.items():
            path = Path(path)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            with open(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, _default_mode())
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
