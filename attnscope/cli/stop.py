"""Signals that stop a command: SIGINT (Ctrl-C), SIGTERM (``timeout``, job schedulers) and SIGHUP (a closed
terminal, a dropped ssh) all unwind as :class:`Stopped`, a ``KeyboardInterrupt``, so every command saves what it
finished and ends with one line and the signal's status (130, 143, 129).

:func:`install` is the first thing the console script does, before any import that takes time: a signal at any
moment, even while the command line is still being read, ends in that one line.  Only ``signal`` and ``sys`` are
imported here, for that reason.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

# the signals a command saves on, with the status each ends with (128 + the signal's number)
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """A stopping signal turned into an exception that unwinds to the command, which saves and names the file."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise(signum: int, frame: Any) -> None:
    raise Stopped(signum)


def install() -> dict[int, Any]:
    """Every stopping signal raises :class:`Stopped` from here on; the handlers it replaced, for :func:`restore`.
    A signal a parent ignored (``nohup`` ignores SIGHUP) stays ignored: that is the user's choice."""
    old: dict[int, Any] = {}
    for sig in STOPPING:
        was = signal.getsignal(sig)
        if was == signal.SIG_IGN:
            continue
        old[sig] = signal.signal(sig, _raise)
    return old


def restore(old: dict[int, Any]) -> None:
    for sig, handler in old.items():
        signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def signum_of(e: BaseException) -> int:
    """The signal behind an interruption (or behind the one it caused: a measuring loop's, raised after saving); a
    plain KeyboardInterrupt is Ctrl-C (SIGINT)."""
    for cause in (e, e.__cause__):
        if isinstance(cause, Stopped):
            return int(cause.signum)
    return int(signal.SIGINT)


def status_of(e: BaseException) -> int:
    """The exit status of an interruption: 128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP)."""
    return 128 + signum_of(e)


def interrupted(e: BaseException, what: str) -> int:
    """One line on stderr, ``attnscope: interrupted (SIGTERM): <what>``; the exit status of the signal."""
    try:
        print(f"attnscope: interrupted ({signal.Signals(signum_of(e)).name}): {what}", file=sys.stderr, flush=True)
    except OSError:  # the terminal is gone (SIGHUP): nothing can be said, the status still tells
        pass
    return status_of(e)
