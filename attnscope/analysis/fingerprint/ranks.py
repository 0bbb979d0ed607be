"""Several traces of one job (one file per rank) → one overall summary.  Pure, no torch."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from attnscope.analysis.fingerprint.breakdown import CATEGORIES


def _device0(s: dict[str, Any]) -> dict[str, Any]:
    devs = (s.get("idle") or {}).get("devices") or []
    return devs[0] if devs else {}


def _share(s: dict[str, Any], category: str) -> float:
    return next((c["share_pct"] for c in s["categories"] if c["category"] == category), 0.0)


def rank_row(variant: str, s: dict[str, Any]) -> dict[str, Any]:
    d = _device0(s)
    return {
        "rank": s.get("rank"),
        "variant": variant,
        "num_gpu_events": s["num_gpu_events"],
        "gpu_time_us": s["gpu_time_us"],
        "busy_us": d.get("busy_us"),
        "span_us": d.get("span_us"),
        "idle_pct": d.get("idle_pct"),
        "attention_share_pct": _share(s, "attention"),
        "communication_share_pct": _share(s, "communication"),
        "hidden_copy_bytes": s["hidden_copies"]["bytes"],
        "num_upcasts": s["upcasts"]["num"],
        # collectives run on the host (gloo): no kernel, so communication_share_pct is 0; their time in flight
        "cpu_collectives": _cpu_collectives(s.get("cpu_collectives")),
    }


def _cpu_collectives(c: dict[str, Any] | None) -> dict[str, Any] | None:
    if not c:
        return None
    return {k: c.get(k) for k in ("backend", "num", "in_flight_us", "in_flight_pct")}


def _spread(rows: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    vals = [(r[key], r["rank"]) for r in rows if r.get(key) is not None]
    if not vals:
        return None
    lo, hi = min(vals), max(vals)
    mean = sum(v for v, _ in vals) / len(vals)
    return {
        "min": lo[0],
        "max": hi[0],
        "mean": round(mean, 3),
        "min_rank": lo[1],
        "max_rank": hi[1],
        "spread_pct": round(100.0 * (hi[0] - lo[0]) / mean, 2) if mean > 0 else 0.0,
    }


def combine(named: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The per-rank rows and the sums over ranks of (variant, trace_summary) pairs."""
    rows = sorted((rank_row(v, s) for v, s in named), key=lambda r: (r["rank"] is None, r["rank"]))
    total = sum(s["gpu_time_us"] for _, s in named)
    cat_n: dict[str, int] = defaultdict(int)
    cat_t: dict[str, float] = defaultdict(float)
    fam_n: dict[str, int] = defaultdict(int)
    fam_t: dict[str, float] = defaultdict(float)
    for _, s in named:
        for c in s["categories"]:
            cat_n[c["category"]] += c["num_kernels"]
            cat_t[c["category"]] += c["time_us"]
        for f in s["attention_families"]:
            fam_n[f["family"]] += f["num_kernels"]
            fam_t[f["family"]] += f["time_us"]

    def pct(t: float) -> float:
        return round(100.0 * t / total, 2) if total > 0 else 0.0

    sources = sorted({str(s.get("rank_source")) for _, s in named if s.get("rank_source")})
    return {
        "num_ranks": len(rows),
        # ranks read from the traces (distributedInfo) or their file names; else the traces are numbered by
        # their order on the command line and may not be ranks of one job at all
        "ranks_known": bool(sources) and "position on the command line" not in sources,
        "rank_sources": sources,
        "gpu_time_us": round(total, 3),
        "per_rank": rows,
        "busy_us": _spread(rows, "busy_us"),
        "idle_pct": _spread(rows, "idle_pct"),
        "categories": [
            {"category": c, "num_kernels": cat_n[c], "time_us": round(cat_t[c], 3), "share_pct": pct(cat_t[c])}
            for c in CATEGORIES
        ],
        "attention_families": [
            {"family": f, "num_kernels": fam_n[f], "time_us": round(fam_t[f], 3), "share_pct": pct(fam_t[f])}
            for f in sorted(fam_t, key=lambda k: -fam_t[k])
        ],
        "hidden_copy_bytes": sum(r["hidden_copy_bytes"] for r in rows),
        "num_upcasts": sum(r["num_upcasts"] for r in rows),
    }
