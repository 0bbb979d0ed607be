"""A directory of ranks made of single-GPU traces: trace i becomes rank i of a job of N ranks.

    python benchmarks/join_ranks.py OUT_DIR TRACE [TRACE ...]

Each trace is copied as ``OUT_DIR/rank<i>.json.gz`` with ``"distributedInfo": {"backend": "nccl", "rank": i,
"world_size": N}`` written after its ``schemaVersion`` line (Kineto's layout kept, every event as it was): what
both attnscope (``distributedInfo``, else the file name) and HTA (a ``"rank": N`` in the file) read a rank from.
The traces are not ranks of one job (no collective links them, their clocks are their own): the directory measures
reading and analysing several real rank files, not a job's skew.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

HEAD = b'\n    "schemaVersion": 1,\n'


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    n = len(a.traces)
    for i, t in enumerate(a.traces):
        raw = gzip.open(t).read() if t.endswith(".gz") else Path(t).read_bytes()
        at = raw.find(HEAD, 0, 4096)
        if at < 0 or b'"distributedInfo"' in raw[:65536]:
            print(f"{t}: not Kineto's layout with a schemaVersion line, or a rank already", file=sys.stderr)
            return 2
        info = b'    "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d},\n' % (i, n)
        end = at + len(HEAD)
        with gzip.open(out / f"rank{i}.json.gz", "wb", compresslevel=6) as f:
            f.write(raw[:end] + info + raw[end:])
        print(f"{out / f'rank{i}.json.gz'}: rank {i} of {n}, from {t}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
