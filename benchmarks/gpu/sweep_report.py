"""Summary of benchmarks/gpu/sweep.sh: rows and statuses of the sweep, what is still missing, the per-job
cost by stage (the worker's own time.perf_counter stages in each row's cost_s), and the process executor
against Ray on the same jobs.  Usage: python3 benchmarks/gpu/sweep_report.py /tmp/sweep"""

from __future__ import annotations

import re
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from attnscope.core.cases import Axes, grid
from attnscope.execute.job import job_key
from attnscope.execute.store import Store
from attnscope.report.text.sweep_summary import COST_STAGES, cost_medians, counts_text, status_counts

SWEEP_VARIANTS = ["sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "sdpa_default", "sdpa_math", "naive", "flex_compiled"]
SWEEP_AXES = Axes(
    heads=[16],
    seq=[128 << i for i in range(8)],
    head_dim=[64, 128],
    causal=[True, False],
    mode=["fwd", "fwd_bwd"],
    budget_tokens=16384,
)


def med(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f}" if xs else "—"


def sweep_part(w: Path) -> None:
    rows = Store(w / "sweep.jsonl").rows()
    planned = {job_key(v, c.to_dict()) for c in grid(SWEEP_AXES, "cuda") for v in SWEEP_VARIANTS}
    have = {job_key(r["variant"], r.get("case")) for r in rows}
    print(f"== sweep: {len(rows)} rows, {len(planned & have)} of {len(planned)} planned jobs done")
    missing = planned - have
    if missing:
        by = Counter(k[0] for k in missing)
        print(f"   missing {len(missing)}: " + ", ".join(f"{v} {n}" for v, n in by.most_common()))
        print("   to go on: keep sweep.jsonl as docs/results/raw/h200_sweep.jsonl, run again with PARTS=sweep")
    for mode in ("fwd", "fwd_bwd"):
        print(f"   {mode}: {counts_text(status_counts([r for r in rows if r.get('mode') == mode]))}")
    by_variant: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_variant[r["variant"]].append(r)
    for v, rs in by_variant.items():
        print(f"   {v:15s} {counts_text(status_counts(rs))}")
        for r in rs:
            if r["status"] in ("error", "crashed", "timeout"):
                c = r.get("case") or {}
                where = f"S={c.get('seq_q')} D={c.get('head_dim')} {r.get('mode')}"
                print(f"      {r['status']} {where}: {r.get('reason')}")
    cost_part(rows)


def cost_part(rows: list[dict[str, Any]]) -> None:
    print("== per-job cost in the sweep (s, median per row; 'sum' = seconds spent in all rows of the group)")
    cols = (*COST_STAGES, "other", "total")
    print(f"   {'variant':15s} {'mode':8s} {'rows':>4s} " + " ".join(f"{c:>11s}" for c in cols) + f" {'sum':>8s}")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("status") == "ok":
            groups[(r["variant"], r.get("mode") or "fwd")].append(r)
    for (v, mode), rs in sorted(groups.items()):
        m = cost_medians(rs)
        total = sum(float((r.get("cost_s") or {}).get("total", 0.0)) for r in rs)
        cells = " ".join(f"{m[c][0]:>11.3f}" if c in m else f"{'—':>11s}" for c in cols)
        print(f"   {v:15s} {mode:8s} {len(rs):>4d} {cells} {total:>8.1f}")
    allm = cost_medians(rows)
    if "worker_start" in allm:
        print(f"   worker start: median {allm['worker_start'][0]:.2f} s over {allm['worker_start'][1]} start(s)")
    comp = [float(r["compile_time_s"]) for r in rows if r.get("compile_time_s")]
    if comp:
        print(f"   flex_compiled compile: median {med(comp)} s over {len(comp)} case(s) (in 'prepare')")
    tot = [float((r.get("cost_s") or {}).get("total", 0.0)) for r in rows]
    if tot:
        print(f"   all rows: {sum(tot):.1f} s inside workers for {len(tot)} rows ({sum(tot) / len(tot):.2f} s per row)")


def _same(r: dict[str, Any]) -> tuple[Any, ...]:
    names = tuple(k.get("name") for k in r.get("kernels") or [])
    return (r["variant"], str(r.get("case")), r.get("mode"), r["status"], r.get("numerics_ok"), names)


def executors_part(w: Path) -> None:
    steps = (w / "steps.txt").read_text() if (w / "steps.txt").exists() else ""
    print("== the same 14 jobs: process executor against Ray (one GPU actor)")
    got: dict[str, list[dict[str, Any]]] = {}
    for name in ("process", "ray"):
        rows = Store(w / f"subset_{name}.jsonl").rows()
        if not rows:
            print(f"   {name}: no rows" + (" (Ray not importable: see env.txt)" if name == "ray" else ""))
            continue
        got[name] = rows
        wall = re.search(rf"subset {name}: rc=(\d+) wall ([\d.]+) s", steps)
        m = cost_medians(rows)
        per = ""
        if wall:
            per = f"{float(wall[2]) / len(rows):.2f} s per job by the wall clock of the command (rc {wall[1]})"
        print(f"   {name:8s} {len(rows)} rows, {counts_text(status_counts(rows))}; {per}")
        log = (w / f"subset_{name}.txt").read_text() if (w / f"subset_{name}.txt").exists() else ""
        inner = re.search(r"wall clock: ([\d.,]+) s for (\d+) job\(s\), ([\d.]+) s per job", log)
        if inner:
            print(f"            the sweep loop alone: {inner[1]} s for {inner[2]} jobs, {inner[3]} s per job")
        print(
            f"            inside the worker: median total {m['total'][0]:.3f} s; worker start "
            + (f"{m['worker_start'][0]:.2f} s ×{m['worker_start'][1]}" if "worker_start" in m else "—")
        )
    if len(got) == 2:
        a = sorted(map(_same, got["process"]), key=repr)
        b = sorted(map(_same, got["ray"]), key=repr)
        print(f"   rows equal (variant, case, mode, status, numerics_ok, kernel names): {a == b}")
        if a != b:
            for x, y in zip(a, b, strict=False):
                if x != y:
                    print(f"      process {x[:5]} ≠ ray {y[:5]}")
        t = {(r["variant"], str(r["case"])): r.get("gpu_time_us") for r in got["process"]}
        for r in got["ray"]:
            p = t.get((r["variant"], str(r["case"])))
            if p and r.get("gpu_time_us"):
                s = (r.get("case") or {}).get("seq_q")
                print(f"      {r['variant']:15s} S={s}: GPU µs process {p:10,.1f}  ray {r['gpu_time_us']:10,.1f}")


def gpus_part(w: Path) -> None:
    """Jobs per second of the sweep loop ('wall clock' in each sweep's summary) on 1 GPU and on 2."""
    rate: dict[int, float] = {}
    steady: dict[int, float] = {}
    for n in (1, 2):
        log = w / f"gpus{n}.txt"
        rows = Store(w / f"gpus{n}.jsonl").rows()
        m = re.search(r"wall clock: ([\d.,]+) s for (\d+) job", log.read_text()) if log.exists() else None
        if not m:
            continue
        secs, jobs = float(m[1].replace(",", "")), int(m[2])
        rate[n] = jobs / secs
        # workers start side by side: the longest start is the time before the first jobs run
        start = max((float((r.get("cost_s") or {}).get("worker_start", 0.0)) for r in rows), default=0.0)
        steady[n] = jobs / max(secs - start, 1e-9)
        print(
            f"== {n} GPU(s): {jobs} jobs in {secs:.1f} s, {rate[n]:.2f} jobs/s ({steady[n]:.2f} jobs/s after the "
            f"workers' start, {start:.1f} s); {counts_text(status_counts(rows))}"
        )
    if len(rate) == 2:
        print(
            f"   2 GPUs / 1 GPU: {rate[2] / rate[1]:.2f}× the jobs per second, {steady[2] / steady[1]:.2f}× after the "
            "workers' start (goal ≥ 1.8×)"
        )
        print("   (the same jobs only if both ran all 120; a run stopped at its cap compares different jobs)")


def main() -> None:
    w = Path(sys.argv[1])
    for f in ("env.txt", "steps.txt"):
        if (w / f).exists():
            print((w / f).read_text().rstrip())
    if (w / "sweep.jsonl").exists():
        sweep_part(w)
    executors_part(w)
    gpus_part(w)
    traces = sorted(p.name for p in (w / "traces").glob("*.gz"))
    print(f"== traces kept: {', '.join(traces) or 'none'}")


if __name__ == "__main__":
    main()
