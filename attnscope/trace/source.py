"""A trace file's bytes, gunzipped on the fly, and cut into runs of whole events.

Kineto writes one event per block, ``{`` and ``}`` on lines indented by two spaces, and JSON strings
cannot hold a raw newline, so ``"\\n  },\\n  {"`` only ever separates two events: a run of events
between two such separators is a JSON array once put between ``[`` and ``]``.  Memory stays bounded
by the chunk size whatever the file's length.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
import zlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import IO, Any

from attnscope.trace.events import TraceError

_inflate: Any = zlib  # ISA-L's inflate and CRC-32 (python-isal): the same bytes as zlib's, ~4× faster on a trace
_INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error,)
try:
    from isal import isal_zlib

    _inflate, _INFLATE_ERRORS = isal_zlib, (zlib.error, isal_zlib.error)  # type: ignore[assignment]
except ImportError:  # zlib: the same result, slower
    pass

SEP = b"\n  },\n  {"
KINETO_HEAD = re.compile(rb'"traceEvents":\s*(\[)\n  (\{)\n')
GPU_HEAD = re.compile(rb'"deviceProperties":\s*\[\s*\{')
CHUNK = 1 << 15  # compressed bytes inflated at a time: ~0.5 MiB of JSON, decoded while still in the cache
# compressed bytes per read: 2 MiB.  Reads of 8 MiB (and the first one's copy) raised glibc's mmap threshold to
# 8 MiB, so they, and every list and table up to that size the analysis later builds and frees, stayed in the heap:
# the 8x Llama trace's analyze --json peaked at 248-256 MiB against 244 (twice each).  Reads of 256 KiB cost 10-20 ms
# more system time on the 40 MB trace (likely the ~0.5 MiB runs then mapped and unmapped each time); 2 MiB (no more
# than OUT, one piece's inflated bytes) took the same time as 8 MiB (min of 7 loads, 3 rounds)
BLOCK = 1 << 21
# Bounds, each far past any real trace's (tests/data: events of at most 17 KiB, gzip ratios 7.5-23x), so that
# input that is not a trace (a device, a bomb, a mistaken file) is refused in one line before it fills memory:
MAX_EVENT = 16 << 20  # one event's text, or the text before the first event or after the last
MAX_WHOLE = 8 << 20  # a document not in Kineto's layout is read whole up to this size, then run by run
MAX_RATIO = 200  # inflated bytes per compressed byte of the file ...
MIN_INFLATE = 64 << 20  # ... once past this many inflated bytes (a small file may inflate more)
OUT = 1 << 21  # at most this many bytes inflated from one piece at a time (a bomb's piece inflates ~1000x)
# files there may say "regular file" and size 0, yet never end (a regular file under /dev/shm is a file like any other)
PSEUDO = ("/proc/", "/sys/")


def check_path(path: Path) -> None:
    """A regular file: a device (``/dev/zero``), a FIFO, a socket or a ``/proc`` file could be read forever."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror or type(e).__name__})") from None
    if stat.S_ISDIR(st.st_mode):
        raise TraceError(f"{path}: is a directory, not a trace file")
    real = os.path.realpath(path)
    if not stat.S_ISREG(st.st_mode) or real.startswith(PSEUDO):
        what = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else None
        what = what or ("a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else f"a file of {real[:5]}")
        raise TraceError(f"{path}: {what}, not a regular file: a trace is a .json or .json.gz file")


def text_size(path: Path) -> int:
    """About how many bytes of JSON ``path`` holds, without reading it: a gzip file's ISIZE (its last member's length
    mod 2^32; ten times the file where that is smaller than the file), else the file's size.  For choices that only
    balance work (how many processes), never for bounds."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        if f.read(2) != b"\x1f\x8b" or size < 18:
            return size
        f.seek(-4, os.SEEK_END)
        isize = int.from_bytes(f.read(4), "little")
    return isize if isize > size else size * 10


def chunks(path: Path) -> Generator[bytes, None, None]:
    """The file's bytes, gunzipped on the fly when it starts with the gzip magic.

    (Inflating on a second thread was measured twice: zlib lets go of the GIL, but handing the GIL back
    and forth with the parser cost more than the overlap saved, 0.34 s against 0.25 s, and 129–138 ms
    against 121–127 ms for the load alone with 32 KiB pieces.)"""
    with open(path, "rb") as f:
        first = f.read(CHUNK)
        if first[:2] != b"\x1f\x8b":
            yield first
            yield from iter(lambda: f.read(CHUNK << 3), b"")
            return
        yield from gunzip(path, f, first, max(MIN_INFLATE, MAX_RATIO * os.fstat(f.fileno()).st_size))


def gunzip(path: Path, f: IO[bytes], first: bytes, limit: int) -> Iterator[bytes]:
    """The members' inflated bytes.  Each member is inflated as raw deflate after its header is read here, by
    ISA-L where python-isal is installed (10 ms instead of zlib's 35 ms for the 40 MB Llama trace), else by zlib.
    The trailer's CRC-32 and length (ISIZE) are checked; a stream that is not valid deflate, or that ends early,
    is an error, and so is one that inflates past ``limit`` bytes in all (a gzip bomb)."""
    pieces = _pieces(f, first)
    buf = b""
    total = 0
    try:
        while True:
            buf = _skip_header(path, buf, pieces)
            dec = _inflate.decompressobj(-15)
            size = crc = 0
            crc32 = _inflate.crc32
            while not dec.eof:
                data = buf or next(pieces, b"")
                if not data:
                    raise TraceError(f"{path}: corrupt gzip (truncated compressed stream)")
                out = dec.decompress(data, OUT)
                buf = dec.unconsumed_tail
                size += len(out)
                if out:
                    total += len(out)
                    if total > limit:
                        raise TraceError(
                            f"{path}: inflates to more than {limit >> 20} MiB, over {MAX_RATIO}x its compressed"
                            " size (traces inflate 7-25x): a gzip bomb, not a trace"
                        )
                    crc = crc32(out, crc)
                    yield out
            buf = _fill(dec.unused_data, 8, pieces)
            if len(buf) < 8:
                raise TraceError(f"{path}: corrupt gzip (truncated compressed stream)")
            if int.from_bytes(buf[:4], "little") != crc:
                raise TraceError(f"{path}: corrupt gzip (CRC-32 mismatch: the inflated bytes are not those written)")
            if int.from_bytes(buf[4:8], "little") != size & 0xFFFFFFFF:
                raise TraceError(f"{path}: corrupt gzip (the inflated length differs from the recorded one)")
            buf = _fill(buf[8:], 1, pieces)
            if not buf:
                return
            # concatenated gzip members
    except _INFLATE_ERRORS as e:
        raise TraceError(f"{path}: corrupt gzip ({e})") from None


def _pieces(f: IO[bytes], first: bytes) -> Iterator[bytes | memoryview]:
    """The compressed bytes, ``CHUNK`` at a time, read ``BLOCK`` at a time."""
    block = first + f.read(BLOCK)
    while block:
        view = memoryview(block)
        for i in range(0, len(view), CHUNK):
            yield view[i : i + CHUNK]
        block = f.read(BLOCK)


def _fill(buf: bytes, n: int, pieces: Iterator[bytes | memoryview]) -> bytes:
    """``buf`` with pieces appended until it holds ``n`` bytes or the file ends."""
    while len(buf) < n:
        more = next(pieces, b"")
        if not more:
            break
        buf += more
    return buf


def _skip_header(path: Path, buf: bytes, pieces: Iterator[bytes | memoryview]) -> bytes:
    """``buf`` after the gzip member header it starts with (RFC 1952: optional extra field, name, comment, CRC-16)."""
    buf = _fill(buf, 10, pieces)
    if len(buf) < 10 or buf[:3] != b"\x1f\x8b\x08":
        raise TraceError(f"{path}: corrupt gzip (incorrect header check)")
    flags, pos = buf[3], 10
    if flags & 4:  # FEXTRA
        buf = _fill(buf, pos + 2, pieces)
        pos += 2 + int.from_bytes(buf[pos : pos + 2], "little")
    for bit in (8, 16):  # FNAME, FCOMMENT: zero-terminated
        if flags & bit:
            while (end := buf.find(b"\0", pos)) < 0:
                more = next(pieces, b"")
                if not more:
                    raise TraceError(f"{path}: corrupt gzip (truncated header)")
                buf += more
            pos = end + 1
    if flags & 2:  # FHCRC
        pos += 2
    buf = _fill(buf, pos, pieces)
    if len(buf) < pos:
        raise TraceError(f"{path}: corrupt gzip (truncated header)")
    return buf[pos:]


def read_head(path: Path, source: Iterator[bytes]) -> tuple[bytes, re.Match[bytes] | None]:
    """The first bytes, up to the first event of a Kineto-layout ``traceEvents`` (the match), or 1 MiB."""
    head = b""
    for c in source:
        head += c
        if len(head) >= (1 << 20) or KINETO_HEAD.search(head):
            break
    if not head.strip():
        raise TraceError(f"{path}: empty file")
    return head, KINETO_HEAD.search(head)


def whole(head: bytes, source: Iterator[bytes]) -> tuple[bytearray, bool]:
    """The document's text, and whether that is all of it: reading stops past ``MAX_WHOLE`` bytes (the rest is read
    run by run, never whole)."""
    buf = bytearray(head)
    for c in itertools.chain((b"",), source):
        buf += c
        if len(buf) > MAX_WHOLE:
            return buf, False
    return buf, True


def event_runs(path: Path, buf: bytes, source: Iterator[bytes], tail: list[bytes]) -> Iterator[bytes]:
    """Runs of whole events, each as a JSON array (``[{`` … ``}]``, the events separated by ``SEP``).

    ``buf`` starts at the first event's ``{``; once the list ends, the text after its last event
    (from ``]``) is appended to ``tail``.  The text is copied once, into the array: the last separator of
    what is held plus a new piece lies in the piece whenever the piece has one (a separator that straddles
    the two starts before any separator inside the piece)."""
    rest = buf
    for c in itertools.chain((b"",), source):  # b"": first cut the events read with the head
        cut = c.rfind(SEP)
        if cut >= 0:
            yield b"".join((b"[", rest, memoryview(c)[: cut + 4], b"]"))
            rest = c[cut + len(SEP) - 1 :]
            continue
        rest += c  # no separator inside the piece: one may straddle the two, or the event goes on
        # what was held before had no separator, but for the events read with the head (the first, empty, piece)
        cut = rest.rfind(SEP, max(0, len(rest) - len(c) - len(SEP) + 1) if c else 0)
        if cut >= 0:
            yield b"".join((b"[", memoryview(rest)[: cut + 4], b"]"))
            rest = rest[cut + len(SEP) - 1 :]
        elif len(rest) > MAX_EVENT:
            raise TraceError(
                f"{path}: an event, or the text after the last one, runs past {MAX_EVENT >> 20} MiB"
                " (a trace's are under 1 MiB): not a Kineto trace"
            )
    end = rest.find(b"\n  }")
    after = rest[end + 4 :].lstrip() if end >= 0 else b""
    if end < 0 or not after.startswith(b"]"):
        raise TraceError(f"{path}: not valid JSON (truncated: the traceEvents list never ends)")
    yield b"".join((b"[", memoryview(rest)[: end + 4], b"]"))
    tail.append(after)
