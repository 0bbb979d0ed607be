"""Where ``attnscope analyze``'s memory goes, stage by stage, and what it grows with.

    python benchmarks/memory_stages.py TRACE [TRACE ...]    (e.g. the Llama trace and benchmarks/long_trace.py's 8x)

Each trace is analysed in three fresh processes, the cyclic GC off as in the command:

1. **Resident memory per stage.**  The command's stages one after the other (the reader, the analysis, the
   model-scale summary, the model split), its resident memory read after each (``VmRSS``, and ``VmHWM``, the peak
   so far, from ``/proc/self/status``); then, in a fresh process, the command's own sequence (``api.analyze``, the
   document and insights, the JSON written piece by piece) for the peak ``analyze --json`` reaches (the command
   line adds its own imports and the rendering).
2. **Python objects per stage.**  The same stages under ``tracemalloc``: the bytes of live Python objects after each
   and the most during it (as requested: pymalloc hands out 16-byte multiples, so a 24-byte float takes 32 and a
   72-byte op 80).  What the resident memory holds beyond them after the imports is that rounding and the memory
   the allocators keep once freed.
3. **The records the reader keeps, every one** (no sample): per kind, the record objects (``sys.getsizeof``), the
   numbers they hold (floats, and ints past CPython's cached -5..256; not the thread ids, one object per thread),
   each number object counted once over all records, the recorded-shapes text of the ops that keep it, and the
   lists.  Beside them, by arithmetic (not a measured implementation): what the same numbers would take unboxed in
   arrays, 8 bytes each.

Between two traces of different lengths, what grows is the difference.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

COMMON = r"""
import gc, json, os, sys, time
gc.disable()
from attnscope.trace import load_trace
from attnscope.api import analyse, annotate
from attnscope.analysis.fingerprint.breakdown import summarize
from attnscope.analysis.fingerprint.model_split import breakdown as model_split
from attnscope.document.schema import document, write_json
"""

MEM = r"""
def mem():
    got = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                got[line.split(":")[0]] = int(line.split()[1]) / 1024
    return got["VmRSS"], got["VmHWM"]

stages = []
t0 = time.process_time()
def stage(name):
    rss, hwm = mem()
    stages.append((name, rss, hwm, time.process_time() - t0))
"""

# the analysis's stages in order, each followed by stage(name): shared by the resident and the traced sequences
SEQUENCE = r"""
stage("imports")
tr = load_trace(sys.argv[1])
stage("load_trace")
an = analyse(tr)
stage("analyse (op tree, attribution, kernel records)")
s = summarize(tr, an)
stage("summarize (trace_summary)")
split = model_split(tr)
stage("model split")
"""

STAGES = COMMON + MEM + SEQUENCE + "print(json.dumps(stages))\n"

COMMAND = (
    COMMON
    + MEM
    + r"""
from attnscope.api import analyze
stage("imports")
r = analyze(sys.argv[1])
stage("api.analyze: the Result (all of the above, case; trace dropped)")
doc = annotate(document(None, [r]))
stage("document + insights")
with open(os.devnull, "wb") as f:
    write_json(f, doc)
stage("JSON written piece by piece")
print(json.dumps(stages))
"""
)

TRACED = (
    COMMON
    + r"""
import tracemalloc
tracemalloc.start()
out = []
def stage(name):
    cur, peak = tracemalloc.get_traced_memory()
    out.append((name, cur / 2**20, peak / 2**20))
    tracemalloc.reset_peak()
"""
    + SEQUENCE
    + "print(json.dumps(out))\n"
)

RECORDS = (
    COMMON
    + r"""
tr = load_trace(sys.argv[1])
seen = set()  # number objects already counted (one object may be held by several records)
NUMBER = (float, int)

def fields(o):
    t = type(o)
    return getattr(t, "__struct_fields__", None) or getattr(t, "__slots__", ())

out = {}
for kind in ("cpu_ops", "gpu", "runtime", "annotations", "modules", "memory"):
    evs = getattr(tr, kind)
    objs = nums = boxed = text = 0
    for o in evs:
        objs += sys.getsizeof(o)
        for k in fields(o):
            if k in ("pid", "tid"):
                continue  # one object per thread, shared by its records (the reader interns them)
            v = getattr(o, k, None)
            if type(v) in NUMBER and not (type(v) is int and -5 <= v <= 256):
                boxed += 1
                if id(v) not in seen:
                    seen.add(id(v))
                    nums += sys.getsizeof(v)
            elif k == "_shapes" and isinstance(v, bytes):
                text += sys.getsizeof(v)
    out[kind] = dict(n=len(evs), objects=objs, numbers=nums, boxed=boxed, text=text, list=sys.getsizeof(evs))
print(json.dumps(out))
"""
)


def child(code: str, trace: str) -> object:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code, trace], capture_output=True, env=env, check=True, cwd=REPO)
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


def main() -> int:
    traces = sys.argv[1:] or [str(REPO / "tests" / "data" / "llama_train_sdpa.json.gz")]
    mib = 2**20
    for t in traces:
        stages = child(STAGES, t) + child(COMMAND, t)  # type: ignore[operator]
        traced = dict((name, (cur, peak)) for name, cur, peak in child(TRACED, t))  # type: ignore[misc, union-attr]
        records = child(RECORDS, t)
        print(f"\n{t} ({Path(t).stat().st_size / 1e6:.1f} MB on disk)")
        cols = f"{'RSS MiB':>8s} {'peak MiB':>9s} {'CPU s':>6s}  {'objects MiB':>12s} {'their peak':>11s}"
        print(f"  {'stage':52s} {cols}")
        prev = 0.0
        for k, (name, rss, hwm, cpu) in enumerate(stages):  # type: ignore[union-attr]
            if k and name == "imports":
                print("  the command's own sequence, in a fresh process:")
                prev = 0.0
            cur, peak = traced.get(name, (None, None))
            obj = f"{cur:12.1f} {peak:11.1f}" if cur is not None else f"{'':12s} {'':11s}"
            print(f"  {name:52s} {rss:8.1f} {hwm:9.1f} {cpu:6.2f}  {obj}   ({rss - prev:+.1f} RSS)")
            prev = rss
        print("  (objects: live Python objects under tracemalloc, a separate run, the bytes asked for)")
        head = ("records the reader keeps", "count", "objects", "numbers", "boxed", "shapes", "list", "B each", "MiB")
        print(f"  {head[0]:24s} {head[1]:>9s} {head[2]:>8s} {head[3]:>8s} {head[4]:>10s} {head[5]:>7s} {head[6]:>6s}"
              f" {head[7]:>7s} {head[8]:>7s} {'numbers as arrays':>18s}")  # fmt: skip
        total = arrays = 0.0
        for kind, r in records.items():  # type: ignore[union-attr]
            n = r["n"]
            own = r["objects"] + r["numbers"] + r["text"] + r["list"]
            total += own
            arrays += r["boxed"] * 8
            print(
                f"  {kind:24s} {n:9,d} {r['objects'] / mib:8.1f} {r['numbers'] / mib:8.1f} {r['boxed']:10,d}"
                f" {r['text'] / mib:7.1f} {r['list'] / mib:6.1f} {own / n if n else 0:7.0f} {own / mib:7.1f}"
                f" {r['boxed'] * 8 / mib:18.1f}"
            )
        boxed_mib = sum(r["numbers"] for r in records.values()) / mib  # type: ignore[union-attr]
        print(f"  {'all':24s} {'':9s} {'':8s} {boxed_mib:8.1f} {'':10s} {'':7s} {'':6s} {'':7s} {total / mib:7.1f}"
              f" {arrays / mib:18.1f}")  # fmt: skip
        print("  (objects, numbers, shapes, list: MiB; boxed: how many numbers; numbers as arrays: boxed x 8 bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
