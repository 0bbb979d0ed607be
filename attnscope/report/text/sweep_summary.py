"""The few lines a sweep prints at its end: what was measured, how rows ended, what each job cost.

Reads row dicts (the JSONL form) only, so a saved sweep summarises the same as a fresh one.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from attnscope.core.types import STATUSES, Case

# Stages of a job as the worker times them (time.perf_counter), in the order they run.
COST_STAGES = ("workload", "prepare", "warmup", "timing", "capture", "fingerprint", "cleanup")
MAX_PROBLEMS = 8


def status_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Rows per status, in the order of STATUSES; statuses with no row left out."""
    c = Counter(str(r.get("status")) for r in rows)
    return {s: c[s] for s in (*STATUSES, *sorted(set(c) - set(STATUSES))) if c[s]}


def counts_text(counts: dict[str, int]) -> str:
    return " · ".join(f"{s} {n}" for s, n in counts.items()) or "no rows"


def case_text(case: dict[str, Any] | None) -> str:
    """A row's case as `Case.label` words; a case this version cannot read is shown raw."""
    try:
        return Case.from_dict(case or {}).label()
    except (TypeError, ValueError):
        return str(case)


def cost_medians(rows: list[dict[str, Any]]) -> dict[str, tuple[float, int]]:
    """Median seconds per stage over the rows that timed it, and how many did; ``worker_start`` apart
    (paid once per worker, so its median is over the jobs that started a worker)."""
    costs = [r["cost_s"] for r in rows if isinstance(r.get("cost_s"), dict)]
    # "other": the job's total less its timed stages (sizing, notes, the context-manager timing, ...)
    costs = [
        {**c, "other": c["total"] - sum(c[s] for s in COST_STAGES if s in c)}
        if "total" in c and any(s in c for s in COST_STAGES)
        else c
        for c in costs
    ]
    out: dict[str, tuple[float, int]] = {}
    for stage in (*COST_STAGES, "other", "total", "worker_start"):
        vals = [float(c[stage]) for c in costs if stage in c]
        if vals:
            out[stage] = (statistics.median(vals), len(vals))
    return out


def cost_text(rows: list[dict[str, Any]], elapsed_s: float | None = None) -> list[str]:
    """The per-job cost in words: wall clock per job in the sweep's process, and the worker's own stages."""
    lines = []
    if elapsed_s is not None and rows:
        lines.append(
            f"wall clock: {elapsed_s:,.1f} s for {len(rows)} job(s), {elapsed_s / len(rows):.2f} s per job "
            "(time.monotonic in the sweep's process: workers, transfers and writes included)"
        )
    med = cost_medians(rows)
    shown = [s for s in (*COST_STAGES, "other", "total") if s in med]
    if shown:
        n = max(med[s][1] for s in shown)
        lines.append(
            f"per job inside the worker (time.perf_counter), median s over up to {n} row(s): "
            + " · ".join(f"{s} {med[s][0]:.3f}" for s in shown)
        )
    if "worker_start" in med:
        ws, n = med["worker_start"]
        lines.append(f"worker start (spawn, import torch; paid once per worker): median {ws:.2f} s, {n} start(s)")
    return lines


def problems(rows: list[dict[str, Any]], limit: int = MAX_PROBLEMS) -> list[str]:
    """One line per row that failed (error, oom, crashed, timeout), the first ``limit`` of them."""
    bad = [r for r in rows if r.get("status") not in ("ok", "skipped")]
    lines = [
        f"{r.get('status')}: {r.get('variant')} on {case_text(r.get('case'))}: {r.get('reason') or ''}".rstrip(": ")
        for r in bad[:limit]
    ]
    if len(bad) > limit:
        lines.append(f"… and {len(bad) - limit} more (status and reason are in each row)")
    return lines


def summary_lines(
    new_rows: list[dict[str, Any]], all_rows: list[dict[str, Any]], out: str, elapsed_s: float | None
) -> list[str]:
    """The sweep's closing lines, the recommendation apart."""
    lines = [f"sweep: {len(new_rows)} row(s) measured now; {len(all_rows)} in {out} in all"]
    lines.append(f"rows measured now: {counts_text(status_counts(new_rows))}")
    if len(all_rows) != len(new_rows):
        lines.append(f"rows in the file: {counts_text(status_counts(all_rows))}")
    lines += cost_text(new_rows, elapsed_s)
    lines += problems(new_rows)
    return lines
