"""The recommendation for one case, as a sentence: a view of the one recommender's answer
(:func:`attnscope.analysis.recommend.recommend`) on a run document's results.  Pure.

The best, its runner-up (the next implementation: the fastest variant that ran other kernels), the margin,
the tie verdict and an unresolved point are the one recommender's: `attnscope run`, `attnscope recommend` on
the same document and a sweep of that one point say the same.  Variants that ran the best's kernels are one
implementation with it; the sentence names them, and a gap between them of ``DISTURBED_RATIO``× or more says the
timings were disturbed.  A variant that writes the score matrix out is named only when every fused variant is
slower beyond the noise, and then the text says so.
"""

from __future__ import annotations

from typing import Any

from attnscope.analysis.recommend.recommender import recommend as recommend_rows
from attnscope.analysis.rules.ties import MAX_TIE_RATIO, ONE_SAMPLE_NOTE, UNRESOLVED_ADVICE, ran_backend
from attnscope.core.types import Recommendation

# Two variants that ran the same kernels differ by a few % from run to run on a quiet machine (1.00–1.05× on
# the H200, ≤ 1.1× on a quiet CPU); this far apart, something else disturbed the timings.
DISTURBED_RATIO = 1.5


def _labeller(results: list[dict[str, Any]]) -> Any:
    by = {r.get("variant"): r for r in results}

    def label(v: str) -> str:
        if v == "sdpa_default" and v in by:
            backend, _ = ran_backend(by[v])
            return f"sdpa_default (runs {backend})" if backend else "sdpa_default"
        return str(v)

    return label


def _scores_note(b: dict[str, Any], label: Any) -> str:
    """Said plainly when the fastest variant writes the S×S scores out and no fused one keeps up."""
    if not b["writes_scores"]:
        return ""
    what = f"{label(b['variant'])} writes the S×S score matrix out (memory grows with S²)"
    if b["fastest_fused"] is None:
        return f" — {what}, and no fused variant ran here to compare with"
    return (
        f" — {what}; every fused variant was slower beyond the noise here (the fastest, {label(b['fastest_fused'])}, "
        f"{b['fastest_fused_us'] / b['median_us']:.2f}× slower): keep it only while S² memory is affordable"
    )


def _twins_text(b: dict[str, Any], label: Any) -> str:
    """The variants that ran the best's kernels: one implementation, their gap run-to-run variation (or a
    disturbance, past ``DISTURBED_RATIO``×)."""
    if not b["same_as"]:
        return ""
    names = " and ".join(label(v) for v in b["same_as"])
    slowest = max(b["same_as_us"])
    ratio = slowest / b["median_us"] if b["median_us"] > 0 else 1.0
    text = f"; {names} ran the same kernels ({', '.join(f'{u:,.1f}' for u in b['same_as_us'])} µs): one implementation"
    if ratio >= DISTURBED_RATIO:
        return text + (
            f", so a {ratio:.2f}× gap between them is not theirs: the timings were disturbed "
            "(another load on this machine?); time again on a quiet machine before trusting this ranking"
        )
    return text + ", the gap is run-to-run variation"


def _excluded(rec: dict[str, Any], results: list[dict[str, Any]]) -> tuple[str, ...]:
    """The variants measured but left out, in the document's order, each with the reason in short."""
    order = {r.get("variant"): i for i, r in enumerate(results)}
    out = [e for e in rec["excluded"] if e.get("status") == "ok"]
    out.sort(key=lambda e: order.get(e["variant"], len(order)))
    return tuple(f"{e['variant']} ({e['why'].split(':')[0].split(' (')[0]})" for e in out)


def recommend(results: list[dict[str, Any]], rows_rec: dict[str, Any] | None = None) -> Recommendation | None:
    """The one recommender's answer for the one case of ``results``, as a sentence; None when there is no single
    case to rank (analyze of traces of unknown shape, or a document mixing cases).  ``rows_rec``: the one
    recommender's answer on these same ``results`` where the caller already has it (asked once per case)."""
    ok = [r for r in results if r.get("status") == "ok"]
    if not ok or any(not isinstance(r.get("case"), dict) for r in ok):
        return None
    rec = rows_rec if rows_rec is not None else recommend_rows(results)
    if len(rec["best"]) + len(rec["unresolved"]) != 1:
        return None
    label = _labeller(results)
    excluded = _excluded(rec, results)
    if rec["unresolved"]:  # the sweep names no best at such a point either
        u = rec["unresolved"][0]
        text = (
            f"unresolved: {label(u['tied_slow'])} ({u['tied_slow_us']:,.1f} µs) counts as tied with "
            f"{label(u['fastest'])} ({u['fastest_us']:,.1f} µs), their interquartile ranges overlapping, although its "
            f"median is {u['ratio']:.1f}× slower (over {MAX_TIE_RATIO:g}×): the timings were disturbed, so no "
            f"variant is named best; {UNRESOLVED_ADVICE}"
        )
        return Recommendation(
            u["fastest"],
            u["fastest_us"],
            u["tied_slow"],
            u["tied_slow_us"],
            u["ratio"],
            True,
            u["basis"],
            excluded,
            text,
            unresolved=True,
        )
    b = rec["best"][0]
    v, best_us, basis = b["variant"], b["median_us"], b["basis"]
    nxt, nxt_us = b["runner_up"], b["runner_up_us"]
    if nxt is None:
        if b["same_as"]:
            text = f"best for this case: {label(v)} at {best_us:,.1f} µs ({basis})" + _twins_text(b, label)
        else:
            text = f"{label(v)}: the only variant measured ({best_us:,.1f} µs, {basis})"
        text += _scores_note(b, label)
        if excluded:
            text += f"; left out: {', '.join(excluded)}"
        return Recommendation(v, best_us, None, None, None, None, basis, excluded, text)
    text = f"best for this case: {label(v)} at {best_us:,.1f} µs ({basis}), "
    if b["preferred_over"]:
        text += (
            f"tied within the noise with {label(nxt)}: its median was lower ({nxt_us:,.1f} µs) but their "
            "interquartile ranges overlap, and "
            f"{label(nxt)} writes the S×S score matrix out: the fused one does the same work in O(S·D) memory"
        )
        text += _twins_text(b, label)
    else:
        text += f"{b['margin']:.2f}× ahead of {label(nxt)} ({nxt_us:,.1f} µs)"
        if b["tied"]:
            text += " — inside the noise (their interquartile ranges overlap): treat them as tied"
            if b["next_clear"]:
                text += f"; the next clear step is {label(b['next_clear'])}, {b['next_clear_us'] / best_us:.2f}× slower"
        text += _twins_text(b, label)
        text += _scores_note(b, label)
    if not b["tied"] and b["one_sample"]:
        text += f" — {ONE_SAMPLE_NOTE}"
    elif b["noisy"]:
        text += (
            f" — but {' and '.join(label(x) for x in b['noisy_variants'])} timed noisy (IQR/median > 10%): "
            "confirm with a larger --budget before acting on this margin"
        )
    if excluded:
        text += f"; left out: {', '.join(excluded)}"
    return Recommendation(v, best_us, nxt, nxt_us, b["margin"], b["tied"], basis, excluded, text)
