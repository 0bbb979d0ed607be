"""Worker processes (spawn, never fork: CUDA cannot survive a fork), one per GPU or one on CPU.

A healthy worker is reused for the next job; one that dies, hangs past the timeout or reports a
sticky CUDA fault is replaced.  Each worker's stderr goes to a file so a crash row can quote the
last error line.
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing as mp
import os
import signal
import sys
import tempfile
import time
from collections import deque
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from attnscope.execute.executors import OnStart, R, pick
from attnscope.execute.job import Job


def _serve(conn: Connection, visible: str | None, log_path: str, spawned_at: float) -> None:
    """The worker's loop: receive a job, send what its ``measure`` returns; None or a closed pipe ends it."""
    # Ctrl-C and a closed terminal reach the whole process group: they are the parent's to handle (it saves, then
    # stops this worker); the worker dies with it (below) either way
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    _die_with_parent()
    # every temporary file of the job (a trace not kept, a model's trace) inside the executor's own folder, which
    # the parent removes: a worker killed at its timeout leaves nothing behind
    tempfile.tempdir = os.environ["TMPDIR"] = str(Path(log_path).parent)
    if visible is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible  # before torch is imported
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(fd, 2)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    faulthandler.enable()  # a segfault writes its reason and stack to the log
    from attnscope.execute.worker import import_all

    import_all()

    start_s: float | None = time.time() - spawned_at
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        conn.send(("start", None))  # the timeout runs from here: starting the worker is not the job's
        r = job.measure()
        if start_s is not None:  # the first job pays for starting the worker: say so in its cost
            r = replace(r, cost_s={**(r.cost_s or {}), "worker_start": start_s})
            start_s = None
        conn.send(("result", r))


def _die_with_parent() -> None:
    """Linux: end this worker when the sweep dies (kill -9 included) instead of finishing its job on
    a GPU nobody reads; elsewhere (or had the parent died before this) the worker ends at its next
    read of the closed pipe."""
    if sys.platform != "linux":
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def last_error_line(log: Path) -> str | None:
    """The last line of a worker's stderr that says something (not a stack frame)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        s = line.strip()
        if s and not s.startswith(("File ", "Current thread", "Thread 0x", "<no Python frame>", "Extension modules")):
            return s[:300]
    return None


def death_reason(exitcode: int | None, log: Path) -> str:
    what = f"exit code {exitcode}"
    if exitcode is not None and exitcode < 0:
        with contextlib.suppress(ValueError):
            what = f"signal {signal.Signals(-exitcode).name}"
    line = last_error_line(log)
    return f"the worker process died ({what})" + (f"; last error line: {line}" if line else "")


@dataclass
class _Worker:
    visible: str | None
    log: Path
    proc: Any = None
    conn: Connection | None = None
    job: Job[Any] | None = None
    since: float | None = None  # when the worker began the job (None: still starting up)
    last: Hashable | None = None  # the case of its last job: its inputs are cached in the worker

    def start(self, ctx: Any) -> None:
        self.log.write_text("")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(
            target=_serve, args=(child, self.visible, str(self.log), time.time()), daemon=True, name="attnscope-worker"
        )
        self.proc.start()
        child.close()
        self.conn = parent

    def stop(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.join(timeout=5)
        if self.conn is not None:
            self.conn.close()
        self.proc, self.conn, self.job, self.last = None, None, None, None


@dataclass
class ProcessExecutor:
    devices: list[str] | None = None  # CUDA_VISIBLE_DEVICES per worker; None: one unpinned worker
    timeout_s: float | None = None
    workers: int | None = None  # workers when not pinned to GPUs (default 1)
    _pool: list[_Worker] = field(default_factory=list)
    _tmp: str = ""
    _owner: int | None = None  # the descriptor holding the folder's lock (attnscope.core.files.owned_dir)
    _remove: Any = None  # the folder's finalizer (weakref.finalize): removes it once, at close() or exit

    def _ensure_pool(self) -> None:
        if self._pool:
            return
        import weakref

        from attnscope.core.files import owned_dir, remove_owned

        d, self._owner = owned_dir("attnscope-workers-")
        self._tmp = str(d)
        # removed by close(); and at the latest when this executor is collected or the interpreter exits (an
        # exception or a signal that unwound past a caller that never closed it); after kill -9, by the next
        # executor or private folder made on this machine (its lock is gone)
        self._remove = weakref.finalize(self, remove_owned, d, self._owner)
        slots: list[str | None] = list(self.devices) if self.devices else [None] * max(1, self.workers or 1)
        self._pool = [_Worker(v, Path(self._tmp) / f"worker{i}.log") for i, v in enumerate(slots)]

    def run(self, jobs: Iterable[Job[R]], on_start: OnStart | None = None) -> Iterator[R]:
        ctx = mp.get_context("spawn")
        self._ensure_pool()
        todo = deque(jobs)
        while todo or any(w.job for w in self._pool):
            for w in self._pool:
                if w.job is None and todo:
                    if w.proc is None:
                        w.start(ctx)
                    busy = {o.job.case for o in self._pool if o.job is not None}
                    w.job, w.since = pick(todo, w.last, busy), None
                    w.last = w.job.case
                    if on_start:
                        on_start(w.job)
                    assert w.conn is not None
                    w.conn.send(w.job)
            yield from self._collect()

    def _collect(self) -> Iterator[Any]:
        busy = [w for w in self._pool if w.job is not None]
        now = time.monotonic()
        wait_s = 1.0
        if self.timeout_s is not None:
            ends = [w.since + self.timeout_s for w in busy if w.since is not None]
            if ends:
                wait_s = max(0.01, min(wait_s, min(ends) - now))
        handles: list[Any] = [w.conn for w in busy] + [w.proc.sentinel for w in busy]
        ready = set(wait(handles, timeout=wait_s))
        for w in busy:
            assert w.job is not None and w.conn is not None
            job = w.job
            if w.conn in ready or w.proc.sentinel in ready:
                try:
                    kind, r = w.conn.recv()
                except (EOFError, OSError):
                    w.proc.join(timeout=5)
                    yield job.failed("crashed", death_reason(w.proc.exitcode, w.log))
                    w.stop()
                    continue
                if kind == "start":
                    w.since = time.monotonic()
                    continue
                w.job = None
                if r.status == "crashed":  # a sticky CUDA fault: this process can do no more GPU work
                    w.stop()
                yield r
            elif self.timeout_s is not None and w.since is not None and time.monotonic() - w.since > self.timeout_s:
                w.stop()
                why = f"no result within the timeout of {self.timeout_s:g} s: the worker was stopped"
                yield job.failed("timeout", why)

    def close(self) -> None:
        for w in self._pool:
            if w.conn is not None and w.job is None and w.proc is not None and w.proc.is_alive():
                with contextlib.suppress(OSError):
                    w.conn.send(None)
                w.proc.join(timeout=2)
            w.stop()
        self._pool = []
        if self._remove is not None:
            self._remove()  # a finalizer runs once: the lock's descriptor is closed once
        self._tmp, self._owner, self._remove = "", None, None
