"""Would a byte scan that drops unread events before decoding make the reader faster?  Measured, not assumed.

    python benchmarks/skip_scan.py [TRACE] [--repeat 7]

The trace's text is cut into the reader's runs (source.py), held in memory; then, in one process, the minimum of
``--repeat`` passes of:

- the reader as it is: each run decoded by msgspec's tagged decoder (flow events become empty objects) and
  converted into records (``fast.Reader``);
- the scan alone: a regular expression that removes Kineto's flow events (``ac2g``, ``fwdbwd``: ``"ph": "f"``/
  ``"s"``/``"t"``, one block each) from every run;
- the reader on the runs the scan left.

The events kept are checked to be the same records either way.  The scan pays off only if it costs less than the
decoding it saves.  ``python_function`` events (``with_stack``) would be dropped the same way, but the reader keeps
the ``nn.Module:`` ones, so a scan for them must read their names.
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from attnscope.trace import fast, source  # noqa: E402
from attnscope.trace.events import Trace  # noqa: E402

# one flow event in Kineto's layout, with the separator after it
FLOW = re.compile(rb'\{\n    "ph": "[fst]", [^\n]*\n    "cat": "(?:ac2g|fwdbwd)"[^\n]*\n  \},\n  ')


def best(f: Any, n: int) -> tuple[float, Any]:
    out, times = None, []
    for _ in range(n):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times) * 1000, out


def read(runs: list[bytes]) -> Trace:
    tr = Trace(path="-", device_properties=[])
    r = fast.Reader(tr, keep_all_shapes=False)
    for run in runs:
        if r.read(run) is not None:
            raise SystemExit("a run the typed decoder refused: this benchmark wants a trace it reads whole")
    return tr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", nargs="?", default=str(REPO / "tests" / "data" / "llama_train_sdpa.json.gz"))
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    gc.disable()
    p = Path(a.trace)
    src = source.chunks(p)
    head, m = source.read_head(p, src)
    if m is None:
        raise SystemExit(f"{p}: not in Kineto's layout")
    runs = list(source.event_runs(p, head[m.start(2) :], src, []))
    n = a.repeat
    t_read, full = best(lambda: read(runs), n)
    t_scan, kept = best(lambda: [FLOW.sub(b"", r) for r in runs], n)
    t_kept, part = best(lambda: read(kept), n)
    same = (full.cpu_ops, full.gpu, full.runtime, full.annotations) == (
        part.cpu_ops,
        part.gpu,
        part.runtime,
        part.annotations,
    )
    size, left = sum(map(len, runs)), sum(map(len, kept))
    print(f"{p}: {size / 1e6:.1f} MB of events in {len(runs)} runs, {full.num_events:,} events")
    print(f"  reader as it is (decode + records)           {t_read:7.1f} ms")
    print(f"  scan that drops flow events                  {t_scan:7.1f} ms  ({left / 1e6:.1f} MB and "
          f"{part.num_events:,} events left)")  # fmt: skip
    print(f"  reader on what the scan left                 {t_kept:7.1f} ms")
    print(f"  scan + reader                                {t_scan + t_kept:7.1f} ms  "
          f"({(t_scan + t_kept) / t_read:.2f}× the reader as it is; the same records: {same})")  # fmt: skip
    print(f"(minimum of {n} passes each, one process, the text in memory; gunzip and cutting not counted)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
