"""Recommendations for serving cases (paged or ragged KV caches): per point, the best variant, the page size that
reads fastest, and whether CUDA graphs pay.  Pure (result rows as dicts in, plain data out).

A *point* is a serving case without its page size: (batch, heads, KV heads, seq_q, the lengths (``kv_lens`` or
``seq_kv``), head dim, dtype, mask, device).  Time: each row's GPU time (CUDA events, median) where it has one,
else its CPU wall time per call (median) — the same rule as the rest of the recommender; rows of both kinds are
never compared at one point.  Graphs: from a row's decode loop (``run --steps``, ``extra.decode_loop``).
"""

from __future__ import annotations

from typing import Any

POINT_KEYS = ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "kv_lens", "head_dim", "dtype", "mask", "device")


def _time(r: dict[str, Any]) -> tuple[float, str] | None:
    if r.get("gpu_time_us"):
        return float(r["gpu_time_us"]), "gpu"
    if r.get("cpu_time_us"):
        return float(r["cpu_time_us"]), "cpu"
    return None


def _usable(r: dict[str, Any]) -> bool:
    c = r.get("case") or {}
    serving = c.get("page_size") is not None or c.get("kv_lens") is not None
    return bool(serving and r.get("status") == "ok" and r.get("numerics_ok") is not False and _time(r))


def point_label(case: dict[str, Any]) -> str:
    lens = case.get("kv_lens") or f"{case.get('seq_kv')} each"
    return (
        f"B={case.get('batch')} Sq={case.get('seq_q')} KV lengths {lens} D={case.get('head_dim')} {case.get('dtype')}"
    )


def serving_recommendation(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Per point: ``best`` (variant, page size, µs), ``fastest_page`` per variant (its page sizes' times), and
    ``graphs`` per variant where a decode loop ran; None when no row is a measured serving case."""
    points: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        if not _usable(r):
            continue
        c = r["case"]
        t, kind = _time(r)  # type: ignore[misc]
        key = (*(repr(c.get(k)) for k in POINT_KEYS), kind)
        p = points.setdefault(key, {"point": point_label(c), "case": c, "time": kind, "by_variant": {}})
        p["by_variant"].setdefault(r["variant"], {})[c.get("page_size")] = t
        loop = (r.get("extra") or {}).get("decode_loop")
        if loop:
            g = (loop.get("summary") or {}).get("graph")
            e = (loop.get("summary") or {}).get("eager") or {}
            p.setdefault("graphs", {})[f"{r['variant']} page={c.get('page_size')}"] = {
                "pays": g.get("pays") if g else None,
                "why": None if g else loop.get("graph_refused"),
                "eager_step_ms": e.get("step_ms_median"),
                "replay_ms": g.get("replay_ms_median") if g else None,
                "plan_ms_per_replay": g.get("plan_ms_per_replay_median") if g else None,
                "break_even_steps_per_capture": g.get("break_even_steps_per_capture") if g else None,
                "rebuild_ms_per_1000_steps": e.get("rebuild_ms_per_1000_steps"),
                "rebuild": loop["summary"].get("rebuild"),
                "advice": loop["summary"].get("advice"),
            }
    if not points:
        return None
    out = []
    for p in points.values():
        best = min(
            ((v, page, t) for v, pages in p["by_variant"].items() for page, t in pages.items()), key=lambda x: x[2]
        )
        fastest = {v: min(pages, key=lambda k: pages[k]) for v, pages in p["by_variant"].items() if len(pages) > 1}
        out.append(
            {
                "point": p["point"],
                "time": p["time"],
                "best": {"variant": best[0], "page_size": best[1], "time_us": best[2]},
                "times_us": {v: {str(k): t for k, t in pages.items()} for v, pages in p["by_variant"].items()},
                "fastest_page": fastest,
                "graphs": p.get("graphs", {}),
                "text": _text(p["point"], best, fastest, p.get("graphs", {}), p["time"]),
            }
        )
    return {"points": out, "time_rule": "GPU time (CUDA events, median) where measured, else CPU wall time (median)"}


def _page(page: Any) -> str:
    return "contiguous (packed)" if page is None else f"pages of {page}"


def _text(point: str, best: tuple[Any, Any, float], fastest: dict[str, Any], graphs: dict[str, Any], kind: str) -> str:
    unit = "GPU µs" if kind == "gpu" else "CPU wall µs"
    parts = [f"{point}: {best[0]} with {_page(best[1])} ({best[2]:,.1f} {unit})"]
    if fastest:
        parts.append("fastest page size: " + ", ".join(f"{v} {_page(pg)}" for v, pg in sorted(fastest.items())))
    for name, g in sorted(graphs.items()):
        if g["pays"] is None:
            parts.append(f"graphs for {name}: not measured ({g['why']})")
        else:
            be = g["break_even_steps_per_capture"]
            when = f"a capture pays back after {be:.1f} steps" if be is not None else "a replay is not faster"
            parts.append(f"graphs for {name}: {'pay' if g['pays'] else 'do not pay'} ({when})")
    return "; ".join(parts)
