"""``attnscope analyze`` on input that is not a trace, at full size: each must be refused in one line, exit 2, under
100 MiB of peak RSS (the bound docs/analyze.md states).

    python benchmarks/hostile_traces.py [--python PY] [--keep DIR]

The inputs are written to a temporary folder (~12 MB of gzip files and one 40 MB file, ~1 min to compress), streamed
as they are compressed, never held whole; each is analysed in a fresh process, timed from outside, with that child's
peak RSS (``os.wait4``; Linux carries the spawning process's own peak into a child's ``ru_maxrss``, and this one
stays at ~20 MiB, below every figure reported; tests/peakrss.py reads the child's own ``VmHWM`` instead).
``tests/trace/test_hostile_input.py`` runs the same kinds of input scaled down to seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CAP_MIB = 100
MIB = 1 << 20
HEAD = b'{\n  "schemaVersion": 1,\n  "traceEvents": [\n  {\n'
EVENT = b'    "ph": "X", "cat": "ac2g", "name": "x", "pid": 1, "tid": 1, "ts": 1, "dur": 1'


def gzipped(path: Path, parts: Iterable[bytes]) -> Path:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        for part in parts:
            f.write(c.compress(part))
        f.write(c.flush())
    return path


def repeat(block: bytes, times: int) -> Iterable[bytes]:
    for _ in range(times):
        yield block


def inputs(d: Path) -> list[tuple[str, Path]]:
    spaces = b" " * MIB
    # 27 kB, inside deflate's 32 KiB window: ~290x at level 9, refused once 200x its size is inflated (and parsed)
    flows = b"".join(repeat(b"\n  },\n  {\n" + EVENT, 300))
    out: list[tuple[str, Path]] = [("/dev/zero (read forever before)", Path("/dev/zero"))]
    fifo = d / "fifo.json"
    os.mkfifo(fifo)
    out.append(("a FIFO (its open would wait for a writer)", fifo))
    out.append(("/proc/self/maps", Path("/proc/self/maps")))
    out.append(
        (
            '{"traceEvents":[ + 2 GiB of spaces + ]} in a 2 MB gzip (the report)',
            gzipped(d / "spaces.json.gz", [b'{"traceEvents":[', *repeat(spaces, 2048), b"]}"]),
        )
    )
    out.append(
        (
            "Kineto layout, one event followed by 2 GiB of spaces",
            gzipped(d / "event_spaces.json.gz", [HEAD, EVENT, *repeat(spaces, 2048), b"\n  }\n]}"]),
        )
    )
    out.append(
        (
            "valid Kineto JSON, 2 GiB of one flow event (a gzip bomb)",
            gzipped(d / "bomb.json.gz", [HEAD, EVENT, *repeat(flows, 2048 * MIB // len(flows)), b"\n  }\n]}"]),
        )
    )
    long_name = d / "long_name.json"
    with open(long_name, "wb") as f:
        f.write(HEAD + b'    "ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "name": "')
        for _ in range(40):
            f.write(b"k" * MIB)
        f.write(b'"\n  }\n]}')
    out.append(("a kernel name of 40 MiB", long_name))
    bomb = b"[" * 1_000_000 + b"]" * 1_000_000
    nested = d / "nested.json"
    nested.write_bytes(b'{"traceEvents": [{"ph": "X", "cat": "kernel", "args": {"x": ' + bomb + b"}}]}")
    out.append(("1,000,000 nested lists", nested))
    return out


def measure(py: str, path: Path) -> tuple[int, list[str], float, float]:
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.Popen(
        [py, "-m", "attnscope", "analyze", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    assert p.stderr is not None
    err = p.stderr.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), err.splitlines(), ru.ru_maxrss / 1024, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="the interpreter that runs attnscope")
    ap.add_argument("--keep", help="write the inputs here and keep them")
    args = ap.parse_args()
    d = Path(args.keep or tempfile.mkdtemp(prefix="hostile_"))
    d.mkdir(parents=True, exist_ok=True)
    failed = 0
    try:
        t0 = time.perf_counter()
        cases = inputs(d)
        print(f"inputs written in {time.perf_counter() - t0:.1f} s to {d}")
        print(f"{'input':62s} {'size':>10s} {'exit':>4s} {'lines':>5s} {'peak RSS':>9s} {'wall':>6s}  ok")
        for label, path in cases:
            if not (path.exists() or path.is_fifo()):
                print(f"{label:62s} (not on this machine)")
                continue
            rc, lines, peak, wall = measure(args.python, path)
            ok = rc == 2 and len(lines) == 1 and peak < CAP_MIB
            failed += not ok
            size = path.stat().st_size if path.is_file() else 0
            verdict = "yes" if ok else "NO"
            print(f"{label[:62]:62s} {size:>10,} {rc:>4d} {len(lines):>5d} {peak:>6.0f} MiB {wall:>5.2f}s  {verdict}")
            print(f"    {lines[0][:150] if lines else '(nothing on stderr)'}")
    finally:
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)
    print(f"{failed} of {len(cases)} not refused in one line under {CAP_MIB} MiB" if failed else "all refused")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
