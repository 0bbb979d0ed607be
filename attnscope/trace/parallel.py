"""A second core for one trace: a forked child reads the first part of a Kineto-layout trace while this process
goes on (imports the analysis, then reads the rest), and hands its records back through a pipe.

The text is cut into runs of whole events the same way in both processes (source.py's ``event_runs`` over the same
bytes); a run belongs to the child when fewer than ``split`` bytes of runs came before it, else to this process. The
child sends its records as msgpack frames (the ops as columns; the GPU events and runtime calls decoded straight
into their Structs), and this process puts them before its own: the same records, in the same order, as one process
reading the whole file.  Whatever goes wrong in the child (a run the typed decoder refused, an error, a kill) makes
this process read the file alone, as before.  Bounds on hostile input hold: this process inflates and cuts every
byte itself.

It costs CPU time (the hand-over: ~25 ms to encode and ~25 ms to decode the Llama trace's first three quarters, and
this process still inflates and cuts every byte: 23% more CPU in all for 11% less in this process), and on a
machine whose other core was busy it made ``analyze`` slower; it has not been measured with an idle core.  So it is
off unless asked for: ``ATTNSCOPE_READ_CORES=2`` (on), ``auto`` (on while the load average leaves a core idle);
and then only with a fork (POSIX), two cores this process may run on, and ``MIN_BYTES`` to ``MAX_BYTES`` of text
(a longer trace is read by one process: the child's records would add to the peak memory).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable, Iterator
from io import BufferedReader, RawIOBase
from itertools import chain
from operator import attrgetter
from pathlib import Path
from typing import Any

from attnscope.trace.source import text_size

MIN_BYTES = 8 << 20  # of text: below this, forking and the hand-over cost more than a part of the read saves
# ... and above this, the child's records (held until this process takes them) would add to the peak memory more
# than the time saved is worth: a long trace is read by one process, its memory as without a child
MAX_BYTES = 160 << 20
# the child's share of the text: it starts while this process still imports the analysis, so it takes the larger part
CHILD_SHARE = 0.75
ENV = "ATTNSCOPE_READ_CORES"
MAX_PAYLOAD = 1 << 32  # bytes of frames in all: more is not what the child of a trace of MAX_BYTES of text sends


class ChildFailed(Exception):
    """The child sent no complete result."""


class Helper:
    """The child reading a file's first part: its process id, the pipe's read end, the bytes of runs it reads."""

    def __init__(self, pid: int, fd: int, split: int) -> None:
        self.pid, self.fd, self.split = pid, fd, split
        self.reaped = False

    def frames(self) -> Iterator[bytearray]:
        """The child's frames as they come (:func:`read_frames`); :class:`ChildFailed` where the child stopped
        before its last frame or exited with an error: this process then reads the file alone."""
        try:
            with open(self.fd, "rb", buffering=0, closefd=False) as f:
                yield from read_frames(f)
        finally:
            os.close(self.fd)
            _, status = os.waitpid(self.pid, 0)
            self.reaped = True
        if os.waitstatus_to_exitcode(status) != 0:
            raise ChildFailed

    def cancel(self) -> None:
        """The child killed and reaped, unless its result was already taken."""
        if self.reaped:
            return
        self.reaped = True
        import signal

        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(self.fd)
        os.waitpid(self.pid, 0)


_PENDING: dict[str, Helper] = {}


def read_frames(f: RawIOBase | BufferedReader, limit: int = MAX_PAYLOAD) -> Iterator[bytearray]:
    """Frames (each its length in 8 bytes, then its bytes; an empty one ends them), each read in place: one frame's
    bytes held at a time.  :class:`ChildFailed` where they stop before the empty frame, or where their lengths add up
    past ``limit`` bytes (a cut or foreign file is refused before its length is allocated)."""
    while True:
        head = _exactly(f, bytearray(8))
        if head is None:
            raise ChildFailed
        size = int.from_bytes(head, "little")
        if size == 0:
            return
        limit -= 8 + size
        if limit < 0 or (buf := _exactly(f, bytearray(size))) is None:
            raise ChildFailed
        yield buf


def _exactly(f: RawIOBase | BufferedReader, buf: bytearray) -> bytearray | None:
    view, got = memoryview(buf), 0
    while got < len(buf) and (n := f.readinto(view[got:])):
        got += n
    return buf if got == len(buf) else None


def write_frames(fd: int, frames: Iterable[bytes]) -> None:
    """Each frame with its length first, then the empty frame that ends them."""
    for frame in chain(frames, (b"",)):
        view = memoryview(len(frame).to_bytes(8, "little") + frame)
        while view:
            view = view[os.write(fd, view) :]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def wanted(path: Path) -> bool:
    """Turned on (``ATTNSCOPE_READ_CORES=2``; ``auto``: only while the load average leaves a core idle), a fork and a
    second core there, the text long enough and not too long."""
    mode = os.environ.get(ENV, "")
    if mode not in ("2", "auto") or not hasattr(os, "fork"):
        return False
    cores = _cores()
    if cores < 2:
        return False
    if mode == "auto":
        try:
            if os.getloadavg()[0] > cores - 1:
                return False
        except OSError:  # no load average to read: no idle core known
            return False
    try:
        return path.is_file() and MIN_BYTES <= text_size(path) <= MAX_BYTES
    except OSError:
        return False


def start(path: str | Path) -> None:
    """Fork a child that reads the first part of ``path``; :func:`load_trace` of the same file takes it up."""
    p = Path(path)
    try:
        if not wanted(p):
            return
        split = int(text_size(p) * CHILD_SHARE)
        r, w = os.pipe()
        pid = os.fork()
    except OSError:
        return
    if pid == 0:  # the child: its frames to the pipe, then exit at once (no atexit, no inherited buffers flushed)
        code = 1
        try:
            os.close(r)
            write_frames(w, _child(p, split))
            code = 0
        except BaseException:  # noqa: BLE001  # any failure: the parent reads the file alone
            pass
        finally:
            os._exit(code)
    os.close(w)
    _PENDING[os.path.realpath(p)] = Helper(pid, r, split)


def drop(path: Path) -> None:
    """The child reading this file, if any, is not needed (the trace came from elsewhere)."""
    helper = take(path)
    if helper is not None:
        helper.cancel()


def take(path: Path) -> Helper | None:
    """The child reading this file's first part, if one was started."""
    return _PENDING.pop(os.path.realpath(path), None)


def _child(p: Path, split: int) -> Iterator[bytes]:
    """The frames of the first part's records (:func:`encode`)."""
    import gc

    gc.disable()
    from attnscope.trace import _first_part

    got = _first_part(p, split)
    if got is None:
        raise ChildFailed
    yield from encode(got)


_NONE = -(1 << 63)  # an op without an External id, in the int64 column


def encode(tr: Any) -> Iterator[bytes]:
    """The records as msgpack frames: the ops as columns (names, threads and processes as indices into a table;
    times as float64 arrays; the few ops with shapes by position), so that the parent builds each op from one zip
    without a row object; then the GPU events, the runtime calls and the rest as their records.  Sent one frame at a
    time, so that the parent holds one frame's bytes at a time."""
    import msgspec

    enc = msgspec.msgpack.encode
    ops = tr.cpu_ops
    keys = ("name", "tid", "pid")
    table = list(dict.fromkeys(chain.from_iterable(map(attrgetter(k), ops) for k in keys)))  # in C: no per-op call
    pos = {v: i for i, v in enumerate(table)}.__getitem__
    names, tids, pids = (array("I", map(pos, map(attrgetter(k), ops))) for k in keys)
    ts, dur = (array("d", map(attrgetter(k), ops)) for k in ("ts", "dur"))
    ext = array("q", [_NONE if v is None else v for v in map(attrgetter("ext_id"), ops)])
    shapes = [(i, o._shapes) for i, o in enumerate(ops) if o._shapes is not None]
    cols = [memoryview(c) for c in (names, tids, pids, ts, dur, ext)]  # msgspec writes a buffer as bytes
    yield enc((tr.num_events, tr.num_skipped, table, *cols, shapes))
    yield enc(tr.gpu)
    yield enc(tr.runtime)
    yield enc((tr.annotations, tr.modules, tr.memory))


class Part:
    """The records of a part of a trace, as one process read them."""

    __slots__ = ("annotations", "gpu", "memory", "modules", "num_events", "num_skipped", "ops", "runtime")

    def __init__(self, n: int, skipped: int, ops: list[Any], gpu: list[Any], runtime: list[Any], *rest: list[Any]):
        self.num_events, self.num_skipped, self.ops, self.gpu, self.runtime = n, skipped, ops, gpu, runtime
        self.annotations, self.modules, self.memory = rest


def decode(frames: Iterator[bytearray], intern: dict[Any, Any]) -> Part:
    """The child's records, frame by frame; names, threads and grids interned in this process's table (``intern``).
    :class:`ChildFailed` for anything but the child's complete result."""
    import msgspec

    try:
        return _decode(frames, intern)
    except (msgspec.DecodeError, ValueError) as e:  # not what the child writes: read the file alone
        raise ChildFailed from e


def _decode(frames: Iterator[bytearray], intern: dict[Any, Any]) -> Part:
    import msgspec

    from attnscope.trace.events import Annotation, CpuOp, GpuEvent, MemEvent, RuntimeCall

    def frame() -> bytearray:
        got = next(frames, None)
        if got is None:
            raise ChildFailed
        return got

    cols = msgspec.msgpack.Decoder(
        tuple[int, int, list[int | str], bytes, bytes, bytes, bytes, bytes, bytes, list[tuple[int, bytes]]]
    ).decode(frame())
    n, skipped = cols[0], cols[1]
    setdefault = intern.setdefault
    table = [setdefault(v, v) for v in cols[2]]
    names, tids, pids = (map(table.__getitem__, _array("I", c)) for c in cols[3:6])
    ops: list[CpuOp] = []
    add = ops.append
    for name, tid, pid, ts, dur, ext in zip(names, tids, pids, _array("d", cols[6]), _array("d", cols[7]),
                                            _array("q", cols[8]), strict=True):  # fmt: skip
        add(CpuOp(name, tid, ts, dur, None if ext == _NONE else ext, pid, None))
    for i, raw in cols[9]:
        ops[i]._shapes = raw
    del cols
    gpu = msgspec.msgpack.Decoder(list[GpuEvent]).decode(frame())
    for g in gpu:
        g.kind = setdefault(g.kind, g.kind)
        g.name = setdefault(g.name, g.name)
        if g.grid is not None:
            g.grid = setdefault(g.grid, g.grid)
        if g.block is not None:
            g.block = setdefault(g.block, g.block)
    rt = msgspec.msgpack.Decoder(list[RuntimeCall]).decode(frame())
    for c in rt:
        c.name = setdefault(c.name, c.name)
        c.tid = setdefault(c.tid, c.tid)
        c.pid = setdefault(c.pid, c.pid)
    ann, mods, mem = msgspec.msgpack.Decoder(tuple[list[Annotation], list[Annotation], list[MemEvent]]).decode(frame())
    for _ in frames:  # the end: the child's exit status checked (ChildFailed)
        raise ChildFailed
    return Part(n, skipped, ops, gpu, rt, ann, mods, mem)


def _array(code: str, data: bytes) -> array[Any]:
    a = array(code)
    a.frombytes(data)
    return a
