"""Insights that compare variants of one case, and SDPA's default choice explained.  Pure.

Results are compared only when they carry the same case: ``analyze`` results whose shape the
trace does not tell (case unknown) are never ranked against each other.  A trace holds one call:
its time is one sample, whose noise is unknown, and every comparison built on it says so.
"""

from __future__ import annotations

import json
from typing import Any

from attnscope.analysis.recommend.recommender import recommend
from attnscope.analysis.recommend.ties import (  # the tie rule and the choice: their old import path keeps working
    MAX_TIE_RATIO,
    ONE_SAMPLE_NOTE,
    UNRESOLVED_ADVICE,
    Row,
    choose_best,
    one_sample,
    overlaps,
    ran_backend,
    same_kernels,
    tied,
    unresolved_tie,
)
from attnscope.analysis.rules.execution import result_insights
from attnscope.analysis.rules.insights import r1, short
from attnscope.core.types import Insight, NotChecked, Severity

__all__ = [
    "MAX_TIE_RATIO",
    "ONE_SAMPLE_NOTE",
    "UNRESOLVED_ADVICE",
    "Row",
    "case_key",
    "choose_best",
    "explain_results",
    "one_sample",
    "overlaps",
    "ran_backend",
    "ranked",
    "same_kernels",
    "sdpa_choice",
    "slower_than_best",
    "tied",
    "timing_of",
    "unresolved_tie",
]

SLOWER_MIN_RATIO = 1.10  # below this a variant is "about as fast" as the best


def case_key(r: dict[str, Any]) -> str | None:
    c = r.get("case")
    return json.dumps(c, sort_keys=True) if c else None


def timing_of(r: dict[str, Any]) -> tuple[float, dict[str, Any] | None, str] | None:
    """The time a variant is judged by: GPU median on a GPU, wall time per call on a CPU."""
    if r.get("status") != "ok":
        return None
    if r.get("device_kind") == "gpu" and r.get("gpu_time_us"):
        t = r.get("gpu_time")
        what = "GPU time of one traced call (one sample)" if one_sample(t) else "GPU time per call (median)"
        return float(r["gpu_time_us"]), t, what
    if r.get("device_kind") == "cpu" and r.get("cpu_time_us"):
        t = r.get("cpu_time")
        what = (
            "wall time of one traced call (one sample)" if one_sample(t) else "wall time per call on the CPU (median)"
        )
        return float(r["cpu_time_us"]), t, what
    return None


def ranked(results: list[dict[str, Any]]) -> list[tuple[dict[str, Any], float, dict[str, Any] | None, str]]:
    """Ok, numerically sound results of one case, fastest first (a compiled row that ran eager code is not
    what its name says: left out)."""
    from attnscope.analysis.fingerprint.compiled import fell_back_to_eager

    rows = []
    for r in results:
        t = timing_of(r)
        if t is not None and r.get("numerics_ok") is not False and fell_back_to_eager(r) is None:
            rows.append((r, *t))
    return sorted(rows, key=lambda x: x[1])


def slower_than_best(
    r: dict[str, Any], peers: list[dict[str, Any]], rec: dict[str, Any] | None = None
) -> list[Insight] | NotChecked:
    """``r`` against the best of its case; ``rec``: the one recommender's answer on ``peers`` where the caller
    already has it (one per case, not one per row)."""
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
    if mine is None:
        return []
    if rec is None:
        rec = recommend(peers)  # the one recommender: its best, its ties, its unresolved points
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
    best = next(p for p in peers if p.get("variant") == b["variant"])
    best_us, basis, best_t = b["median_us"], b["basis"], (timing_of(best) or (0.0, None, ""))[1]
    if b["variant"] == r["variant"] or r["variant"] in b["tied_with"]:
        return []  # the best, or tied with it (inside the noise, or the same kernels)
    us, t, _ = mine
    ratio = us / best_us
    if ratio < SLOWER_MIN_RATIO or tied((r, us, t, basis), (best, best_us, best_t, basis)):
        return []  # inside the noise, or the same kernels: run-to-run variation, not a slower variant
    ev = {
        "best": best["variant"],
        "best_us": r1(best_us),
        "this_us": r1(us),
        "ratio": round(ratio, 2),
        "lost_us": r1(us - best_us),
        "basis": basis,
    }
    msg = (
        f"{ev['ratio']:.2f}× slower than {best['variant']}, the best for this case "
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


def _rejections(why: dict[str, Any], chosen: str | None) -> list[str]:
    out = []
    for c in why.get("checks") or []:
        if c["backend"] == chosen:
            break
        if not c.get("usable"):
            out.append(f"{c['backend']}: {'; '.join(c.get('reasons') or ['rejected (torch gave no reason)'])}")
    return out


def _tied_with(r: dict[str, Any], other: str, peers: list[dict[str, Any]]) -> bool:
    """Whether ``r`` and the variant named ``other`` are tied (overlapping quartiles or the same kernels)."""
    o = next((p for p in peers if p["variant"] == other), None)
    mine, theirs = timing_of(r), (timing_of(o) if o else None)
    if o is None or mine is None or theirs is None:
        return False
    return tied((r, *mine), (o, *theirs))


def _fastest_forced(r: dict[str, Any], peers: list[dict[str, Any]]) -> tuple[str, float] | None:
    forced = [
        p
        for p in peers
        if p.get("family") == "sdpa"
        and p.get("backend")  # a forced backend, declared by the variant (not read from its name)
        and case_key(p) == case_key(r)
        and case_key(r) is not None
    ]
    rows = ranked(forced)
    return (rows[0][0]["variant"], rows[0][1]) if rows else None


def sdpa_choice(r: dict[str, Any], peers: list[dict[str, Any]]) -> list[Insight] | NotChecked:
    if r["variant"] != "sdpa_default":
        return []
    backend, seen_in = ran_backend(r)
    why = r.get("sdpa_why")
    ev: dict[str, Any] = {"ran": backend, "seen_in": seen_in}
    msg = f"default SDPA ran the {backend} backend (seen in {short(seen_in or '?', 60)})"
    sev: Severity = "info"
    if why:
        order = why.get("order") or []
        rejected = _rejections(why, backend)
        ev.update(order=order, rejected=rejected, predicted=why.get("chosen"))
        msg += f"; torch's order here: {', '.join(order)}"
        if rejected:
            msg += "; rejected first: " + " | ".join(rejected)
        if why.get("chosen") and backend and why["chosen"] != backend:
            msg += f"; torch's checks predicted {why['chosen']}, yet {backend} ran"
            sev = "warning"
        pred = why.get("prediction") or {}
        if pred.get("order"):
            ev.update(version_order=pred["order"], version_rule=pred.get("why"), version_predicted=pred.get("chosen"))
            if order and pred["order"] != order:
                msg += f"; the version rule ({pred.get('why')}) gave the order {', '.join(pred['order'])}"
                sev = "warning"
            if pred.get("chosen") and backend and pred["chosen"] != backend:
                msg += f"; by the version rule {pred['chosen']} runs, yet {backend} ran"
                sev = "warning"
    fastest = _fastest_forced(r, peers)
    forced = next((p.get("backend") for p in peers if fastest and p["variant"] == fastest[0]), None)
    mine = timing_of(r)
    if fastest and mine and fastest[1] * SLOWER_MIN_RATIO < mine[0] and not _tied_with(r, fastest[0], peers):
        ev.update(
            fastest_forced=fastest[0],
            fastest_forced_us=r1(fastest[1]),
            default_us=r1(mine[0]),
            default_over_fastest=round(mine[0] / fastest[1], 2),
        )
        msg += (
            f"; but {fastest[0]} was {ev['default_over_fastest']:.2f}× faster here "
            f"({ev['fastest_forced_us']:,.1f} µs vs {ev['default_us']:,.1f} µs, {mine[2]})"
        )
        other = next((p for p in peers if p["variant"] == fastest[0]), None)
        ev["one_sample"] = one_sample(mine[1]) or one_sample((other or {}).get("gpu_time"))
        sev = "info" if ev["one_sample"] else "warning"
    out: list[Insight] = [
        Insight(
            id="sdpa_choice",
            variant=r["variant"],
            severity=sev,
            message=msg,  # type: ignore[arg-type]
            advice=_choice_advice(r, ev, forced),
            evidence=ev,
            kernels=(seen_in,) if seen_in and seen_in != "aten op" else (),
        )
    ]
    return out


def _choice_advice(r: dict[str, Any], ev: dict[str, Any], forced: str | None = None) -> str:
    """Pin a backend only where no mask is hidden in the call: a mask that keeps every key is the plain call,
    and a pinned backend that cannot take it (cuDNN, math under a CausalBias) materialises it."""
    from attnscope.analysis.equivalent import equivalent_case

    same = equivalent_case(r.get("case"))
    if same is not None:
        ev["equivalent_case"] = same
        return (
            f"pass no mask: {same['why']}; SDPA then runs its fused choice with nothing to build, where pinning a "
            "backend that cannot take the mask would materialise it"
        )
    if "fastest_forced" in ev:
        return f"force {ev['fastest_forced']} with {pin_call(forced)} for this shape" + (
            f"; {ONE_SAMPLE_NOTE}" if ev.get("one_sample") else ""
        )
    return pin_advice(ev.get("ran"), (r.get("sdpa_why") or {}).get("set_priority"))


SDP_BACKEND = {
    "flash": "FLASH_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
    "math": "MATH",
}


def pin_call(backend: str | None) -> str:
    """``sdpa_kernel`` with one backend: a single backend pins it on every torch version."""
    name = SDP_BACKEND.get(backend or "")
    return f"torch.nn.attention.sdpa_kernel(SDPBackend.{name})" if name else "torch.nn.attention.sdpa_kernel(...)"


def pin_advice(backend: str | None, set_priority: bool | None) -> str:
    """How to pin the backend that ran: name that one backend; a list is an allow-set whose order torch ignores,
    unless the installed torch takes set_priority=True (read from its signature when the run was measured)."""
    name = SDP_BACKEND.get(backend or "")
    text = f"to pin this choice across torch versions, wrap the call in {pin_call(backend)}"
    if name is None:
        return text
    if set_priority:
        return (
            text + ": one backend; to keep fallbacks in your order, sdpa_kernel([SDPBackend."
            f"{name}, SDPBackend.MATH], set_priority=True) (without set_priority a list only allows, torch's own "
            "order still picks)"
        )
    if set_priority is False:
        return text + (
            ": one backend (this torch's sdpa_kernel has no set_priority, so a list only allows: torch's own "
            "order still picks)"
        )
    return text + ": one backend (a list only allows unless set_priority=True where torch has it)"


def builtin_mask_faster(r: dict[str, Any], peers: list[dict[str, Any]]) -> list[Insight]:
    """A user's mask_mod slower, beyond the noise, than the built-in it equals (attnscope.analysis.rules.user_mods)."""
    from attnscope.analysis.rules import user_mods

    mods = user_mods.user_mods_of(r)
    peer = user_mods.builtin_peer(r, peers) if mods and mods.get("mask_mod") else None
    mine, theirs = timing_of(r), timing_of(peer) if peer else None
    if peer is None or mine is None or theirs is None or theirs[0] >= mine[0] or overlaps(mine[1], theirs[1]):
        return []
    return user_mods.builtin_mask_faster(r, peer, mine, theirs)


def explain_results(results: list[dict[str, Any]]) -> list[tuple[list[Insight], list[NotChecked]]]:
    """Insights and not-checked rules for each result, in order (skipped rows get none)."""
    out = []
    keys = [case_key(r) for r in results]
    groups: dict[Any, list[dict[str, Any]]] = {}
    for r, k in zip(results, keys, strict=True):
        groups.setdefault(k, []).append(r)
    recs: dict[Any, dict[str, Any]] = {}  # the recommendation of each case, worked out once
    for r, k in zip(results, keys, strict=True):
        found, missing = result_insights(r)
        if r.get("status") == "ok":
            peers = groups[k]
            if k is not None and k not in recs:
                recs[k] = recommend(peers)
            for res in (
                slower_than_best(r, peers, recs.get(k)),
                sdpa_choice(r, peers),
                builtin_mask_faster(r, peers),
            ):
                if isinstance(res, NotChecked):
                    missing.append(res)
                else:
                    found.extend(res)
            if r["variant"] == "sdpa_default" and not r.get("sdpa_why"):
                missing.append(
                    NotChecked(
                        "sdpa_why",
                        "why the other backends were rejected needs torch's checks "
                        "on the inputs, which a trace does not hold",
                    )
                )
        order = {"error": 0, "warning": 1, "info": 2}
        found.sort(key=lambda i: order[i.severity])
        out.append((found, missing))
    return out
