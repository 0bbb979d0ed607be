"""An independent re-derivation of a tour verdict from the transcript's measured numbers, following the
documented noise rule (docs/tour.md, run --guess): a timed value's band spans its quartiles and fastest
sample and at least ±10% of the median on a CPU; hit when the whole band agrees with the guess, miss when
none of it does, else too close to call.  Written apart from attnscope's own code on purpose."""

from __future__ import annotations

from typing import Any

FLOOR = 0.10  # CPU


def band(r: dict[str, Any]) -> tuple[float, float]:
    m = r["time_us"]
    t = r["timing"] or {}
    lo, hi = m / (1 + FLOOR), m * (1 + FLOOR)
    if t.get("p25_us") is not None and t.get("p75_us") is not None:
        lo, hi = min(lo, t["p25_us"]), max(hi, t["p75_us"])
    if t.get("min_us") is not None:
        lo = min(lo, t["min_us"])
    return lo, hi


def faster(a: dict[str, Any], b: dict[str, Any]) -> tuple[float, float]:
    """Band of time(b) / time(a)."""
    alo, ahi = band(a)
    blo, bhi = band(b)
    return blo / ahi, bhi / alo


def verdict_of_band(lo: float, hi: float, want: Any) -> str:
    if isinstance(want, list):
        if want[0] <= lo and hi <= want[1]:
            return "hit"
        return "miss" if hi < want[0] or lo > want[1] else "close"
    if lo >= want:
        return "hit"
    return "miss" if hi < want else "close"


def expected_outcome(step: dict[str, Any], q: dict[str, Any]) -> str | None:
    """The outcome the measurements imply, or None for a question this module does not re-derive."""
    by = {r["variant"]: r for r in step["results"]}
    preds = q.get("predictions") or []
    if not preds:
        return None
    outs = []
    for p in preds:
        r = by[p["variant"]]
        if p["kind"] == "kernels":
            n, e = r["num_kernels"], p["expected"]
            outs.append("hit" if (e[0] <= n <= e[1] if isinstance(e, list) else n == e) else "miss")
        elif p["kind"] == "hidden_copy":
            outs.append("hit" if (r["hidden_copies"] > 0) == p["expected"] else "miss")
        elif p["kind"] == "upcast":
            outs.append("hit" if bool(r["upcast_fp32"]) == p["expected"] else "miss")
        elif p["kind"] == "backend":
            outs.append("hit" if r["backend"] == p["expected"] else "miss")
        elif p["kind"] in ("faster_than", "slower_than"):
            other = by[p["expected"]["variant"]]
            lo, hi = faster(r, other)
            if p["kind"] == "slower_than":
                lo, hi = 1 / hi, 1 / lo
            outs.append(verdict_of_band(lo, hi, p["expected"]["by"]))
        else:
            return None
    if "miss" in outs:
        return "miss"
    return "hit" if all(o == "hit" for o in outs) else "close"
