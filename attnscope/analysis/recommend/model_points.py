"""A model's recommendation per mode and point, and its rows annotated with the model's rules.  Pure.

Which implementation is best at a point, its runner-up, margin, ties and an unresolved point are the one
recommender's (:func:`attnscope.analysis.recommend.recommend` on the rows as :func:`as_generic` gives them):
`attnscope model`, `attnscope recommend` on its rows and a run of one case say the same.  The insights are the
model's rules (the ``model`` rules of :data:`attnscope.analysis.rules.RULES`), each handed the row the one
recommender named best at its point.
"""

from __future__ import annotations

from typing import Any

from attnscope.analysis.recommend.recommender import recommend as recommend_rows
from attnscope.analysis.rules import explain_step
from attnscope.analysis.rules.model_step import Step
from attnscope.analysis.rules.ties import MAX_TIE_RATIO, UNRESOLVED_ADVICE

Point = tuple[str, Any, Any, Any]


def _ok(rows: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["mode"] == mode and r["status"] == "ok" and r.get("step_time")]


def annotate_rows(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Fill each ok row's insights; return the recommendation per mode (per mode and point on a grid)."""
    recs: dict[str, dict[str, Any]] = {}
    points = list(dict.fromkeys(_point(r) for r in rows))
    entries = _entries(rows)
    for point in points:
        mode = point[0]
        here = [r for r in rows if _point(r) == point]
        ok = sorted(_ok(here, mode), key=lambda r: r["step_time"]["median_us"])
        entry = entries.get(point)
        best = _best_row(entry, ok)
        failed = [r for r in here if r["status"] in ("skipped", "error", "oom")]
        for r in ok:
            r["insights"] = explain_step(r, Step([o for o in ok if o is not r], failed, best))
        if ok and entry is not None:
            one = len({p[0] for p in points}) == len(points)  # one point per mode: keyed by the mode, as before
            configs = {p[3][0] for p in points}
            name = f" {point[3][0]}" if len(configs) > 1 else ""
            recs[mode if one else f"{mode}{name} B{point[1]} S{point[2]}"] = _view(entry, ok)
    return recs


def _point(r: dict[str, Any]) -> tuple[str, Any, Any, Any]:
    """Rows compared with each other: one mode at one (batch, seq) of one config (dtype and device)."""
    c: dict[str, Any] = r["case"] if isinstance(r.get("case"), dict) else {}
    where = tuple(c.get(k) for k in ("config", "layers", "dtype", "device"))
    return r["mode"], r.get("batch"), r.get("seq"), where


def _entries(rows: list[dict[str, Any]]) -> dict[Point, dict[str, Any]]:
    """The one recommender's answer for each point: its best entry, or its unresolved entry."""
    rec = recommend_rows([as_generic(r) for r in rows])
    out: dict[Point, dict[str, Any]] = {}
    for e in [*rec["best"], *rec["unresolved"]]:
        c = e["case"]
        out[
            (e["mode"], c.get("batch"), c.get("seq"), tuple(c.get(k) for k in ("config", "layers", "dtype", "device")))
        ] = e
    return out


def _best_row(entry: dict[str, Any] | None, ok: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The row the one recommender named best (at an unresolved point, the fastest: what the others compare with)."""
    if entry is None:
        return ok[0] if ok else None
    name = entry["fastest"] if entry.get("unresolved") else entry["variant"]
    return next((r for r in ok if r["impl"] == name), ok[0] if ok else None)


def as_generic(row: dict[str, Any]) -> dict[str, Any]:
    """A model row as the one recommender's input: variant (the implementation), median and quartiles of the
    timed steps (``step_time``), status, and the point (config, seq, batch, mode) as its ``case``.  Its numerics
    are not checked (no reference for a model's step): the implementations compete on time alone."""
    t = row.get("step_time") or {}
    c: dict[str, Any] = row["case"] if isinstance(row.get("case"), dict) else {}
    case = {k: c.get(k) for k in ("config", "layers", "dtype", "device")}
    return {
        "variant": row["impl"],
        "status": row["status"],
        "reason": row.get("reason"),
        "median_us": t.get("median_us"),
        "p25_us": t.get("p25_us"),
        "p75_us": t.get("p75_us"),
        "noisy": t.get("noisy"),
        "method": t.get("method"),
        "point": {"config": c.get("config"), "seq": row.get("seq"), "batch": row.get("batch"), "mode": row["mode"]},
        "mode": row["mode"],
        "case": {**case, "batch": row.get("batch"), "seq": row.get("seq"), "mode": row["mode"]},
        "step_time": t or None,
    }


def recommend(ok: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest implementation of one mode, the margin over the next, and whether it is noise: the one
    recommender's answer on ``ok`` (the ok rows of one point), in the model's words."""
    (entry,) = _entries(ok).values()
    return _view(entry, sorted(ok, key=lambda r: r["step_time"]["median_us"]))


def _view(e: dict[str, Any], ok: list[dict[str, Any]]) -> dict[str, Any]:
    """The one recommender's entry for a point as the model's recommendation (its keys as before, and
    ``unresolved``); ``ok``: the point's ok rows, fastest first (for the words: each one's step-time method)."""
    by = {r["impl"]: r for r in ok}
    if e.get("unresolved"):
        fast = by[e["fastest"]]
        text = (
            f"unresolved: {e['tied_slow']} ({e['tied_slow_us']:,.1f} µs per step) counts as tied with {e['fastest']} "
            f"({e['fastest_us']:,.1f} µs), their interquartile ranges overlapping, although its median is "
            f"{e['ratio']:.1f}× slower (over {MAX_TIE_RATIO:g}×): the timings were disturbed, so no implementation "
            f"is named best; {UNRESOLVED_ADVICE}"
        )
        return {
            "best": e["fastest"],
            "best_us": e["fastest_us"],
            "runner_up": e["tied_slow"],
            "runner_up_us": e["tied_slow_us"],
            "margin": round(e["ratio"], 4),
            "tied": [e["tied_slow"]],
            "basis": fast["step_time"]["method"].split(",")[0],
            "text": text,
            "unresolved": True,
        }
    best, best_us = e["variant"], e["median_us"]
    basis = by[best]["step_time"]["method"].split(",")[0]
    if e["runner_up"] is None:
        text = f"{best}: the only implementation measured ({best_us:,.1f} µs per step)"
        return {
            "best": best,
            "best_us": best_us,
            "runner_up": None,
            "margin": None,
            "tied": [],
            "basis": basis,
            "text": text,
            "unresolved": False,
        }
    nxt, nxt_us, margin = e["runner_up"], e["runner_up_us"], e["margin"]
    tied = [r["impl"] for r in ok if r["impl"] in e["tied_with"]]  # fastest first
    if tied and nxt in tied:  # "ahead of" the runner-up it is tied with would contradict itself
        text = (
            f"{best} at {best_us:,.1f} µs per step, tied within the noise (interquartile ranges overlap) with "
            f"{', '.join(tied)} ({nxt} {nxt_us:,.1f} µs: a median {margin:.2f}× lower is no clear lead)"
        )
    else:
        text = f"{best} at {best_us:,.1f} µs per step, {margin:.2f}× ahead of {nxt} ({nxt_us:,.1f} µs)"
    if tied and nxt not in tied:
        text += f" — tied within the noise (interquartile ranges overlap) with {', '.join(tied)}"
    if tied:
        if e["next_clear"]:
            text += f"; the next clear step is {e['next_clear']}, {e['next_clear_us'] / best_us:.2f}× slower"
    if e["noisy"]:
        text += (
            f" — but {' and '.join(e['noisy_variants'])} timed noisy (IQR/median > 10%): confirm with a larger --budget"
        )
    return {
        "best": best,
        "best_us": best_us,
        "runner_up": nxt,
        "runner_up_us": nxt_us,
        "margin": round(margin, 4),
        "tied": tied,
        "basis": basis,
        "text": text,
        "unresolved": False,
    }
