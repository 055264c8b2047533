"""How the `eqsat` command reports a failure: one line on stderr and an exit status.

Status 2 is the user's to fix (an option, a model file, a tuning log, a program the engine
rejects), 3 a result that failed verification or could not be verified (fails closed: nothing is
written), 1 an internal error to report, 130 an interrupt (Ctrl-C), 141 a closed stdout (like SIGPIPE).
"""

from __future__ import annotations

import ir
import strategies

from .errors import EqsatError, VerificationError

__all__ = ["UsageError", "USER_ERRORS", "EXIT_USER", "EXIT_UNVERIFIED", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_BROKEN_PIPE",
           "failure"]


class UsageError(Exception):
    """A command line the user must change, found after parsing (e.g. a file that does not import)."""


EXIT_INTERNAL = 1
EXIT_USER = 2
EXIT_UNVERIFIED = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

#: longest message shown; `--debug` shows the whole traceback
_MAX_MESSAGE = 2000

#: errors caused by the command line or its input: missing or unreadable files, a model the IR or
#: frontend rejects, a rule set, program or target the engine cannot use
USER_ERRORS: tuple[type[BaseException], ...] = (UsageError, EqsatError, ir.IRError, strategies.StrategyError,
                                                OSError)

#: this project's top-level packages: failing to import one of their modules is a bug, not a missing extra
_PROJECT_PACKAGES = frozenset({"ir", "strategies", "eqsat"})


def _one_line(err: BaseException) -> str:
    text = " ".join(line.strip() for line in str(err).splitlines() if line.strip()) or type(err).__name__
    if len(text) > _MAX_MESSAGE:
        text = text[:_MAX_MESSAGE] + " ... (--debug shows all of it)"
    return text


def _missing_extra(err: BaseException) -> bool:
    """True when `err` comes from an optional package (onnx, torch, ...) that is not installed."""
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, ModuleNotFoundError) and (cause.name or "").split(".")[0] not in _PROJECT_PACKAGES:
            return True
        cause = cause.__cause__
    return False


def failure(err: BaseException) -> tuple[int, str]:
    """The exit status and the one-line message (after "eqsat: ") that report `err`."""
    if isinstance(err, KeyboardInterrupt):
        return EXIT_INTERRUPTED, "interrupted"
    if isinstance(err, MemoryError):
        return EXIT_INTERNAL, ("out of memory; lower --nodes or --iterations (the e-graph grows with both) "
                               "or try a smaller model (--small)")
    if isinstance(err, VerificationError):
        return EXIT_UNVERIFIED, f"not verified: {_one_line(err)}"
    if isinstance(err, USER_ERRORS) or _missing_extra(err):
        return EXIT_USER, f"error: {_one_line(err)}"
    return EXIT_INTERNAL, (f"internal error: {type(err).__name__}: {_one_line(err)} "
                           "(please report this, with the command line)")
