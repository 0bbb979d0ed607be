"""Trace readers side by side, one run, one machine: writes docs/results/trace_readers.md.

    python benchmarks/trace_readers.py [--runs 3] [--out docs/results/trace_readers.md]

Traces: the Llama training trace (tests/data/llama_train_sdpa.json.gz), the same at 8× its length
(benchmarks/long_trace.py), a CPU-only trace and a two-rank directory (both HolisticTraceAnalysis
test traces, tests/data/hta/).  Tools, each in a fresh process (start-up and imports count; wall
time and the child's peak RSS): ``attnscope analyze``; HTA's load + ``get_gpu_kernel_breakdown
(visualize=False)``; TraceLens's ``TreePerfAnalyzer.from_file`` + ``get_df_kernels``; Perfetto's
``trace_processor``; and the parse floors (gunzip + parse only: json, orjson, msgspec typed,
simdjson).  Each tool's kernel total is set against a hand count from the raw events (plain json,
below).  Interpreters are looked for in /tmp/hta, /tmp/tracelens and /tmp/perfetto (one venv each).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
DATE = datetime.date.today().isoformat()  # the day of the run
RUNS = [3]  # --runs, for the page's command line

HAND = """
import gzip, json, sys
tot_n = tot_us = kn = kus = 0
for p in sys.argv[1:]:
    ev = json.load(gzip.open(p) if p.endswith(".gz") else open(p))["traceEvents"]
    g = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    k = [e for e in g if e["cat"] == "kernel"]
    tot_n, tot_us = tot_n + len(g), tot_us + sum(float(e["dur"]) for e in g)
    kn, kus = kn + len(k), kus + sum(float(e["dur"]) for e in k)
print(tot_n, round(tot_us, 3), kn, round(kus, 3))
"""

ATTNSCOPE = """
import sys
from attnscope.cli.main import main
sys.exit(main(["analyze", *sys.argv[1:]]))
"""

HTA = """
import sys, os
from hta.trace_analysis import TraceAnalysis
files = sys.argv[1:]
ta = TraceAnalysis(trace_files={i: f for i, f in enumerate(files)}, trace_dir=os.path.dirname(files[0]))
types, kernels = ta.get_gpu_kernel_breakdown(visualize=False)
total = kernels["sum (us)"].sum()
print("REPORT", len(kernels), "rows;", f"kernel time {total:.3f} us over all rows (top kernels + others)")
"""

TRACELENS = """
import sys
from TraceLens import TreePerfAnalyzer
n, us = 0, 0.0
for f in sys.argv[1:]:
    t = TreePerfAnalyzer.from_file(f)
    df = t.get_df_kernels()
    n += len(df)
    us += float(df["Kernel duration (µs)"].sum()) if "Kernel duration (µs)" in df else float("nan")
print("REPORT", n, "kernels;", f"kernel time {us:.3f} us")
"""

PERFETTO = """
import sys
from perfetto.trace_processor import TraceProcessor
tp = TraceProcessor(trace=sys.argv[1])
r = tp.query("select count(*) as n, sum(dur) as d from slice").as_pandas_dataframe()
print("REPORT", int(r.n[0]), "slices;", f"slice time {r.d[0] / 1000:.3f} us")
"""

FLOOR = {
    "json (GC off)": "import gc, json; gc.disable(); d = json.loads(raw)",
    "orjson (GC off)": "import gc, orjson; gc.disable(); d = orjson.loads(raw)",
    "msgspec typed Structs": (
        "import gc; gc.disable(); from attnscope.trace.fast import _TOP, _EVENTS; "
        "d = _EVENTS.decode(bytes(_TOP.decode(raw)['traceEvents']))"
    ),
    "simdjson (every event visited)": (
        "import simdjson; p = simdjson.Parser(); d = p.parse(raw); n = sum(1 for e in d['traceEvents'])"
    ),
}


def measure(cmd: list[str], cwd: Path = ROOT) -> str:
    p = subprocess.run(cmd, capture_output=True, cwd=cwd)
    return (p.stdout + p.stderr).decode(errors="replace")


def run_tool(py: str, code: str, args: list[str], runs: int) -> dict:
    walls, rss, last = [], [], ""
    for _ in range(runs):
        # a fresh grandchild per run, so that its own peak RSS is read (the wrapper below reports it)
        wrapper = (
            "import os, resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "p = subprocess.run([sys.executable, '-c', sys.argv[1], *sys.argv[2:]], capture_output=True, text=True)\n"
            "w = time.perf_counter() - t\n"
            "r = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
            "print(p.stdout[-2000:], p.stderr[-2000:], sep='\\n')\n"
            "print(f'MEASURED {p.returncode} {w:.4f} {r:.1f}')\n"
        )
        out = measure([py, "-c", wrapper, code, *args])
        line = [x for x in out.splitlines() if x.startswith("MEASURED ")]
        if not line:
            return {"error": out.strip()[-400:]}
        rc, w, r = line[-1].split()[1:]
        if rc != "0":
            return {"error": _why(out)}
        walls.append(float(w))
        rss.append(float(r))
        last = out
    report = next((x[7:] for x in last.splitlines() if x.startswith("REPORT ")), "")
    return {"wall": statistics.median(walls), "rss": statistics.median(rss), "report": report, "out": last}


def _why(out: str) -> str:
    lines = [x for x in out.splitlines() if x.strip() and not x.startswith("MEASURED")]
    err = [x for x in lines if "Error" in x or "error" in x]
    return (err[-1] if err else lines[-1] if lines else "failed").strip()[:300]


def version(py: str, dist: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    r = subprocess.run([py, "-c", code], capture_output=True, text=True)
    return r.stdout.strip() or "not installed"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "docs" / "results" / "trace_readers.md"))
    ap.add_argument("--times", type=int, default=8, help="length of the long trace, in copies of the Llama steps")
    ap.add_argument("--candidates", action="store_true", help="also time the parse candidates in one process")
    ap.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter attnscope runs under (as in analyze_speed.py: a clean venv with msgspec, rich and isal "
        "starts like the other tools' venvs)",
    )
    a = ap.parse_args()
    RUNS[0] = a.runs
    llama = ROOT / "tests" / "data" / "llama_train_sdpa.json.gz"
    longer = Path(tempfile.gettempdir()) / f"llama_train_sdpa_x{a.times}.json.gz"
    if not longer.exists():
        subprocess.run(
            [sys.executable, str(HERE / "long_trace.py"), str(llama), "--times", str(a.times), "--out", str(longer)],
            check=True,
        )
    hta_dir = ROOT / "tests" / "data" / "hta"
    traces = {
        "Llama training, 10 steps (H200)": [str(llama)],
        f"the same, {a.times}× longer": [str(longer)],
        "CPU-only (HTA's cpu_only)": [str(hta_dir / "cpu_only_rank-34.json.gz")],
        "two ranks (HTA's trace_filter)": [
            str(hta_dir / "trace_filter_sampled_rank-0.json.gz"),
            str(hta_dir / "trace_filter_sampled_rank-1.json.gz"),
        ],
    }
    me = sys.executable
    hta_py = "/tmp/hta/bin/python"
    tl_py = "/tmp/tracelens/bin/python"
    pf_py = "/tmp/perfetto/bin/python"
    tools = [
        ("attnscope analyze", a.python, ATTNSCOPE),
        ("HTA get_gpu_kernel_breakdown", hta_py, HTA),
        ("TraceLens TreePerf get_df_kernels", tl_py, TRACELENS),
        ("Perfetto trace_processor", pf_py, PERFETTO),
    ]
    subprocess.run([me, "-m", "compileall", "-q", str(ROOT / "attnscope")], check=True, stdout=subprocess.DEVNULL)
    rows: list[str] = []
    for label, paths in traces.items():
        hand = subprocess.run([me, "-c", HAND, *paths], capture_output=True, text=True, check=True).stdout.split()
        size = sum(Path(p).stat().st_size for p in paths) / 2**20
        print(f"{label}: {size:.1f} MiB gzipped; hand count {hand[0]} GPU events, {hand[1]} µs", flush=True)
        rows.append(
            f"\n### {label}\n\n{size:.1f} MiB gzipped ({len(paths)} file(s)). Hand count from the raw events "
            f"(plain json): **{int(hand[0]):,} GPU events** (kernel + memcpy + memset), **{float(hand[1]):,.3f} µs**; "
            f"kernels alone {int(hand[2]):,}, {float(hand[3]):,.3f} µs.\n"
        )
        rows.append("| tool | wall (median) | peak RSS | what it reports | against the hand count |")
        rows.append("|---|---:|---:|---|---|")
        for name, py, code in tools:
            if not Path(py).exists():
                rows.append(f"| {name} | – | – | not installed ({py}) | |")
                continue
            r = run_tool(py, code, paths, a.runs if name != "Perfetto trace_processor" else 1)
            if "error" in r:
                print(f"  {name}: refused: {r['error']}", flush=True)
                rows.append(f"| {name} | – | – | refused: `{r['error'].replace('|', '/')}` | |")
                continue
            rep = r["report"] or attnscope_report(paths)
            verdict = compare(rep, int(hand[0]), float(hand[1]), float(hand[3]))
            print(f"  {name}: {r['wall']:.3f} s, {r['rss']:.0f} MiB; {rep}; {verdict}", flush=True)
            rows.append(f"| {name} | {r['wall']:.3f} s | {r['rss']:.0f} MiB | {rep} | {verdict} |")
        if len(paths) == 1:
            for name, stmt in FLOOR.items():
                code = f"import gzip, sys; raw = gzip.open(sys.argv[1]).read()\n{stmt}"
                r = run_tool(me, code, paths, a.runs)
                cell = (
                    f"{r['wall']:.3f} s | {r['rss']:.0f} MiB" if "error" not in r else f"– | – | refused: {r['error']}"
                )
                print(f"  floor {name}: {cell}", flush=True)
                rows.append(f"| floor: gunzip + {name} | {cell} | parse only, no analysis | |")
    if a.candidates:
        cand = subprocess.run([me, "-c", CANDIDATES, str(llama)], capture_output=True, text=True, cwd=ROOT)
        print(cand.stdout + cand.stderr[-2000:])
        rows += ["", "### Parse candidates, in one process on the Llama trace's 40 MB (median of 5)", ""]
        rows += ["| candidate | time |", "|---|---:|", *cand.stdout.strip().splitlines()]
    write(a.out, rows, hta_py, tl_py, pf_py, a.python)
    print(f"written: {a.out}")
    return 0


CANDIDATES = """
import gc, gzip, io, statistics, sys, time
raw = gzip.open(sys.argv[1]).read()
def med(f, n=5):
    t = []
    for _ in range(n):
        gc.collect(); t0 = time.perf_counter(); f(); t.append(time.perf_counter() - t0)
    return statistics.median(t)
def off(f):
    def g():
        gc.disable()
        try: f()
        finally: gc.enable()
    return g
import json, orjson, ijson, simdjson
from attnscope.trace.fast import _TOP, _EVENTS, Reader
from attnscope.trace import Trace, load_trace
def typed_join():
    tr = Trace(path="", device_properties=[])
    Reader(tr, False).read(bytes(_TOP.decode(raw)["traceEvents"]))
    by_corr = {r.correlation: r for r in tr.runtime}
    return [by_corr.get(g.correlation) for g in tr.gpu]
def simd():
    p = simdjson.Parser(); d = p.parse(raw)
    return sum(1 for e in d["traceEvents"])
rows = [
    ("json.loads, GC on", med(lambda: json.loads(raw), 3)),
    ("json.loads, GC off", med(off(lambda: json.loads(raw)))),
    ("orjson.loads, GC off", med(off(lambda: orjson.loads(raw)))),
    ("ijson (" + ijson.backend + ") items, GC off", med(off(lambda: sum(1 for _ in ijson.items(
        io.BytesIO(raw), "traceEvents.item"))), 3)),
    ("msgspec typed Structs + events built + correlation join, GC off", med(off(typed_join))),
    ("pysimdjson lazy proxy, every event visited", med(simd)),
    ("attnscope load_trace (gunzip included, streamed)", med(lambda: load_trace(sys.argv[1]))),
]
for name, t in rows:
    print(f"| {name} | {t:.3f} s |")
"""


def attnscope_report(paths: list[str]) -> str:
    """attnscope's own totals: the GPU events and time of its trace_summary categories, summed over ranks."""
    import json

    out = Path(tempfile.mkdtemp()) / "a.json"
    subprocess.run(
        [sys.executable, "-m", "attnscope.cli.main", "analyze", *paths, "--json", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    d = json.loads(out.read_text())
    n = us = 0.0
    for r in d["results"]:
        s = r.get("trace_summary")
        if s is None:
            return "no GPU summary: a CPU-only fingerprint of its aten ops"
        n += sum(c["num_kernels"] for c in s["categories"])
        us += sum(c["time_us"] for c in s["categories"])
    return f"{int(n):,} GPU events; GPU time {us:,.3f} us"


def compare(rep: str, n: int, us: float, kernel_us: float) -> str:
    import re

    nums = [float(x.replace(",", "")) for x in re.findall(r"([\d,]+\.\d+) us", rep)]
    if not nums:
        return "no kernel total to compare"
    d = nums[0] - us
    if abs(d) <= 1e-3 * max(1, n):
        return "same total"
    if abs(nums[0] - kernel_us) <= 1e-3 * max(1, n):
        return "same as the kernels alone (no memcpy/memset)"
    return f"differs by {d:+,.3f} µs ({100 * d / us:+.2f}%)" if us else f"reports {nums[0]} µs where there are none"


def write(out: str, rows: list[str], hta_py: str, tl_py: str, pf_py: str, attn_py: str) -> None:
    me = sys.executable
    lines = [
        "# Trace readers side by side",
        "",
        f"Date: {DATE}. Machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"Linux {platform.release()}, Python {platform.python_version()}, no GPU. Produced in one run by",
        "",
        "```",
        f"python benchmarks/trace_readers.py --runs {RUNS[0]}" + (f" --python {attn_py}" if attn_py != me else ""),
        "```",
        "",
        f"Versions: attnscope {version(me, 'attnscope')} (this checkout, under {attn_py}), msgspec "
        f"{version(attn_py, 'msgspec')}, isal {version(attn_py, 'isal')}, rich {version(attn_py, 'rich')}; "
        "floors: orjson "
        f"{version(me, 'orjson')}, pysimdjson {version(me, 'pysimdjson')}; HolisticTraceAnalysis "
        f"{version(hta_py, 'HolisticTraceAnalysis')}; TraceLens {version(tl_py, 'TraceLens')}; "
        f"perfetto {version(pf_py, 'perfetto')}.",
        "",
        "Each cell is the median of fresh processes (start-up and imports count): wall time and the",
        "child's peak RSS. What each tool computes differs: attnscope's is a full analysis (attribution,",
        "categories, idle time, copies, the attention case); HTA's is its kernel-type breakdown; TraceLens",
        "builds its CPU-GPU tree and a kernel table; the floors only gunzip and parse.",
        *rows,
        "",
        f"(generated {DATE})",
    ]
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
