"""Insights that compare variants of one case, and SDPA's default choice explained.  Pure.

Results are compared only when they carry the same case: ``analyze`` results whose shape the
trace does not tell (case unknown) are never ranked against each other.  A trace holds one call:
its time is one sample, whose noise is unknown, and every comparison built on it says so.
"""

from __future__ import annotations

import json
from typing import Any

from attnscope.analysis.fingerprint.kernels import attention_family
from attnscope.analysis.rules.execution import result_insights
from attnscope.analysis.rules.insights import compute_kernels, is_fused, materialises_scores, r1, short
from attnscope.core.types import Insight, NotChecked, Severity

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


def one_sample(t: dict[str, Any] | None) -> bool:
    """A timing of one sample (a trace holds one call): its noise is not known."""
    return bool(t) and t.get("num_samples") == 1  # type: ignore[union-attr]


ONE_SAMPLE_NOTE = "one traced call each, so the noise is not known: confirm with attnscope run before acting on it"


def overlaps(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two timings' interquartile ranges overlap: a difference inside the noise."""
    if not a or not b:
        return False
    return a["p75_us"] >= b["p25_us"] and b["p75_us"] >= a["p25_us"]


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


Row = tuple[dict[str, Any], float, dict[str, Any] | None, str]


def same_kernels(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two variants that launched the same compute kernels (e.g. sdpa_default picking cuDNN and sdpa_cudnn)."""

    def names(r: dict[str, Any]) -> set[str]:
        return {k["name"] for k in compute_kernels(r)}

    return bool(names(a)) and names(a) == names(b)


def tied(a: Row, b: Row) -> bool:
    """Inside the noise (quartiles overlap), or the same kernels: the gap is run-to-run variation."""
    return overlaps(a[2], b[2]) or same_kernels(a[0], b[0])


# A tie is never resolved in favour of a variant whose median is more than this many times another's at the
# point: quartiles that overlap across such a gap say the timings were disturbed, not that the two are equal.
MAX_TIE_RATIO = 1.5
UNRESOLVED_ADVICE = "measure again on a quiet machine"


def choose_best(rows: list[Row]) -> tuple[Row, Row | None]:
    """(the variant to recommend, the faster one it was preferred to, if any).

    A variant that writes the score matrix out is recommended only when every fused variant is
    slower beyond the noise: when a fused one is tied with it, the fused one is the advice (same
    speed, O(S·D) memory instead of O(S²)).  Where that tie spans over ``MAX_TIE_RATIO``× in median,
    :func:`unresolved_tie` says so: the sweep names no best there.
    """
    fastest = rows[0]
    if not materialises_scores(fastest[0]):
        return fastest, None
    for row in rows[1:]:
        if is_fused(row[0]) and tied(fastest, row):
            return row, fastest
    return fastest, None


def unresolved_tie(rows: list[Row]) -> tuple[Row, Row] | None:
    """(the fastest row, the slowest row whose quartiles overlap it) when their medians are more than
    ``MAX_TIE_RATIO``× apart: such a point has no trustworthy best.  Variants that ran the fastest's kernels
    are left out (one implementation: the best is already the faster of them).  ``rows``: fastest first."""
    if not rows or rows[0][1] <= 0:
        return None
    fastest = rows[0]
    slow = [
        r
        for r in rows[1:]
        if r[1] > MAX_TIE_RATIO * fastest[1] and overlaps(fastest[2], r[2]) and not same_kernels(fastest[0], r[0])
    ]
    if not slow:
        return None
    return fastest, max(slow, key=lambda r: r[1])


def slower_than_best(r: dict[str, Any], peers: list[dict[str, Any]]) -> list[Insight] | NotChecked:
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
    rows = ranked(peers)
    mine = timing_of(r) if r.get("numerics_ok") is not False else None  # a wrong result is not "slow"
    if not rows or mine is None:
        return []
    un = unresolved_tie(rows)
    if un:  # the recommendation names no best here: no "use X" either
        return NotChecked(
            "slower_than_best",
            f"no best at this case: {un[1][0]['variant']}'s quartiles overlap {un[0][0]['variant']}'s although its "
            f"median is {un[1][1] / un[0][1]:.1f}× slower; {UNRESOLVED_ADVICE}",
        )
    (best, best_us, best_t, basis), _ = choose_best(rows)  # the recommendation's own choice
    if best["variant"] == r["variant"]:
        return []
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


def ran_backend(r: dict[str, Any]) -> tuple[str | None, str | None]:
    """(backend, evidence): from the attention kernel's name, else from the aten op."""
    for k in compute_kernels(r):
        if k["category"] == "attention":
            fam = attention_family(k["name"])
            if fam:
                return fam, k["name"]
    return r.get("sdpa_backend"), "aten op" if r.get("sdpa_backend") else None


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
    fastest = _fastest_forced(r, peers)
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
            advice=_choice_advice(r, ev),
            evidence=ev,
            kernels=(seen_in,) if seen_in and seen_in != "aten op" else (),
        )
    ]
    return out


def _choice_advice(r: dict[str, Any], ev: dict[str, Any]) -> str:
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
        return f"force {ev['fastest_forced']} with torch.nn.attention.sdpa_kernel(...) for this shape" + (
            f"; {ONE_SAMPLE_NOTE}" if ev.get("one_sample") else ""
        )
    return "to pin this choice across torch versions, wrap the call in torch.nn.attention.sdpa_kernel(...)"


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
    for r in results:
        found, missing = result_insights(r)
        if r.get("status") == "ok":
            peers = [p for p in results if case_key(p) == case_key(r)]
            for rule in (slower_than_best, sdpa_choice, builtin_mask_faster):
                res = rule(r, peers)
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
