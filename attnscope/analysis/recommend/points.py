"""The points of a recommendation: the rows of one (case, mode), the best of them, its runner-up, ties and
sdpa_default against it.  Pure."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from attnscope.analysis.recommend.rows import _basis, _median, _quartiles, _source, _why_out, checked, point_key
from attnscope.analysis.rules.row_kernels import is_fused, materialises_scores
from attnscope.analysis.rules.ties import (
    MAX_TIE_RATIO,
    UNRESOLVED_ADVICE,
    Row,
    choose_best,
    kernel_names,
    one_sample,
    ran_backend,
    tied,
    unresolved_tie,
)
from attnscope.document.recommendation import AXES, DEFAULT, axes_of, label, value_order


@dataclass
class Point:
    axes: dict[str, Any]
    case: dict[str, Any]
    source: str
    rows: list[Row]  # usable rows, fastest first
    best: Row
    agree: set[str] = field(default_factory=set)  # the best and every variant tied with it
    by_variant: dict[str, dict[str, Any]] = field(default_factory=dict)  # every row of the point
    twins: dict[str, list[str]] = field(default_factory=dict)  # usable variant -> the others that ran its kernels
    ran: dict[str, str | None] = field(default_factory=dict)  # usable variant -> the backend its kernels show
    unresolved: tuple[Row, Row] | None = None  # (fastest, a tied one > MAX_TIE_RATIO× slower): no best here
    checked: bool = True  # numerics were checked here (rows.checked); else the rows competed on time alone

    def group(self, v: str) -> set[str]:
        """``v`` and the variants that ran the same kernels here: one implementation."""
        return {v, *self.twins.get(v, [])}


def twins(rows: list[Row]) -> dict[str, list[str]]:
    """For each variant, the others that ran the same compute kernels, fastest first (none: no kernels known)."""
    names = [kernel_names(r[0]) for r in rows]  # once per row: a trace's row holds ~10^4 kernels
    return {
        a[0]["variant"]: [b[0]["variant"] for b, nb in zip(rows, names, strict=True) if b is not a and na and na == nb]
        for a, na in zip(rows, names, strict=True)
    }


def best_entry(p: Point, index: int) -> dict[str, Any]:
    best, preferred_over = choose_best(p.rows)
    b, best_us, bt, basis = best
    mine = p.group(b["variant"])
    # the next implementation: the fastest variant that ran other kernels (the faster one that writes the
    # scores out, when the fused best was preferred to it)
    nxt = next((r for r in p.rows if r[0]["variant"] not in mine), None)
    fused = next((r for r in p.rows if is_fused(r[0])), None)
    entry: dict[str, Any] = {
        "index": index,
        "case": p.case,
        "mode": p.axes["mode"],
        "label": label(p.axes),
        "variant": b["variant"],
        "same_as": p.twins.get(b["variant"], []),
        "ran": p.ran.get(b["variant"]),
        "median_us": best_us,
        "p25_us": bt["p25_us"] if bt else None,
        "p75_us": bt["p75_us"] if bt else None,
        "runner_up": nxt[0]["variant"] if nxt else None,
        "runner_up_same_as": p.twins.get(nxt[0]["variant"], []) if nxt else [],
        "runner_up_ran": p.ran.get(nxt[0]["variant"]) if nxt else None,
        "runner_up_us": nxt[1] if nxt else None,
        "margin": nxt[1] / best_us if nxt and best_us > 0 else None,
        "tied": False,
        "tie_reason": None,
        "tied_with": sorted(p.agree - {b["variant"]}),
        "preferred_over": preferred_over[0]["variant"] if preferred_over else None,
        "time_source": p.source,
        "basis": basis,
        "time_method": bt.get("method") if bt else None,
        "noisy": False,
        "variants_compared": len(p.rows),
        "default": default_at(p, best),
        # the words a run's sentence and a model's advice say (analysis.recommend.run, .model)
        "same_as_us": [next(r[1] for r in p.rows if r[0]["variant"] == v) for v in p.twins.get(b["variant"], [])],
        "next_clear": None,
        "next_clear_us": None,
        "noisy_variants": [],
        "one_sample": one_sample(bt) or bool(nxt and one_sample(nxt[2])),
        "writes_scores": materialises_scores(b),
        "fastest_fused": fused[0]["variant"] if fused else None,
        "fastest_fused_us": fused[1] if fused else None,
        "numerics_checked": p.checked,
    }
    if nxt:
        entry["tied"] = tied(best, nxt)
        if preferred_over:
            entry["tie_reason"] = (
                f"quartiles overlap, and {preferred_over[0]['variant']} writes the S×S score matrix out: "
                f"{b['variant']} does the same work in O(S·D) memory"
            )
        elif entry["tied"]:
            entry["tie_reason"] = "quartiles overlap"  # other kernels: only the quartiles can tie them
        noisy = [x[0]["variant"] for x in (best, nxt) if x[2] and x[2].get("noisy")]
        entry["noisy"] = bool(noisy) and not entry["tied"]
        entry["noisy_variants"] = noisy
        # past the tie, the first implementation beyond the noise: "the next clear step"
        clear = next((r for r in p.rows if r[0]["variant"] not in p.agree and r[1] > best_us), None)
        if entry["tied"] and clear is not None:
            entry["next_clear"], entry["next_clear_us"] = clear[0]["variant"], clear[1]
    return entry


def default_at(p: Point, best: Row) -> dict[str, Any] | None:
    """sdpa_default against the best, and the backend its kernels show it ran.  It is the best when it is
    the variant named best or ran the same kernels (``same_kernels_as_best``: then it is one implementation
    with the best, timed a little slower or faster by run-to-run variation)."""
    d = next((r for r in p.rows if r[0]["variant"] == DEFAULT), None)
    if d is None:
        raw = p.by_variant.get(DEFAULT)
        return {"measured": False, "why": _why_out(raw, p.source)} if raw else None
    backend, seen_in = ran_backend(d[0])
    twin = d is not best and DEFAULT in p.twins.get(best[0]["variant"], [])
    out: dict[str, Any] = {
        "measured": True,
        "median_us": d[1],
        "ratio": d[1] / best[1] if best[1] > 0 else None,
        "lost_us": d[1] - best[1],
        "is_best": d is best or twin,
        "same_kernels_as_best": twin,
        "tied": d is not best and not twin and tied(best, d),
        "ran": backend,
        "kernel": seen_in if seen_in and seen_in != "aten op" else None,
    }
    if out["tied"]:
        out["tie_reason"] = "quartiles overlap"
    return out


def points_of(
    rows: list[dict[str, Any]],
) -> tuple[list[Point], list[dict[str, Any]], Counter[str], int, int]:
    groups: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    axes_by: dict[str, dict[str, Any]] = {}
    excluded: list[dict[str, Any]] = []
    status: Counter[str] = Counter()
    superseded = no_case = 0
    for r in rows:
        status[str(r.get("status"))] += 1
        if not isinstance(r.get("case"), dict) or not isinstance(r.get("variant"), str):
            no_case += 1
            excluded.append({"variant": r.get("variant"), "label": None, "why": "no case recorded (e.g. a trace)"})
            continue
        ax = axes_of(r)
        k = point_key(ax)
        axes_by[k] = ax
        if r["variant"] in groups[k]:
            superseded += 1  # the same (variant, case, mode) again: the later row stands
        groups[k][r["variant"]] = r
    points = []
    for k in sorted(groups, key=lambda k: [value_order(axes_by[k].get(a)) for a in AXES]):
        by_v = groups[k]
        src = _source(list(by_v.values()))
        check = checked(list(by_v.values()))
        usable: list[Row] = []
        out: list[tuple[dict[str, Any], str]] = []
        for v in sorted(by_v):
            r = by_v[v]
            why = _why_out(r, src, check)
            if why:
                out.append((r, why))
            else:
                usable.append((r, _median(r, src) or 0.0, _quartiles(r, src), _basis(r, src)))
        usable.sort(key=lambda x: (x[1], x[0]["variant"]))
        best_us = None
        if usable:
            best = choose_best(usable)[0]
            best_us = best[1]
            p = Point(axes_by[k], by_v[next(iter(by_v))]["case"], src, usable, best, by_variant=by_v, checked=check)
            p.twins = twins(usable)
            p.ran = {x[0]["variant"]: ran_backend(x[0])[0] for x in usable}
            p.agree = {best[0]["variant"]} | {x[0]["variant"] for x in usable if x is not best and tied(best, x)}
            p.unresolved = unresolved_tie(usable)
            points.append(p)
        for r, why in out:
            e: dict[str, Any] = {"variant": r["variant"], "label": label(axes_by[k]), "status": r.get("status")}
            e["why"] = why
            us = _median(r, src)
            if r.get("status") == "ok" and us is not None:
                e["median_us"] = us
                e["faster_than_best"] = best_us is not None and us < best_us
            excluded.append(e)
    return points, excluded, status, superseded, no_case


def unresolved_entry(p: Point) -> dict[str, Any]:
    """A point whose tie spans more than ``MAX_TIE_RATIO``× in median: marked, never given a best."""
    assert p.unresolved is not None
    fast, slow = p.unresolved
    ratio = slow[1] / fast[1] if fast[1] > 0 else None
    gap = f"{ratio:.1f}×" if ratio is not None else "far"
    return {
        "case": p.case,
        "mode": p.axes["mode"],
        "label": label(p.axes),
        "unresolved": True,
        "fastest": fast[0]["variant"],
        "fastest_us": fast[1],
        "tied_slow": slow[0]["variant"],
        "tied_slow_us": slow[1],
        "ratio": ratio,
        "basis": fast[3],
        "why": (
            f"{slow[0]['variant']} ({slow[1]:,.1f} µs) counts as tied with {fast[0]['variant']} ({fast[1]:,.1f} µs) "
            f"although its median is {gap} slower (over {MAX_TIE_RATIO:g}×): the timings were disturbed, so no "
            f"variant is named best here; {UNRESOLVED_ADVICE}"
        ),
    }
