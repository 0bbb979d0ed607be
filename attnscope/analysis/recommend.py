"""The recommendation for one case: the best variant, its margin, and whether that margin is noise.  Pure."""

from __future__ import annotations

from typing import Any

from attnscope.analysis.compare import case_key, overlaps, ran_backend, ranked
from attnscope.analysis.insights import compute_kernels
from attnscope.types import Recommendation


def _label(r: dict[str, Any]) -> str:
    if r["variant"] == "sdpa_default":
        backend, _ = ran_backend(r)
        return f"sdpa_default (runs {backend})" if backend else "sdpa_default"
    return str(r["variant"])


def _same_kernels(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two variants that launched the same compute kernels (e.g. sdpa_default picking cuDNN and sdpa_cudnn)."""

    def names(r: dict[str, Any]) -> set[str]:
        return {k["name"] for k in compute_kernels(r)}

    return bool(names(a)) and names(a) == names(b)


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
    best, best_us, best_t, basis = rows[0]
    if len(rows) == 1:
        return Recommendation(
            best["variant"],
            best_us,
            None,
            None,
            None,
            None,
            basis,
            excluded,
            f"{_label(best)}: the only variant measured ({best_us:,.1f} µs, {basis})",
        )
    nxt, nxt_us, nxt_t, _ = rows[1]
    margin = nxt_us / best_us
    noise = overlaps(best_t, nxt_t)
    text = (
        f"best for this case: {_label(best)} at {best_us:,.1f} µs ({basis}), "
        f"{margin:.2f}× ahead of {_label(nxt)} ({nxt_us:,.1f} µs)"
    )
    same = _same_kernels(best, nxt)
    if noise or same:
        why = (
            "they ran the same kernels, so the gap is run-to-run variation"
            if same
            else "inside the noise (their interquartile ranges overlap)"
        )
        text += f" — {why}: treat them as tied"
        distinct = next(
            ((r, us) for r, us, t, _ in rows[2:] if not overlaps(best_t, t) and not _same_kernels(best, r)), None
        )
        if distinct:
            text += f"; the next clear step is {_label(distinct[0])}, {distinct[1] / best_us:.2f}× slower"
    noisy = [_label(x) for x, t in ((best, best_t), (nxt, nxt_t)) if t and t.get("noisy")]
    if noisy and not (noise or same):
        text += (
            f" — but {' and '.join(noisy)} timed noisy (IQR/median > 10%): "
            "confirm with a larger --budget before acting on this margin"
        )
    if excluded:
        text += f"; left out: {', '.join(excluded)}"
    return Recommendation(
        best["variant"], best_us, nxt["variant"], nxt_us, margin, noise or same, basis, excluded, text
    )
