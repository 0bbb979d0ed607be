"""Wall time and peak RSS of ``attnscope analyze`` on a model-scale trace, beside HTA's.

    python benchmarks/analyze_speed.py [TRACE] [--runs 5] [--hta-python /tmp/hta/bin/python] [--paired R] [--long N]

Each run is a fresh process (start-up and imports count), timed from outside: wall time, and
CPU time (user + system, from ``os.wait4``'s rusage), which a machine shared with other work
disturbs less than the wall; peak RSS is the child's own ``ru_maxrss``.  HTA (``HolisticTraceAnalysis``, never a
dependency of attnscope: install it in a separate venv) runs on the same file in the same
benchmark when its interpreter is found: ``TraceAnalysis`` load + ``get_gpu_kernel_breakdown``,
the baseline of the issue.  ``--hta-aten`` also times HTA's aten-op → kernel mapping once
(attnscope does that attribution inside ``analyze``).

Targets (2-core machine): ≥ 10× faster than HTA and ≤ 150 MiB on the shared Llama trace; with
``--long 8``, the trace at 8× its length in ≤ 300 MiB and ≤ 9× the 1× time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# ../shared/data beside the checkout (see the project brief)
DEFAULT_TRACE = next(
    (
        p / "shared" / "data" / "llama_train_sdpa.json.gz"
        for p in Path(__file__).resolve().parents[2:4]
        if (p / "shared" / "data" / "llama_train_sdpa.json.gz").exists()
    ),
    Path(__file__).resolve().parents[2] / "shared" / "data" / "llama_train_sdpa.json.gz",
)  # ../shared/data beside the checkout (or beside a worktree's parent)
TARGET_WALL_S, TARGET_RSS_MIB, TARGET_RATIO = 0.5, 150, 10.0
REPO = Path(__file__).resolve().parents[1]
ATTNSCOPE_PY = [sys.executable]  # the interpreter that runs attnscope (--python)

HTA_SCRIPT = """
import sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
path, rank_dir, aten, visualize = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4] == "1"
# a directory of ranks: HTA reads every trace in it (ranks from distributedInfo); a file: rank 0 alone
ta = TraceAnalysis(trace_dir=rank_dir) if path == "-" else TraceAnalysis(trace_files={0: path}, trace_dir=rank_dir)
kernel_type_df, kernel_df = ta.get_gpu_kernel_breakdown(visualize=visualize)
t1 = time.perf_counter()
print(f"hta breakdown rows: {len(kernel_type_df)} types, {len(kernel_df)} kernels; in-process {t1 - t0:.2f} s",
      file=sys.stderr)
if aten:
    ta.get_aten_op_kernels_and_delay()
    print(f"hta aten-op -> kernel mapping: {time.perf_counter() - t1:.2f} s", file=sys.stderr)
"""


def measure(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float, str]:
    """(wall s, peak RSS MiB, CPU s, stderr) of one child process.  CPU time includes the processes it waited for
    (the reader's second core); the peak RSS is the larger of its own and theirs (Linux's ``ru_maxrss``)."""
    t0 = time.perf_counter()
    # from the repository root: ``python -m attnscope.cli.main`` finds this checkout's package in any venv
    p = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO, env={**os.environ, **(env or {})}
    )
    assert p.stderr is not None
    err = p.stderr.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({p.returncode}): {err.strip()[-2000:]}")
    return wall, ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime, err  # Linux: ru_maxrss in KiB


def series(label: str, cmd: list[str], runs: int) -> tuple[float, float, float]:
    """Medians of (wall s, peak RSS MiB, CPU s) over ``runs`` fresh processes."""
    walls, rss, cpus = [], [], []
    for i in range(runs):
        w, r, c, err = measure(cmd)
        walls.append(w)
        rss.append(r)
        cpus.append(c)
        extra = f"  [{err.strip().splitlines()[-1]}]" if err.strip() else ""
        print(f"  {label} run {i + 1}: {w:.3f} s wall, {c:.3f} s CPU, {r:.0f} MiB{extra}", flush=True)
    return statistics.median(walls), statistics.median(rss), statistics.median(cpus)


def compile_package() -> None:
    """Byte-compile attnscope first, as an installed package is: with PYTHONDONTWRITEBYTECODE set
    (or a read-only checkout) every fresh process would otherwise compile ~90 modules (~0.2 s),
    which HTA, installed by pip, never pays."""
    pkg = Path(__file__).resolve().parents[1] / "attnscope"  # the checkout's (what `python -m` runs from here)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(pkg)], check=True, stdout=subprocess.DEVNULL)
    print(f"byte-compiled {pkg} (as an install would be)")


def find_hta(explicit: str | None) -> str | None:
    for cand in [explicit, "/tmp/hta/bin/python", "/tmp/htavenv/bin/python", sys.executable]:
        if cand and Path(cand).exists():
            ok = subprocess.run([cand, "-c", "import hta"], capture_output=True).returncode == 0
            if ok:
                return cand
    return None


LONG_RSS_MIB = 300


def long_trace(trace: Path, n: int, runs: int) -> bool:
    """attnscope on an n-times longer trace (benchmarks/long_trace.py): RSS ≤ 300 MiB, time ≤ (n + 1) × the 1× time.

    Each round runs the 1× trace then the n× one, so the growth is read round by round (the load
    of a shared machine drifts between series); the medians of the rounds are reported."""
    longer = Path(tempfile.gettempdir()) / f"{trace.name.split('.')[0]}_x{n}.json.gz"
    if not longer.exists():
        here = Path(__file__).parent / "long_trace.py"
        subprocess.run([sys.executable, str(here), str(trace), "--times", str(n), "--out", str(longer)], check=True)
    growth, cpu_growth, rss, walls, cpus = [], [], [], [], []
    for i in range(runs):
        w1, _, c1, _ = measure([ATTNSCOPE_PY[0], "-m", "attnscope.cli.main", "analyze", str(trace)])
        w, r, c, _ = measure([ATTNSCOPE_PY[0], "-m", "attnscope.cli.main", "analyze", str(longer)])
        growth.append(w / w1)
        cpu_growth.append(c / c1)
        rss.append(r)
        walls.append(w)
        cpus.append(c)
        print(
            f"  round {i + 1}: 1x {w1:.3f} s wall {c1:.3f} s CPU; {n}x {w:.3f} s wall {c:.3f} s CPU, {r:.0f} MiB: "
            f"{w / w1:.1f}× wall, {c / c1:.1f}× CPU",
            flush=True,
        )
    g, cg, worst = statistics.median(growth), statistics.median(cpu_growth), max(rss)
    print(
        f"attnscope analyze on {n}x the trace ({longer.stat().st_size / 2**20:.0f} MiB gzipped): median "
        f"{statistics.median(walls):.3f} s wall, {statistics.median(cpus):.3f} s CPU; {g:.1f}× the 1× wall and "
        f"{cg:.1f}× its CPU per round (median; range {min(growth):.1f}–{max(growth):.1f}× and "
        f"{min(cpu_growth):.1f}–{max(cpu_growth):.1f}×) for {n}× the events; peak RSS at most {worst:.0f} MiB "
        f"(targets ≤ {LONG_RSS_MIB} MiB and ≤ {n + 1}× the 1× time)"
    )
    return worst <= LONG_RSS_MIB and g <= n + 1


def ranks_scaling(trace: Path, n: int, runs: int, jobs_list: list[int]) -> None:
    """``attnscope analyze DIR`` on n ranks' traces (copies of one, named rank<i>) with each --jobs of
    ``jobs_list``: the process pool spreads the ranks over the cores; per-rank tables and the skew summary come
    out.  Speed-ups are against --jobs 1 (medians of ``runs`` rounds, the settings interleaved in each round)."""
    d = Path(tempfile.mkdtemp(prefix="ranks_"))
    for i in range(n):
        (d / f"rank{i}.json.gz").symlink_to(trace.resolve())
    walls: dict[int, list[float]] = {j: [] for j in jobs_list}
    for i in range(runs):
        for jobs in jobs_list:
            w, r, c, _ = measure([ATTNSCOPE_PY[0], "-m", "attnscope.cli.main", "analyze", str(d), "--jobs", str(jobs)])
            walls[jobs].append(w)
            print(f"  round {i + 1}: {n} ranks, --jobs {jobs}: {w:.3f} s wall, {c:.3f} s CPU, {r:.0f} MiB", flush=True)
    base = statistics.median(walls[jobs_list[0]])
    for jobs in jobs_list:
        w = statistics.median(walls[jobs])
        print(f"{n} ranks, --jobs {jobs}: {w:.3f} s (median), {base / w:.2f}× against --jobs {jobs_list[0]}")
    shutil.rmtree(d)


def paired(ours: list[str], hta: list[str], rounds: int) -> None:
    """Each round: attnscope, then HTA right after; on a shared machine the load drifts between
    series, so the ratio within a round is the fair comparison.  Median and best round reported."""
    ratios, cpu_ratios, best = [], [], (float("inf"), float("inf"))
    for i in range(rounds):
        a, _, ac, _ = measure(ours)
        b, _, bc, _ = measure(hta)
        ratios.append(b / a)
        cpu_ratios.append(bc / ac)
        best = (min(best[0], a), min(best[1], b))
        print(
            f"  round {i + 1}: attnscope {a:.3f} s wall {ac:.3f} s CPU, HTA visualize=False {b:.3f} s wall "
            f"{bc:.3f} s CPU: {b / a:.1f}× wall, {bc / ac:.1f}× CPU",
            flush=True,
        )
    print(
        f"paired: HTA/attnscope per round median {statistics.median(ratios):.1f}× wall "
        f"(range {min(ratios):.1f}–{max(ratios):.1f}×), {statistics.median(cpu_ratios):.1f}× CPU "
        f"(range {min(cpu_ratios):.1f}–{max(cpu_ratios):.1f}×); fastest of each: {best[0]:.3f} s against "
        f"{best[1]:.3f} s = {best[1] / best[0]:.1f}×"
    )


READ_CORES = {"1": "one core", "2": "second core", "auto": "auto", "cache": "cache hit"}


def side_by_side(traces: list[Path], hta_py: str, rounds: int, modes: list[str]) -> bool:
    """Each round runs, for every trace in turn, ``attnscope analyze TRACE --json`` (once per reader mode: the
    environment's ``ATTNSCOPE_READ_CORES``, 1 = one core (what a user gets), 2 = a child reads the first part on the
    second core, auto = the second core while the load average leaves one idle; cache = a repeat analysis with the
    trace cache warm) then HTA's load + breakdown (visualize=False) on the same trace: per trace and mode, the
    medians of each tool and of the per-round ratio (wall and CPU).  A directory is a job's ranks: ``attnscope
    analyze DIR --json``, HTA's ``TraceAnalysis(trace_dir=DIR)``.  The load average is printed with every round."""
    work = Path(tempfile.mkdtemp(prefix="side_by_side_"))
    cmds = []
    for i, t in enumerate(traces):
        if t.is_dir():
            hta = [hta_py, "-c", HTA_SCRIPT, "-", str(t), "0", "0"]
        else:
            d = work / f"t{i}"
            d.mkdir()
            shutil.copy(t, d / t.name)  # HTA wants a trace directory
            hta = [hta_py, "-c", HTA_SCRIPT, str(d / t.name), str(d), "0", "0"]
        ours = [ATTNSCOPE_PY[0], "-m", "attnscope.cli.main", "analyze", str(t), "--json", str(work / f"out{i}.json")]
        cmds.append((t, ours, hta))
    got: dict[tuple[Path, str], list[tuple[float, float, float, float, float]]] = {
        (t, m): [] for t in traces for m in modes
    }
    envs = {m: {"ATTNSCOPE_READ_CORES": m} for m in modes}
    if "cache" in modes:  # a repeat analysis: the trace cache filled by one run before the rounds
        envs["cache"] = {"ATTNSCOPE_READ_CORES": "1", "ATTNSCOPE_TRACE_CACHE": str(work / "cache")}
        for _, ours, _ in cmds:
            measure(ours, envs["cache"])
    for r in range(rounds):
        for t, ours, hta in cmds:
            mine = []
            for m in modes:
                mine.append((m, *measure(ours, envs[m])[:3], os.getloadavg()[0]))
            b, _, bc, _ = measure(hta)
            for m, a, ar, ac, load in mine:
                got[(t, m)].append((a, ac, b, bc, ar))
                print(
                    f"  round {r + 1}, {t.name}, {READ_CORES[m]}: attnscope {a:.3f} s wall {ac:.3f} s CPU {ar:.0f} "
                    f"MiB (load {load:.1f}); HTA {b:.3f} s wall {bc:.3f} s CPU: {b / a:.1f}× wall, {bc / ac:.1f}× CPU",
                    flush=True,
                )
    shutil.rmtree(work)
    head = f"{'attnscope wall':>15}{'CPU':>8}{'RSS':>9}{'HTA wall':>10}{'CPU':>8}{'ratio wall':>12}{'CPU':>16}"
    print(f"\n{'trace':30}{'reader':>13}{head}")
    ok = True
    for (t, m), rows in got.items():
        med = [statistics.median(x) for x in zip(*rows, strict=True)]
        walls = sorted(b / a for a, _, b, _, _ in rows)
        cpus = sorted(bc / ac for _, ac, _, bc, _ in rows)
        w, c = statistics.median(walls), statistics.median(cpus)
        ok = ok and min(w, c) >= TARGET_SIDE
        print(
            f"{t.name[:30]:30}{READ_CORES[m]:>13}{med[0]:>13.3f} s{med[1]:>6.3f} s{max(r[4] for r in rows):>5.0f} MiB"
            f"{med[2]:>8.3f} s{med[3]:>6.3f} s{w:>7.1f}× ({walls[0]:.1f}–{walls[-1]:.1f}){c:>7.1f}× "
            f"({cpus[0]:.1f}–{cpus[-1]:.1f})"
        )
    print(f"(medians of {rounds} rounds; ratios are HTA / attnscope per round, their median and range; RSS: the worst)")
    return ok


TARGET_SIDE = 15.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", nargs="?", default=str(DEFAULT_TRACE))
    ap.add_argument(
        "--side-by-side",
        nargs="+",
        metavar="TRACE",
        help="these traces (files, or directories of a job's ranks) each with --json, paired with HTA in every round "
        "(rounds: --paired, default 5); medians and ratios per trace",
    )
    ap.add_argument(
        "--read-cores",
        choices=["1", "2", "both", "auto"],
        default="both",
        help="--side-by-side: attnscope's reader on one core (1, the default a user gets), with a child on the second "
        "core (2), both in every round (default), or auto (the second core while the load average leaves one idle)",
    )
    ap.add_argument(
        "--cache",
        action="store_true",
        help="--side-by-side: also attnscope repeating an analysis with the trace cache warm (ATTNSCOPE_TRACE_CACHE)",
    )
    ap.add_argument("--runs", type=int, default=5, help="runs of attnscope (median reported)")
    ap.add_argument("--hta-runs", type=int, default=3, help="runs of HTA (median reported)")
    ap.add_argument("--hta-python", help="interpreter with HolisticTraceAnalysis installed")
    ap.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter that runs attnscope (default: this one), from the repository root. A clean venv with "
        "analyze's dependencies alone (python -m venv /tmp/asv && /tmp/asv/bin/pip install msgspec rich isal) starts "
        "like HTA's own venv; a development venv made with --system-site-packages and an editable install also runs "
        "their .pth hooks at every start",
    )
    ap.add_argument("--hta-aten", action="store_true", help="also time HTA's aten-op → kernel mapping once")
    ap.add_argument("--long", type=int, default=0, metavar="N", help="also time attnscope on an N-times longer trace")
    ap.add_argument(
        "--paired",
        type=int,
        default=0,
        metavar="R",
        help="R rounds of attnscope then HTA (visualize=False) back to back; the ratio per round (for a busy machine)",
    )
    ap.add_argument(
        "--ranks", type=int, default=0, metavar="N", help="also time a directory of N ranks (workers: --jobs-list)"
    )
    ap.add_argument(
        "--jobs-list", default="1,2", help="the --jobs values the ranks' directory is analysed with (default 1,2)"
    )
    args = ap.parse_args()
    ATTNSCOPE_PY[0] = args.python
    if args.side_by_side:
        compile_package()
        hta_py = find_hta(args.hta_python)
        if hta_py is None:
            print("HTA not installed (pip install HolisticTraceAnalysis in a separate venv)", file=sys.stderr)
            return 2
        print(
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start; attnscope under "
            f"{ATTNSCOPE_PY[0]}, HTA under {hta_py}"
        )
        modes = ["1", "2"] if args.read_cores == "both" else [args.read_cores]
        modes += ["cache"] if args.cache else []
        ok = side_by_side([Path(t).resolve() for t in args.side_by_side], hta_py, args.paired or 5, modes)
        verdict = "met" if ok else "NOT met"
        print(f"load average {os.getloadavg()[0]:.1f} at the end; goal ≥ {TARGET_SIDE}× on each: {verdict}")
        return 0 if ok else 1
    trace = Path(args.trace).resolve()
    if not trace.exists():
        print(f"no trace at {trace}", file=sys.stderr)
        return 2
    print(f"trace: {trace} ({trace.stat().st_size / 2**20:.1f} MiB on disk), {os.cpu_count()} cores")
    print(f"attnscope runs under {ATTNSCOPE_PY[0]}")
    compile_package()
    ours = series("attnscope", [ATTNSCOPE_PY[0], "-m", "attnscope.cli.main", "analyze", str(trace)], args.runs)
    print(
        f"attnscope analyze: median {ours[0]:.3f} s wall, {ours[2]:.3f} s CPU, {ours[1]:.0f} MiB peak RSS "
        f"(targets ≤ {TARGET_WALL_S} s, ≤ {TARGET_RSS_MIB} MiB)"
    )
    ok = ours[0] <= TARGET_WALL_S and ours[1] <= TARGET_RSS_MIB
    if args.long:
        ok = long_trace(trace, args.long, args.runs) and ok
    if args.ranks:
        ranks_scaling(trace, args.ranks, args.runs, [int(j) for j in args.jobs_list.split(",")])
    hta_py = find_hta(args.hta_python)
    if hta_py is None:
        print("HTA not installed (pip install HolisticTraceAnalysis in a separate venv): no ratio")
        return 0 if ok else 1
    with tempfile.TemporaryDirectory() as d:
        local = Path(d) / trace.name  # HTA wants a trace directory
        shutil.copy(trace, local)
        # HTA's own default draws plotly figures (visualize=True); visualize=False is its fastest call.
        fast = series("HTA visualize=False", [hta_py, "-c", HTA_SCRIPT, str(local), d, "0", "0"], args.hta_runs)
        default = series("HTA defaults", [hta_py, "-c", HTA_SCRIPT, str(local), d, "0", "1"], args.hta_runs)
        if args.hta_aten:
            _, _, _, err = measure([hta_py, "-c", HTA_SCRIPT, str(local), d, "1", "0"])
            print("  " + err.strip().splitlines()[-1])
        if args.paired:
            paired(
                [ATTNSCOPE_PY[0], "-m", "attnscope.cli.main", "analyze", str(trace)],
                [hta_py, "-c", HTA_SCRIPT, str(local), d, "0", "0"],
                args.paired,
            )
    print(f"\n{'':38}{'wall (median)':>15}{'CPU (median)':>14}{'peak RSS':>12}{'attnscope is':>16}")
    print(f"{'attnscope analyze (+ attribution)':38}{ours[0]:>13.3f} s{ours[2]:>12.3f} s{ours[1]:>8.0f} MiB")
    rows = (("HTA load + breakdown, visualize=False", fast), ("HTA load + breakdown, defaults", default))
    for label, (w, r, c) in rows:
        print(
            f"{label:38}{w:>13.3f} s{c:>12.3f} s{r:>8.0f} MiB{w / ours[0]:>9.1f}× faster (wall), "
            f"{c / ours[2]:.1f}× less CPU, {r / ours[1]:.1f}× less memory"
        )
    ratio = fast[0] / ours[0]
    print(
        f"goal: ≥ {TARGET_RATIO}× faster than HTA's load + kernel breakdown; against its fastest call: {ratio:.1f}× "
        f"wall, {fast[2] / ours[2]:.1f}× CPU (medians of separate series; --paired compares round by round)"
    )
    return 0 if ok and ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
