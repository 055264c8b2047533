"""Writing output files all or nothing: no reader ever sees a partial file, and a failure leaves none behind.

A path that is a symbolic link is written through: the new file replaces the link's final target
(atomically, in the target's directory) and the link stays a link. A path naming anything but a
regular file (a directory, FIFO, socket or device node) is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Mapping

__all__ = ["OutputFileError", "output_target", "write_files"]

#: what each special file type is called in the error message
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class OutputFileError(OSError):
    """An output path that names something other than a regular file (the message is one line)."""


def _default_mode() -> int:
    """The permissions a newly created file gets under the process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def output_target(path: str | os.PathLike) -> Path:
    """The regular file that writing `path` replaces: symbolic links resolved, special files refused.

    The file itself need not exist (a dangling link is written through to its target).
    Raises `OutputFileError` when `path` (or what it links to) is a directory, FIFO, socket or device.
    """
    real = Path(os.path.realpath(path))
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return real
    for test, kind in _KINDS:
        if test(mode):
            shown = f"{os.fspath(path)!r}" + (f" (a link to {str(real)!r})" if os.path.islink(path) else "")
            raise OutputFileError(f"refusing to write {shown}: it is {kind}, not a regular file")
    if not stat.S_ISREG(mode):
        raise OutputFileError(f"refusing to write {os.fspath(path)!r}: it is not a regular file")
    return real


def write_files(outputs: Mapping[str | os.PathLike, bytes]) -> None:
    """Write every file in `outputs` (path -> contents), or none of them.

    Each file is written to a temporary file next to its real target (`output_target`) and synced;
    only when all are written are they moved into place with `os.replace`, so an existing file is
    replaced whole or not at all, and keeps its permissions. On any failure (an interrupt included)
    the temporary files are removed and the exception propagates; a special file is refused
    (`OutputFileError`) before any temporary file is made.
    """
    targets = [(output_target(path), data) for path, data in outputs.items()]
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in targets:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            with open(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                mode = stat.S_IMODE(os.stat(path).st_mode)
            except FileNotFoundError:
                mode = _default_mode()
            os.chmod(tmp, mode)
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
