"""An append-only JSONL store: one line per result, flushed and fsynced as soon as it is measured.

A process killed mid-write leaves at most a torn last line; reading skips it (and the next
append starts on a fresh line), so ``--resume`` measures exactly what is missing.  The store writes; its lines are
read by the one reader of result files, :func:`attnscope.document.load.jsonl_rows`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from attnscope.core.files import WriteError
from attnscope.document.load import RETRIED, jsonl_rows, retried
from attnscope.document.schema import row_bytes
from attnscope.execute.job import job_key


class Store:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.num_torn = 0

    def rows(self) -> list[dict[str, Any]]:
        """Every complete row; a line that does not parse (a torn write) or is not a row is counted and skipped."""
        self.num_torn = 0
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        rows, left_out = jsonl_rows(data, str(self.path))
        self.num_torn = len(left_out)
        return retried(rows)

    def done(self) -> set[tuple[str, str, str]]:
        """Keys (variant, case, mode) already in the store: what ``--resume`` does not measure again.

        A ``crashed`` row is not among them (its worker died: a CUDA fault, a segfault, a device that was not
        there), so ``--resume`` retries it; the new row supersedes it (:func:`attnscope.document.load.retried`).
        A ``timeout`` row stays done: measured again it would hang again (a larger ``--timeout`` and another
        ``--out`` measure it anew)."""
        return {job_key(r["variant"], r.get("case")) for r in self.rows() if r.get("status") not in RETRIED}

    def append(self, row: dict[str, Any]) -> None:
        """Write one row and make it durable before returning.  Never through a symbolic link (``O_NOFOLLOW``:
        ELOOP); the command refuses a linked store before any work (attnscope.core.files).  A failure (a full disk:
        at most a torn line, left out when read) is a WriteError naming the store and the cause."""
        try:
            self._append(row_bytes(row))
        except OSError as e:
            raise WriteError(self.path, e) from e

    def _append(self, line: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, 0o666)
        with os.fdopen(fd, "ab") as f:
            if not _ends_with_newline(fd):
                f.write(b"\n")  # after a torn line: never glue a good row onto it
            f.write(line + b"\n")
            f.flush()
            os.fsync(f.fileno())


def _ends_with_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size == 0 or os.pread(fd, 1, size - 1) == b"\n"
