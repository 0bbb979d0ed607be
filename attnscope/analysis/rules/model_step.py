"""The model's rules: insights on one implementation's profiled step (repeat_kv copies, upcasts, the mask,
layout copies, attention's share, a host-bound step) and on one trace's split.  Pure: the rows' dicts in, dicts out.

Each rule takes a row and its :class:`Step`: the other implementations measured at the same point, those that
failed there, and the row the one recommender named best (the caller,
:func:`attnscope.analysis.recommend.model_points.annotate_rows`, asks it once per point).

Every number in a message is in the insight's ``evidence`` (units in the keys).  Step-time
comparisons use the measured medians (``step_time``); shares and parts come from the one profiled
step's split (``attention``), whose method each row states.  Which implementation is best is the one
recommender's (:mod:`attnscope.analysis.recommend.model_points` asks it); these rules only explain.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from attnscope.analysis.rules.ties import MAX_TIE_RATIO, UNRESOLVED_ADVICE, disturbed, overlaps
from attnscope.core.units import fmt_bytes

MIB = 1024 * 1024
FUSED = ("sdpa", "flex_attention", "flash_attention_2")


@dataclass(frozen=True)
class Step:
    """A row's point: ``others`` (the other ok rows, fastest first), ``failed`` (rows skipped, errored or out of
    memory) and ``best`` (the row the one recommender named best; None where none was asked, as for one trace)."""

    others: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    best: dict[str, Any] | None = None


ALONE = Step()  # one trace's split: no other implementation, no timings


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 1) if whole > 0 else 0.0


def _insight(id_: str, severity: str, message: str, advice: str, **evidence: Any) -> dict[str, Any]:
    return {"id": id_, "severity": severity, "message": message, "advice": advice, "evidence": evidence}


def _forward_copies(row: dict[str, Any], part: str) -> list[dict[str, Any]]:
    return [c for c in (row.get("attention") or {}).get("hidden_copies", []) if c["part"] == part and not c["backward"]]


def repeat_kv(row: dict[str, Any], step: Step = ALONE) -> dict[str, Any] | None:
    others, failed = step.others, step.failed
    copies = _forward_copies(row, "repeat_kv")
    if not copies:
        return None
    per_layer: dict[str, list[int]] = defaultdict(list)
    for c in copies:
        per_layer[str(c["layer"])].append(int(c["bytes"]))
    n_layers = len(per_layer)
    counts = sorted({len(v) for v in per_layer.values()})
    one = max(c["bytes"] for c in copies)
    total = sum(c["bytes"] for c in copies)
    attn = row["attention"]
    t_us = attn["parts"]["repeat_kv"]
    n = counts[-1]
    plural = "s" if n_layers > 1 else ""
    msg = (
        f"{row['impl']} repeat_kv copies K and V to every query head: {n}×{fmt_bytes(one)} per layer per "
        f"{row['mode']} step ({len(copies)} copies in {n_layers} layer{plural}, {fmt_bytes(total)} in all, "
        f"{t_us:,.1f} µs in repeat_kv, "
        f"{_pct(t_us, row['breakdown']['total_us'])}% of the profiled step)"
    )
    clean = [o["impl"] for o in others if o.get("attention") and not _forward_copies(o, "repeat_kv")]
    sdpa_failed = next((f for f in failed or [] if f["impl"] == "sdpa"), None)
    sdpa_copies = any(o["impl"] == "sdpa" and o.get("attention") and _forward_copies(o, "repeat_kv") for o in others)
    if row["impl"] == "eager" and sdpa_copies:
        advice = (
            "sdpa repeated K and V too in this run (this transformers did not pass enable_gqa to torch's SDPA here); "
            "an sdpa path that passes enable_gqa=True keeps K and V at their KV heads"
        )
        if clean:
            advice += f"; {', '.join(clean)} made no repeat_kv copy in this run"
    elif row["impl"] == "eager" and sdpa_failed is not None:
        advice = (
            f"sdpa with enable_gqa would avoid it, but sdpa did not run for this model here ({sdpa_failed['status']}: "
            "see its row)"
        )
        if clean:
            advice += f"; {', '.join(clean)} made no repeat_kv copy in this run"
    elif row["impl"] == "eager":
        advice = (
            "sdpa with enable_gqa avoids it: transformers' sdpa path passes enable_gqa=True to torch's SDPA when no "
            "attention mask is needed, so K and V stay at their KV heads"
        )
        if clean:
            advice += f" (seen in this run: {', '.join(clean)} made no repeat_kv copy)"
    else:
        advice = (
            f"transformers' {row['impl']} path repeated K and V here instead of passing enable_gqa=True to torch's "
            "attention (recent transformers pass it to SDPA only when no attention mask is needed: padding or a "
            "custom mask brings the copy back)"
        )
        if clean:
            advice += f"; {', '.join(clean)} made no repeat_kv copy in this run"
    if row["mode"] == "decode":
        advice += "; in decode the copy covers the whole KV cache on every generated token"
    return _insight(
        "repeat_kv_copy",
        "warning",
        msg,
        advice,
        copies_per_layer=n,
        bytes_per_copy=one,
        num_copies=len(copies),
        num_layers=n_layers,
        bytes_total=total,
        repeat_kv_us=t_us,
        step_total_us=row["breakdown"]["total_us"],
    )


def upcasts(row: dict[str, Any], step: Step = ALONE) -> dict[str, Any] | None:
    ups = (row.get("attention") or {}).get("upcasts", [])
    if not ups:
        return None
    total = sum(u["bytes"] for u in ups)
    # the breakdown's own figure (its 'upcasts' part), so both quote one number; the listed casts are a subset
    part = ((row.get("attention") or {}).get("parts") or {}).get("upcasts")
    t_us = part if part is not None else sum(u.get("duration_us") or 0.0 for u in ups)
    ops = sorted({u["op"] for u in ups})
    msg = (
        f"{len(ups)} bf16/fp16→fp32 upcast(s) inside attention ({', '.join(ops)}), {fmt_bytes(total)} written in fp32, "
        f"{t_us:,.1f} µs in the copies"
    )
    if row["impl"] == "eager":
        advice = (
            "eager attention runs its softmax in fp32 by design (transformers' eager_attention_forward); "
            "sdpa and flex_attention keep the scores inside one fused kernel instead of an fp32 tensor"
        )
    else:
        advice = (
            f"these casts run inside {row['impl']}'s own code path, not yours; compare its kernel time with eager's"
        )
    return _insight(
        "attention_upcast",
        "warning",
        msg,
        advice,
        num_upcasts=len(ups),
        bytes_fp32=total,
        upcast_us=round(t_us, 3),
        ops=ops,
    )


def mask(row: dict[str, Any], step: Step = ALONE) -> dict[str, Any] | None:
    attn = row.get("attention") or {}
    t_us = attn.get("parts", {}).get("mask", 0.0)
    if t_us <= 0:
        return None
    total = row["breakdown"]["total_us"]
    msg = f"the attention mask is built on every forward: {t_us:,.1f} µs, {_pct(t_us, total)}% of the profiled step"
    cmp = [
        f"{o['impl']} {o['attention']['parts']['mask']:,.1f} µs" for o in step.others if o.get("attention") is not None
    ]
    advice = "transformers builds it once per forward and shares it across layers"
    if cmp:
        advice += f"; the other implementations in this run spent: {', '.join(cmp)}"
    return _insight("mask_built", "info", msg, advice, mask_us=t_us, step_total_us=total)


def layout_copies(row: dict[str, Any], step: Step = ALONE) -> dict[str, Any] | None:
    attn = row.get("attention") or {}
    # repeat_kv has its own insight; copies while building the mask are mask building
    copies = [c for c in attn.get("hidden_copies", []) if c["part"] not in ("repeat_kv", "mask") and not c["backward"]]
    if not copies:
        return None
    total = sum(c["bytes"] for c in copies)
    ops = sorted({c["op"] for c in copies})
    msg = (
        f"{len(copies)} other full-tensor copies inside attention's forward ({', '.join(ops)}), "
        f"{fmt_bytes(total)} in all"
    )
    advice = (
        "they are in transformers' attention code (transposes made contiguous, layouts a matmul wants), "
        "not in yours: weigh them with the 'copies' part of the split"
    )
    return _insight("attention_copies", "info", msg, advice, num_copies=len(copies), bytes_total=total, ops=ops)


def share(row: dict[str, Any], step: Step = ALONE) -> dict[str, Any] | None:
    """Attention's share of the step, and what switching to the recommended implementation saves."""
    attn, best = row.get("attention"), step.best
    if not attn:
        return None
    # the profiled step whose parts add up to it, as the table shows it (GPU time alone where a row has no step)
    total = ((row["breakdown"].get("step") or {}).get("step_us")) or row["breakdown"]["total_us"]
    pct = _pct(attn["time_us"], total)
    msg = (
        f"attention is {pct}% of the {row['mode']} step ({attn['time_us']:,.1f} of {total:,.1f} {_of_what(row)}): "
        f"kernel {_pct(attn['kernel_us'], total)}%, projections {_pct(attn['projections_us'], total)}%, "
        f"work around it {_pct(attn['around_us'], total)}%"
    )
    ev: dict[str, Any] = {
        "attention_us": attn["time_us"],
        "kernel_us": attn["kernel_us"],
        "projections_us": attn["projections_us"],
        "around_us": attn["around_us"],
        "step_total_us": total,
    }
    if best is None or best is row:
        advice = f"the fastest implementation measured for {row['mode']}"
        if pct < 20:
            advice += f"; attention is {pct}% of the step, so the rest (see the split) is where time goes"
        wide = _disturbed_by(row, step.others)
        if wide is not None:  # the point is unresolved (the recommendation's reading of the same quartiles)
            ev.update(step_us=row["step_time"]["median_us"], unresolved_with=wide[0], median_ratio=wide[1])
            advice += (
                f"; but unresolved: {wide[0]}'s interquartile range overlaps this one although its median is "
                f"{wide[1]:.1f}× slower (over {MAX_TIE_RATIO:g}×): the timings were disturbed, so no implementation "
                f"is named best; {UNRESOLVED_ADVICE}"
            )
        return _insight("attention_share", "info", msg, advice, **ev)
    mine, theirs = row["step_time"], best["step_time"]
    saved = mine["median_us"] - theirs["median_us"]
    ev.update(step_us=mine["median_us"], best_step_us=theirs["median_us"], saved_us=round(saved, 3))
    if disturbed(mine["median_us"], theirs["median_us"], mine, theirs):
        # quartiles that overlap across over MAX_TIE_RATIO× in median: the recommendation calls the point
        # unresolved, so this is no tie ("within the noise") and no saving either
        ratio = max(mine["median_us"], theirs["median_us"]) / min(mine["median_us"], theirs["median_us"])
        slower = row["impl"] if mine["median_us"] > theirs["median_us"] else best["impl"]
        ev.update(median_ratio=round(ratio, 4))
        advice = (
            f"unresolved against {best['impl']}: their interquartile ranges overlap although {slower}'s median is "
            f"{ratio:.1f}× slower (over {MAX_TIE_RATIO:g}×): the timings were disturbed, so they are neither tied "
            f"nor told apart; {UNRESOLVED_ADVICE}"
        )
        return _insight("attention_share", "info", msg, advice, **ev)
    if overlaps(mine, theirs):
        advice = f"{best['impl']} is within the noise of it for {row['mode']} (interquartile ranges overlap)"
        return _insight("attention_share", "info", msg, advice, **ev)
    noise = ((mine["p75_us"] - mine["p25_us"]) + (theirs["p75_us"] - theirs["p25_us"])) / 2
    advice = (
        f"switching {row['impl']} → {best['impl']} saves {saved / 1000:,.2f} ms per step "
        f"({_pct(saved, mine['median_us'])}% of {mine['median_us'] / 1000:,.2f} ms, measured step medians, "
        f"± {noise / 1000:,.2f} ms: half the sum of their interquartile ranges)"
    )
    where = part_differences(row, best)
    if where:
        advice += f"; in the profiled steps it comes from {where}"
    ev.update(noise_us=round(noise, 3))
    if mine.get("noisy") or theirs.get("noisy"):
        advice += "; one of the two timings is noisy (IQR/median > 10%): confirm with a larger --budget"
    return _insight("attention_share", "warning", msg, advice, **ev)


def _disturbed_by(row: dict[str, Any], others: list[dict[str, Any]]) -> tuple[str, float] | None:
    """(the slowest other implementation whose quartiles overlap ``row``'s across over ``MAX_TIE_RATIO``× in
    median, that ratio) where ``row`` is the faster; None where there is none."""
    mine = row.get("step_time") or {}
    if not mine.get("median_us"):
        return None
    wide = [
        o
        for o in others
        if (t := o.get("step_time"))
        and t["median_us"] >= mine["median_us"]
        and disturbed(mine["median_us"], t["median_us"], mine, t)
    ]
    if not wide:
        return None
    o = max(wide, key=lambda x: x["step_time"]["median_us"])
    return o["impl"], round(o["step_time"]["median_us"] / mine["median_us"], 4)


def _step_parts(row: dict[str, Any]) -> dict[str, float]:
    """The parts of a row's profiled step that add up to it (attnscope.analysis.fingerprint.model_split)."""
    a, rest = row.get("attention") or {}, row.get("rest") or {}
    st = (row.get("breakdown") or {}).get("step") or {}
    parts = {
        "attention kernel": a.get("kernel_us") or 0.0,
        "projections": a.get("projections_us") or 0.0,
        "work around attention": a.get("around_us") or 0.0,
        "GPU idle": st.get("gpu_idle_us") or 0.0,
        "CPU-only time": st.get("cpu_only_us") or 0.0,
        "unattributed": (row.get("breakdown") or {}).get("unattributed_us") or 0.0,
    }
    parts.update({k: v for k, v in (rest.get("parts") or {}).items() if k != "other"})
    parts["other"] = (rest.get("parts") or {}).get("other") or 0.0
    return parts


def part_differences(row: dict[str, Any], best: dict[str, Any], top: int = 3) -> str:
    """The parts that shrink most from ``row``'s profiled step to ``best``'s: where a saving comes from."""
    mine, theirs = _step_parts(row), _step_parts(best)
    diff = sorted(((mine[k] - theirs.get(k, 0.0), k) for k in mine), reverse=True)
    return ", ".join(f"{k} {d / 1000:,.2f} ms" for d, k in diff[:top] if d > 0)


def profile_mismatch(row: dict[str, Any], step: Step = ALONE) -> dict[str, Any] | None:
    """The profiled step far from the timed one: its µs were scaled to the timed step (model_split.fit_to_timed)."""
    p = (row.get("breakdown") or {}).get("profile") or {}
    if not p.get("scaled"):
        return None
    ratio = p["profiled_over_timed"]
    msg = (
        f"the {row['mode']} step took {p['profiled_step_us']:,.1f} µs under the profiler, {ratio:.2f}× the timed "
        f"median ({p['timed_step_us']:,.1f} µs): the split's µs are the profiled step's shares of the timed median"
    )
    advice = (
        "read the split as shares: the profiler's cost is per op, so parts made of many small ops (rotary, norms, "
        "masks) keep too large a share; the step medians, not the split, compare implementations"
    )
    return _insight(
        "profile_mismatch",
        "warning",
        msg,
        advice,
        profiled_step_us=p["profiled_step_us"],
        timed_step_us=p["timed_step_us"],
        profiled_over_timed=ratio,
    )


def _of_what(row: dict[str, Any]) -> str:
    """What the split's µs are: profiled, or scaled to the timed step's median."""
    scaled = ((row.get("breakdown") or {}).get("profile") or {}).get("scaled")
    return "µs, the profiled step's shares of the timed median" if scaled else "µs profiled"


def host_bound(row: dict[str, Any], step: Step = ALONE) -> dict[str, Any] | None:
    wall, gpu = row.get("wall_time"), row.get("step_time")
    if not wall or not gpu or wall is gpu or wall.get("method") == gpu.get("method"):
        return None
    if wall["median_us"] < 1.5 * gpu["median_us"]:
        return None
    msg = (
        f"the {row['mode']} step is host-bound: {wall['median_us']:,.1f} µs on the host "
        f"({wall['method'].split(',')[0]}) against {gpu['median_us']:,.1f} µs of GPU time"
    )
    advice = (
        "Python and kernel launches, not the GPU, set the pace: CUDA graphs (a static cache with torch.compile) "
        "remove most of it; the attention implementation matters less here than its GPU time suggests"
    )
    return _insight("host_bound", "warning", msg, advice, wall_us=wall["median_us"], gpu_us=gpu["median_us"])


def split_insights(split: dict[str, Any]) -> list[dict[str, Any]]:
    """The insights one trace alone supports (analyze): no timings to compare, no other implementation."""
    sc = split.get("scopes", {})
    row = {
        "impl": sc.get("impl") or "this attention",
        "mode": sc.get("mode") or "profiled",
        "attention": split["attention"],
        "breakdown": split,
    }
    found = [repeat_kv(row), upcasts(row), mask(row), layout_copies(row)]
    return [f for f in found if f is not None]
