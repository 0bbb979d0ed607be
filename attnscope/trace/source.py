"""A trace file's bytes, gunzipped on the fly, and cut into runs of whole events.

Kineto writes one event per block, ``{`` and ``}`` on lines indented by two spaces, and JSON strings
cannot hold a raw newline, so ``"\\n  },\\n  {"`` only ever separates two events: a run of events
between two such separators is a JSON array once put between ``[`` and ``]``.  Memory stays bounded
by the chunk size whatever the file's length.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import IO

from attnscope.trace.events import TraceError

SEP = b"\n  },\n  {"
KINETO_HEAD = re.compile(rb'"traceEvents":\s*(\[)\n  (\{)\n')
GPU_HEAD = re.compile(rb'"deviceProperties":\s*\[\s*\{')
CHUNK = 1 << 18  # compressed bytes inflated at a time: a few MiB of JSON
BLOCK = 32 * CHUNK  # compressed bytes per read (8 MiB)


def check_path(path: Path) -> None:
    if not path.exists():
        raise TraceError(f"{path}: no such file")
    if path.is_dir():
        raise TraceError(f"{path}: is a directory, not a trace file")


def chunks(path: Path) -> Generator[bytes, None, None]:
    """The file's bytes, gunzipped on the fly when it starts with the gzip magic.

    (Inflating on a second thread was measured: zlib lets go of the GIL, but handing the GIL back
    and forth with the parser cost more than the overlap saved, 0.34 s against 0.25 s.)"""
    with open(path, "rb") as f:
        first = f.read(CHUNK)
        if first[:2] != b"\x1f\x8b":
            yield first
            yield from iter(lambda: f.read(CHUNK << 3), b"")
            return
        yield from gunzip(path, f, first)


def gunzip(path: Path, f: IO[bytes], first: bytes) -> Iterator[bytes]:
    dec = zlib.decompressobj(31)
    block = first + f.read(BLOCK)
    try:
        while block:
            view = memoryview(block)
            for i in range(0, len(view), CHUNK):
                out = dec.decompress(view[i : i + CHUNK])
                while dec.eof and dec.unused_data:  # concatenated gzip members
                    rest = dec.unused_data
                    dec = zlib.decompressobj(31)
                    out += dec.decompress(rest)
                yield out
            block = f.read(BLOCK)
        if not dec.eof:
            raise TraceError(f"{path}: corrupt gzip (truncated compressed stream)")
    except zlib.error as e:
        raise TraceError(f"{path}: corrupt gzip ({e})") from None


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


def event_runs(path: Path, buf: bytes, source: Iterator[bytes], tail: list[bytes]) -> Iterator[tuple[bytes, int]]:
    """``(buf, stop)``: ``buf[:stop]`` is a run of whole events (``{`` … ``}``, separated by ``SEP``).

    ``buf`` starts at the first event's ``{``; once the list ends, the text after its last event
    (from ``]``) is appended to ``tail``."""
    for c in itertools.chain((b"",), source):  # b"": first cut the events read with the head
        buf += c
        cut = buf.rfind(SEP)
        if cut < 0:
            continue
        yield buf, cut + 4
        buf = buf[cut + len(SEP) - 1 :]
    end = buf.find(b"\n  }")
    rest = buf[end + 4 :].lstrip() if end >= 0 else b""
    if end < 0 or not rest.startswith(b"]"):
        raise TraceError(f"{path}: not valid JSON (truncated: the traceEvents list never ends)")
    yield buf, end + 4
    tail.append(rest)
