"""``sdpa_choice``: SDPA's default choice explained (torch's order, what it rejected first) and set against the
fastest forced backend of the case; ``sdpa_why``: why that explanation is missing.  Pure."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.equivalent import equivalent_case
from attnscope.analysis.rules.insights import Out, r1, short
from attnscope.analysis.rules.peers import SLOWER_MIN_RATIO, Peers, case_key, ranked, timing_of
from attnscope.analysis.rules.ties import ONE_SAMPLE_NOTE, one_sample, ran_backend, tied
from attnscope.core.types import Insight, NotChecked, Severity


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


def sdpa_choice(r: dict[str, Any], case: Peers) -> Out:
    if r["variant"] != "sdpa_default":
        return []
    peers = case.results
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
    return [
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


def _choice_advice(r: dict[str, Any], ev: dict[str, Any], forced: str | None = None) -> str:
    """Pin a backend only where no mask is hidden in the call: a mask that keeps every key is the plain call,
    and a pinned backend that cannot take it (cuDNN, math under a CausalBias) materialises it."""
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
    """``sdpa_kernel`` with one backend: a single backend pins it on every torch version.  The module is named
    after the call, so that no word of the advice is wider than a narrow terminal."""
    name = SDP_BACKEND.get(backend or "")
    return f"sdpa_kernel(SDPBackend.{name}) (torch.nn.attention)" if name else "torch.nn.attention.sdpa_kernel(...)"


def pin_advice(backend: str | None, set_priority: bool | None) -> str:
    """How to pin the backend that ran: name that one backend; a list is an allow-set whose order torch ignores,
    unless the installed torch takes set_priority=True (read from its signature when the run was measured)."""
    name = SDP_BACKEND.get(backend or "")
    text = f"to pin this choice on every torch version, wrap the call in {pin_call(backend)}"
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
    return text + ": one backend (a list only allows, unless set_priority=True)"


def sdpa_why(r: dict[str, Any], case: Peers) -> Out:
    """sdpa_default's rejected backends need torch's checks on the inputs: say so where the row lacks them."""
    if r["variant"] != "sdpa_default" or r.get("sdpa_why"):
        return []
    return NotChecked(
        "sdpa_why",
        "why the other backends were rejected needs torch's checks on the inputs, which a trace does not hold",
    )
