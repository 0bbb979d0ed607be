"""A trace N times longer than the shared Llama step: its events repeated with shifted times and ids.

    python benchmarks/long_trace.py [--times 8] [--out /tmp/llama_x8.json.gz] [TRACE]

The text of ``traceEvents`` is copied N times, each copy with every ``"ts"`` moved past the end
of the previous copy and every ``External id``, ``correlation``, flow ``id`` and ``Ev Idx`` moved
past the largest one, so the copies never link to each other.  The layout stays Kineto's own
(one event per block), as a longer profiling run would write it.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path

DEFAULT = next(
    (
        p / "shared" / "data" / "llama_train_sdpa.json.gz"
        for p in Path(__file__).resolve().parents[2:4]
        if (p / "shared" / "data" / "llama_train_sdpa.json.gz").exists()
    ),
    Path(__file__).resolve().parents[2] / "shared" / "data" / "llama_train_sdpa.json.gz",
)  # ../shared/data beside the checkout (or beside a worktree's parent)
TS = re.compile(rb'("ts": )(-?\d+(?:\.\d*)?)')
IDS = re.compile(rb'("External id": |"correlation": |"id": |"Ev Idx": |"Sequence number": )(\d+)')


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?", default=str(DEFAULT))
    ap.add_argument("--times", type=int, default=8)
    ap.add_argument("--out", default="/tmp/llama_x8.json.gz")
    a = ap.parse_args()
    raw = gzip.open(a.trace).read() if a.trace.endswith(".gz") else Path(a.trace).read_bytes()
    start = raw.index(b'"traceEvents": [') + len(b'"traceEvents": [')
    end = raw.rindex(b"\n  }") + 4  # the last event's closing brace
    head, body, tail = raw[:start], raw[start:end], raw[end:]
    ts = [float(m.group(2)) for m in TS.finditer(body)]
    span = max(ts) - min(ts) + 1000.0
    id_step = max(int(m.group(2)) for m in IDS.finditer(body)) + 1
    with gzip.open(a.out, "wb", compresslevel=1) as f:
        f.write(head)
        for k in range(a.times):
            if k:
                f.write(b",")
            dt, di = k * span, k * id_step
            part = TS.sub(lambda m, dt=dt: m.group(1) + f"{float(m.group(2)) + dt:.3f}".encode(), body) if k else body
            part = IDS.sub(lambda m, di=di: m.group(1) + str(int(m.group(2)) + di).encode(), part) if k else part
            f.write(part)
        f.write(tail)
    print(f"{a.out}: {a.times}× {a.trace}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
