"""``slower_than_best``: a variant against the best of its case, as the one recommendation names it.  Pure."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.rules.insights import Out, r1
from attnscope.analysis.rules.peers import SLOWER_MIN_RATIO, Peers, case_key, timing_of
from attnscope.analysis.rules.ties import ONE_SAMPLE_NOTE, UNRESOLVED_ADVICE, one_sample, tied
from attnscope.core.types import Insight, NotChecked


def slower_than_best(r: dict[str, Any], peers: Peers) -> Out:
    """``r`` against the variant ``peers.recommendation`` names best (its ties, its unresolved point included)."""
    if case_key(r) is None:
        return NotChecked(
            "slower_than_best",
            "needs each result's case, to know the variants solve the same problem; "
            + (
                "this trace's case is not known ("
                + "; ".join(f"{k}: {v}" for k, v in (r.get("case_unknown") or {}).items())
                + ")"
                if r.get("case_unknown")
                else "not known for this result"
            ),
        )
    mine = timing_of(r) if r.get("numerics_ok") is not False else None  # a wrong result is not "slow"
    rec = peers.recommendation
    if mine is None or rec is None:
        return []
    if rec["unresolved"]:  # the recommendation names no best here: no "use X" either
        u = rec["unresolved"][0]
        return NotChecked(
            "slower_than_best",
            f"no best at this case: {u['tied_slow']}'s quartiles overlap {u['fastest']}'s although its "
            f"median is {u['ratio']:.1f}× slower; {UNRESOLVED_ADVICE}",
        )
    if len(rec["best"]) != 1:
        return []
    b = rec["best"][0]
    best = next(p for p in peers.results if p.get("variant") == b["variant"])
    best_us, basis, best_t = b["median_us"], b["basis"], (timing_of(best) or (0.0, None, ""))[1]
    if b["variant"] == r["variant"] or r["variant"] in b["tied_with"]:
        return []  # the best, or tied with it (inside the noise, or the same kernels)
    us, t, _ = mine
    ratio = us / best_us
    if ratio < SLOWER_MIN_RATIO or tied((r, us, t, basis), (best, best_us, best_t, basis)):
        return []  # inside the noise, or the same kernels: run-to-run variation, not a slower variant
    n = len(peers.rows)  # what "best" is best among: a run of two variants names the faster of two, no more
    ev = {
        "best": best["variant"],
        "num_compared": n,
        "best_us": r1(best_us),
        "this_us": r1(us),
        "ratio": round(ratio, 2),
        "lost_us": r1(us - best_us),
        "basis": basis,
    }
    msg = (
        f"{ev['ratio']:.2f}× slower than {best['variant']}, the recommended one of the {n} variants measured here "
        f"({ev['this_us']:,.1f} µs vs {ev['best_us']:,.1f} µs, {basis}): {ev['lost_us']:,.1f} µs lost per call"
    )
    single = one_sample(t) or one_sample(best_t)
    ev["one_sample"] = single
    return [
        Insight(
            id="slower_than_best",
            variant=r["variant"],
            severity="warning" if ratio >= 1.5 and not single else "info",
            message=msg,
            advice=f"use {best['variant']} for this shape and dtype (see the recommendation)"
            + (f"; {ONE_SAMPLE_NOTE}" if single else ""),
            evidence=ev,
        )
    ]
