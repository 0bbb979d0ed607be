"""The recommendation for one case: the best variant, its margin, and whether that margin is noise.  Pure.

It speaks with the insights' voice: the variant it names is the one ``slower_than_best`` compares
with (:func:`attnscope.analysis.compare.choose_best`), a variant that writes the score matrix out
is named only when every fused variant is slower beyond the noise, and then the text says so.
"""

from __future__ import annotations

from typing import Any

from attnscope.analysis.compare import (
    MAX_TIE_RATIO,
    ONE_SAMPLE_NOTE,
    UNRESOLVED_ADVICE,
    Row,
    case_key,
    choose_best,
    is_fused,
    one_sample,
    ran_backend,
    ranked,
    same_kernels,
    tied,
    unresolved_tie,
)
from attnscope.analysis.rules.insights import materialises_scores
from attnscope.core.types import Recommendation


def _label(r: dict[str, Any]) -> str:
    if r["variant"] == "sdpa_default":
        backend, _ = ran_backend(r)
        return f"sdpa_default (runs {backend})" if backend else "sdpa_default"
    return str(r["variant"])


def _scores_note(best: Row, rows: list[Row]) -> str:
    """Said plainly when the fastest variant writes the S×S scores out and no fused one keeps up."""
    if not materialises_scores(best[0]):
        return ""
    fused = [row for row in rows if is_fused(row[0])]
    what = f"{_label(best[0])} writes the S×S score matrix out (memory grows with S²)"
    if not fused:
        return f" — {what}, and no fused variant ran here to compare with"
    f = fused[0]
    return (
        f" — {what}; every fused variant was slower beyond the noise here (the fastest, {_label(f[0])}, "
        f"{f[1] / best[1]:.2f}× slower): keep it only while S² memory is affordable"
    )


# Two variants that ran the same kernels differ by a few % from run to run on a quiet machine (1.00–1.05× on
# the H200, ≤ 1.1× on a quiet CPU); this far apart, something else disturbed the timings.
DISTURBED_RATIO = 1.5


def _tie_text(best: Row, nxt: Row, rows: list[Row]) -> str:
    if not same_kernels(best[0], nxt[0]):
        text = " — inside the noise (their interquartile ranges overlap): treat them as tied"
    elif nxt[1] >= DISTURBED_RATIO * best[1]:
        text = (
            f" — they ran the same kernels, so a {nxt[1] / best[1]:.2f}× gap is not theirs: the timings were "
            "disturbed (another load on this machine?); treat them as tied, and time again on a quiet machine "
            "before trusting this ranking"
        )
    else:
        text = " — they ran the same kernels, so the gap is run-to-run variation: treat them as tied"
    distinct = next((r for r in rows if r is not best and r is not nxt and not tied(best, r)), None)
    if distinct and distinct[1] > best[1]:
        text += f"; the next clear step is {_label(distinct[0])}, {distinct[1] / best[1]:.2f}× slower"
    return text


def recommend(results: list[dict[str, Any]]) -> Recommendation | None:
    """Rank the ok, numerically sound results of one case; None when there is no single case to rank."""
    keys = {case_key(r) for r in results if r.get("status") == "ok"}
    if len(keys) != 1 or None in keys:
        return None  # analyze of traces of unknown shape, or a document mixing cases
    excluded = tuple(
        f"{r['variant']} (numerics off)" for r in results if r.get("status") == "ok" and r.get("numerics_ok") is False
    )
    rows = ranked(results)
    if not rows:
        return None
    best, preferred_over = choose_best(rows)
    b, best_us, _, basis = best
    if len(rows) == 1:
        text = f"{_label(b)}: the only variant measured ({best_us:,.1f} µs, {basis})" + _scores_note(best, rows)
        return Recommendation(b["variant"], best_us, None, None, None, None, basis, excluded, text)
    nxt = preferred_over or next(r for r in rows if r is not best)
    margin = nxt[1] / best_us
    un = unresolved_tie(rows)
    if un:  # the sweep names no best at such a point either (analysis.recommend.sweep: unresolved)
        fast, slow = un
        text = (
            f"unresolved: {_label(slow[0])} ({slow[1]:,.1f} µs) counts as tied with {_label(fast[0])} "
            f"({fast[1]:,.1f} µs), their interquartile ranges overlapping, although its median is "
            f"{slow[1] / fast[1]:.1f}× slower (over {MAX_TIE_RATIO:g}×): the timings were disturbed, so no variant "
            f"is named best; {UNRESOLVED_ADVICE}"
        )
        return Recommendation(
            b["variant"], best_us, nxt[0]["variant"], nxt[1], margin, True, basis, excluded, text, unresolved=True
        )
    text = f"best for this case: {_label(b)} at {best_us:,.1f} µs ({basis}), "
    if preferred_over:
        text += (
            f"tied within the noise with {_label(nxt[0])}: its median was lower ({nxt[1]:,.1f} µs) but their "
            "interquartile ranges overlap, and "
            f"{_label(nxt[0])} writes the S×S score matrix out: the fused one does the same work in O(S·D) memory"
        )
        noise = True
    else:
        text += f"{margin:.2f}× ahead of {_label(nxt[0])} ({nxt[1]:,.1f} µs)"
        noise = tied(best, nxt)
        if noise:
            text += _tie_text(best, nxt, rows)
        text += _scores_note(best, rows)
    noisy = [_label(x[0]) for x in (best, nxt) if x[2] and x[2].get("noisy")]
    if not noise and (one_sample(best[2]) or one_sample(nxt[2])):
        text += f" — {ONE_SAMPLE_NOTE}"
    elif noisy and not noise:
        text += (
            f" — but {' and '.join(noisy)} timed noisy (IQR/median > 10%): "
            "confirm with a larger --budget before acting on this margin"
        )
    if excluded:
        text += f"; left out: {', '.join(excluded)}"
    return Recommendation(b["variant"], best_us, nxt[0]["variant"], nxt[1], margin, noise, basis, excluded, text)
