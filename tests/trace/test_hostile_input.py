"""Input that is not a trace, or is built to exhaust the reader: one line, exit 2, and a bounded peak RSS.

Each case runs ``attnscope analyze`` in a fresh process, so that its peak resident memory (its own ``VmHWM``, see
tests/peakrss.py) is the reader's and nothing else's.  The sizes are scaled down to run in seconds;
``benchmarks/hostile_traces.py`` runs the same inputs at full size (2 GiB of spaces, /dev/zero read forever, ...).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zlib
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.peakrss import run_peak

ROOT = Path(__file__).resolve().parents[2]
CAP_MIB = 100  # the bound docs/analyze.md states for refusing input
HEAD = b'{\n  "schemaVersion": 1,\n  "traceEvents": [\n  {\n'  # Kineto's own layout: one event per block
EVENT = b'    "ph": "X", "cat": "ac2g", "name": "x", "pid": 1, "tid": 1, "ts": 1, "dur": 1'


def analyze(path: str | Path, *extra: str) -> tuple[int, list[str], float]:
    """Exit status, stderr lines and peak RSS (MiB) of ``attnscope analyze PATH`` in a fresh process."""
    return run_peak("analyze", str(path), *extra)


def gzipped(path: Path, parts: Iterable[bytes]) -> Path:
    """``parts`` written as one gzip member, compressed as it goes (never held whole)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        for part in parts:
            f.write(c.compress(part))
        f.write(c.flush())
    return path


def repeat(block: bytes, times: int) -> Iterable[bytes]:
    for _ in range(times):
        yield block


MIB = 1 << 20
SPACES = b" " * MIB


def refused(path: str | Path, why: str) -> float:
    rc, lines, peak = analyze(path)
    assert rc == 2, lines
    assert len(lines) == 1 and why in lines[0] and str(path) in lines[0], lines
    assert peak < CAP_MIB, f"{peak:.0f} MiB"
    return peak


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused_before_reading() -> None:
    refused("/dev/zero", "a device, not a regular file")


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)  # opening it to read would wait for a writer forever
    refused(fifo, "a FIFO, not a regular file")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="no /proc")
def test_a_proc_file_is_refused() -> None:
    refused("/proc/self/status", "a file of /proc")


def test_a_whitespace_run_in_a_whole_document_is_refused(tmp_path: Path) -> None:
    """The reported reproduction scaled down: ``{"traceEvents":[`` + 48 MiB of spaces + ``]}`` (was 2 GiB)."""
    p = gzipped(tmp_path / "spaces.json.gz", [b'{"traceEvents":[', *repeat(SPACES, 48), b"]}"])
    refused(p, "runs past 16 MiB")


def test_a_whitespace_run_inside_an_event_is_refused(tmp_path: Path) -> None:
    """Kineto's layout, then an event that never ends: cut off past 16 MiB, not read to the end."""
    p = gzipped(tmp_path / "spaces.json.gz", [HEAD, EVENT, *repeat(SPACES, 40), b"\n  }\n]}"])
    refused(p, "runs past 16 MiB")


def test_a_string_beyond_any_trace_is_refused(tmp_path: Path) -> None:
    """A kernel name of 24 MiB (a trace's longest event is a few KiB), uncompressed."""
    p = tmp_path / "long.json"
    with open(p, "wb") as f:
        f.write(HEAD + b'    "ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "name": "')
        for _ in range(24):
            f.write(b"k" * MIB)
        f.write(b'"\n  }\n]}')
    refused(p, "runs past 16 MiB")


def test_a_gzip_bomb_is_refused_by_its_ratio(tmp_path: Path) -> None:
    """Valid Kineto JSON, 96 MiB of one repeated flow event in ~100 kB: deflate's ~1000x, where traces give 7-25x."""
    block = b"".join(repeat(b"\n  },\n  {\n" + EVENT, 10_000))
    p = gzipped(tmp_path / "bomb.json.gz", [HEAD, EVENT, *repeat(block, 96 * MIB // len(block)), b"\n  }\n]}"])
    assert p.stat().st_size < MIB
    refused(p, "a gzip bomb")


@pytest.mark.parametrize("kineto", [True, False], ids=["Kineto layout", "one line"])
def test_a_nesting_bomb_is_refused(tmp_path: Path, kineto: bool) -> None:
    """100,000 nested lists inside an event's args: each JSON parser stops at a depth; one line, not a traceback."""
    bomb = b"[" * 100_000 + b"]" * 100_000
    if kineto:
        event = b'    "ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"x": '
        text = HEAD + event + bomb + b"}\n  }\n]}"
    else:
        text = b'{"traceEvents": [{"ph": "X", "cat": "kernel", "args": {"x": ' + bomb + b"}}]}"
    p = tmp_path / "nested.json"
    p.write_bytes(text)
    refused(p, "nested deeper than")


def test_many_tiny_events_in_a_whole_document_stay_bounded(tmp_path: Path) -> None:
    """Four million ``{}`` events (12 MiB on one line): decoded run by run, never all at once (seven million took
    674 MiB so)."""
    n = 4_000_000
    p = tmp_path / "tiny.json"
    with open(p, "wb") as f:
        f.write(b'{"traceEvents": [{}')
        for _ in range(n // 100_000):
            f.write(b",{}" * 100_000)
        f.write(b"]}")
    rc, lines, peak = analyze(p)
    assert rc == 0, lines  # a trace of events that name nothing: analysed as an empty CPU profile, as before
    assert peak < CAP_MIB, f"{peak:.0f} MiB"


def test_broken_json_in_a_whole_document_is_refused_bounded(tmp_path: Path) -> None:
    """An unterminated string early in a 20 MiB one-line document: no cut validates, refused past 16 MiB."""
    p = tmp_path / "broken.json"
    with open(p, "wb") as f:
        f.write(b'{"traceEvents": [{"name": "unterminated}, {"cat": "kernel"')
        for _ in range(20):
            f.write(b', {"cat": "kernel", "name": "k"}' * (MIB // 32))
        f.write(b"]}")
    refused(p, "not valid JSON")


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm")
def test_a_regular_file_under_dev_shm_is_read() -> None:
    """Only what is not a regular file is refused under /dev: a trace kept in shared memory is read."""
    d = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        p = d / "flex.json"
        shutil.copy(ROOT / "tests" / "data" / "h200" / "flex.json", p)
        rc, lines, _ = analyze(p)
        assert rc == 0, lines
    finally:
        shutil.rmtree(d)
