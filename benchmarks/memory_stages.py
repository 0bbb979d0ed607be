"""Where ``attnscope analyze``'s memory goes, stage by stage, and what it grows with.

    python benchmarks/memory_stages.py TRACE [TRACE ...]    (e.g. the Llama trace and benchmarks/long_trace.py's 8x)

Each trace is analysed in a fresh process that runs the command's stages one after the other (the reader, the
analysis, the model-scale summary, the document, the insights, the JSON written piece by piece) and reads its
resident memory after each (``VmRSS``, and ``VmHWM``, the peak so far, from ``/proc/self/status``); then it drops
everything, resets the peak (``/proc/self/clear_refs``) and runs the command's own sequence (``api.analyze``, the
document and insights, the JSON written) for the peak ``analyze --json`` reaches.  It also counts
the records the reader keeps and their size in bytes, each object counted once (``sys.getsizeof`` over the record and
the values it alone holds: its floats and ints above 256; interned names, thread ids and shared grids are not counted),
from a sample of 2,000 of each kind.  Between two traces of different lengths, what grows is the difference.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import gc, json, os, random, sys, time
gc.disable()

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

stage("start")
from attnscope.trace import load_trace
from attnscope.api import analyse, annotate
from attnscope.analysis.fingerprint.breakdown import summarize
from attnscope.document.schema import document, write_json
stage("imports")
tr = load_trace(sys.argv[1])
stage("load_trace")

def own_bytes(o):
    n = sys.getsizeof(o)
    for k in getattr(type(o), "__slots__", ()) or getattr(type(o), "__struct_fields__", ()):
        if k in ("name", "pid", "tid"):
            continue  # interned: one object for all records of a name or thread
        v = getattr(o, k, None)
        if isinstance(v, float) or (isinstance(v, int) and not -5 <= v <= 256):
            n += sys.getsizeof(v)
    return n + 8  # the list's pointer

records = {}
for kind in ("cpu_ops", "gpu", "runtime", "annotations", "modules", "memory"):
    evs = getattr(tr, kind)
    sample = random.Random(0).sample(evs, min(2000, len(evs)))
    per = sum(map(own_bytes, sample)) / len(sample) if sample else 0
    records[kind] = (len(evs), per)
an = analyse(tr)
stage("analyse (op tree, attribution, kernel records)")
s = summarize(tr, an)
stage("summarize (trace_summary)")
del an, s, tr, evs, sample
gc.collect()
stage("all of it dropped")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak (VmHWM) starts again from here: what follows is the command's own sequence
stage("peak reset")
from attnscope.api import analyze
r = analyze(sys.argv[1])
stage("api.analyze: the Result (reader, analysis, summary, case, model split)")
doc = annotate(document(None, [r]))
stage("document + insights")
with open(os.devnull, "wb") as f:
    write_json(f, doc)
stage("JSON written piece by piece")
print(json.dumps({"stages": stages, "records": records}))
"""


def main() -> int:
    traces = sys.argv[1:] or [str(REPO / "tests" / "data" / "llama_train_sdpa.json.gz")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for t in traces:
        out = subprocess.run([sys.executable, "-c", CHILD, t], capture_output=True, env=env, check=True, cwd=REPO)
        got = json.loads(out.stdout.decode().strip().splitlines()[-1])
        size = Path(t).stat().st_size
        print(f"\n{t} ({size / 1e6:.1f} MB on disk)")
        print(f"  {'stage':52s} {'RSS MiB':>8s} {'peak MiB':>9s} {'CPU s':>6s}")
        prev = 0.0
        for name, rss, hwm, cpu in got["stages"]:
            print(f"  {name:52s} {rss:8.1f} {hwm:9.1f} {cpu:6.2f}   ({rss - prev:+.1f})")
            prev = rss
        print(f"  {'records the reader keeps':22s} {'count':>9s} {'bytes each':>11s} {'MiB':>7s}")
        total = 0.0
        for kind, (n, per) in got["records"].items():
            total += n * per / 2**20
            print(f"  {kind:22s} {n:9,d} {per:11.0f} {n * per / 2**20:7.1f}")
        print(f"  {'all':22s} {'':9s} {'':11s} {total:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
