"""Insights about a mask built densely on every call, and what to pass instead.  Pure.

Split from :mod:`attnscope.analysis.rules.insights` (shared helpers live there).
"""

from __future__ import annotations

from typing import Any

from attnscope.analysis.fingerprint.eager_attention import holds_attention
from attnscope.analysis.rules.insights import (
    BACKEND_NAMES,
    Out,
    _share_text,
    fused_names,
    on_gpu,
    r1,
    share_pct,
)
from attnscope.analysis.rules.row_kernels import compute_kernels
from attnscope.core.types import Insight


def mask_rebuilt(r: dict[str, Any]) -> Out:
    if not r.get("mask_rebuilt") or not holds_attention(r):  # a tril where no attention runs masks no attention
        return []
    taken = [b for b in r.get("mask_builds") or [] if b.get("taken_by") and b.get("mask")]
    if taken:
        return _mask_build_insights(r, taken)
    ops = list(r.get("mask_ops") or [])
    ks = [
        k
        for k in compute_kernels(r)
        if k.get("launched_by") in ops
        or "triu_tril" in k["name"]
        or (r.get("device_kind") == "cpu" and k["name"] in ops)
    ]
    us = sum(k["duration_us"] for k in ks)
    ev: dict[str, Any] = {"mask_ops": ops, "num_mask_kernels": len(ks), "mask_us": r1(us)}
    case = r.get("case") or {}
    # the case's own mask where it has one (a band: tril and triu); a case of no mask ("none") whose code still
    # ran a tril built the causal mask a tril builds
    named = case.get("mask")
    mask = named if named and named != "none" else None
    what = f"the {mask} mask" if mask and not mask.startswith("causal") else "the causal mask"
    msg = f"{what} is rebuilt on every call by {', '.join(ops)} ({len(ks)} kernel(s)"
    if on_gpu(r):
        ev["mask_share_pct"] = share_pct(us, r)
        msg += f", {_share_text(ev['mask_us'], ev['mask_share_pct'])}"
    msg += ")"
    # A document without the build's context (older, or a CPU trace): the advice goes by the case's mask and
    # the backend, never by what the call may have been passed.
    math = r.get("sdpa_backend") == "math"
    sq, sk = case.get("seq_q"), case.get("seq_kv") or case.get("seq_q")
    if mask == "causal_lower_right" and sq and sk and sq != sk:
        advice = _mask_advice(
            r,
            {"mask": mask, "backend": r.get("sdpa_backend"), "dims": [sq, sk], "built_inside": None},
        )
    elif mask not in (None, "causal", "causal@top_left"):
        advice = (
            f"the {mask} mask is built as a full tensor on every call: build it once and reuse it, or use a kernel "
            "that takes the mask's own form (see dense_mask)"
        )
    elif math:
        advice = (
            f"SDPA's math backend masks with a full tensor, built on every call; a fused backend ({fused_names(r)}) "
            "masks inside the kernel"
        )
    else:
        advice = (
            f"pass is_causal=True to a fused SDPA backend ({fused_names(r)}), which masks inside the kernel; "
            "or build the mask once outside the call and reuse it"
        )
    ev["inside_sdpa"] = math
    return [
        Insight(
            id="mask_rebuilt",
            variant=r["variant"],
            severity="info",
            message=msg,
            advice=advice,
            evidence=ev,
            kernels=tuple(k["name"] for k in ks),
            ops=tuple(ops),
        )
    ]


def _mask_build_insights(r: dict[str, Any], builds: list[dict[str, Any]]) -> list[Insight]:
    """One insight per kind of build the trace shows (a model repeats it per layer), told from its context:
    who built the mask, inside or before which call, what that call was passed, which backend ran."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for b in builds:
        key = (b["mask"], b["built_inside"], b["taken_by"], b.get("backend"), b.get("is_causal"), tuple(b["dims"]))
        groups.setdefault(key, []).append(b)
    out = []
    for (mask, inside, taker, backend, is_causal, dims), bs in groups.items():
        b = bs[0]
        ops = list(dict.fromkeys([*b["built_by"], *b.get("converted_by", [])]))
        ev: dict[str, Any] = {
            "mask": mask,
            "dims": list(dims),
            "diagonal": b["diagonal"],
            "built_inside": inside,
            "taken_by": taker,
            "linked_by": b.get("linked_by"),
            "backend": backend,
            "is_causal_passed": is_causal,
            "mask_ops": ops,
            "num_builds": len(bs),
        }
        size = "×".join(str(d) for d in dims)
        per = "" if len(bs) == 1 else f" ({len(bs)} calls)"
        build = " + ".join(
            f"{o}(diagonal={b['diagonal']})" if o.endswith(("tril", "triu")) else o for o in b["built_by"]
        )
        conv = f", then {', '.join(b['converted_by'])} makes it additive" if b.get("converted_by") else ""
        on = f" for the {BACKEND_NAMES.get(backend, backend)} backend" if backend else ""
        if inside is not None:
            msg = f"the {mask} mask ({size}) is built inside {inside} on every call{per}: {build}{conv}{on}"
        else:
            msg = (
                f"a {mask} mask ({size}) is materialised on every call{per}: {build} before {taker}, which takes it "
                f"as attn_mask (linked by {b.get('linked_by')}){conv}{on}"
            )
        kernels: tuple[str, ...] = ()
        if all(x.get("num_kernels") is not None for x in bs):
            us = sum(x["kernel_us"] for x in bs)
            ev.update(num_mask_kernels=sum(x["num_kernels"] for x in bs), mask_us=r1(us))
            ev["mask_share_pct"] = share_pct(us, r)
            msg += f" ({ev['num_mask_kernels']} kernel(s), {_share_text(ev['mask_us'], ev['mask_share_pct'])})"
            kernels = tuple(dict.fromkeys(k for x in bs for k in x.get("kernels") or []))
        out.append(
            Insight(
                id="mask_rebuilt",
                variant=r["variant"],
                severity="info",
                message=msg,
                advice=_mask_advice(r, ev),
                evidence=ev,
                kernels=kernels,
                ops=tuple(ops),
            )
        )
    return out


def _mask_advice(r: dict[str, Any], ev: dict[str, Any]) -> str:
    """What fits the build's context: never a flag the call already passes."""
    mask, dims = ev["mask"], ev["dims"]
    backend = BACKEND_NAMES.get(ev["backend"], ev["backend"]) if ev["backend"] else "chosen"
    if ev["built_inside"] is not None:
        if ev.get("is_causal_passed"):
            return (
                f"is_causal=True is already passed; the {backend} backend expands it into a full mask on every call, "
                f"while a fused backend ({fused_names(r)}) masks inside the kernel"
            )
        return (
            f"the mask is built inside {ev['built_inside']}; a fused backend ({fused_names(r)}) masks inside the kernel"
        )
    if mask == "causal_lower_right":
        sq, sk = dims[-2], dims[-1]
        if ev["backend"] in ("flash", "efficient"):  # it took the mask in the kernel: the build is not its fallback
            text = (
                f"SDPA ran {backend}, which applies the lower-right mask inside the kernel: this dense build is not "
                "torch's causal_lower_right fallback, the calling code made it; drop it and pass the CausalBias"
            )
        else:
            ran = f" (here SDPA ran {backend})" if ev["backend"] else ""  # no backend recorded: no SDPA to name
            text = (
                "a lower-right causal mask built densely is what torch.nn.attention.bias.causal_lower_right falls back "
                f"to when neither flash nor efficient can take the call{ran}; flash (is_causal=True at "
                "its own op) and efficient (custom_mask_type 2) apply the lower-right mask inside the kernel, with "
                "nothing to build"
            )
        if sq == 1:
            text += (
                f"; and here the mask hides nothing (one query, lower-right: it sees all {sk} keys): pass no mask "
                "(attn_mask=None, is_causal=False)"
            )
        return text
    # a top-left (or square) causal mask passed as a tensor, without is_causal
    return (
        f"pass is_causal=True instead of the dense mask: SDPA's is_causal is this top-left mask, and a fused backend "
        f"({fused_names(r)}) applies it inside the kernel with nothing to build"
    )
