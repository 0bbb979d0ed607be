"""One voice: a per-row rule's advice that the case's own measurements contradict is rewritten.  Pure.

- ``hidden_copy``'s "use the in-place masked_fill_ (naive_inplace)" where the same table shows naive_inplace
  slower than the row beyond the noise: the advice keeps the fused backends and says the figures.

Rules that look at one row (``dense_mask``, ``block_sparsity``) advise from what the row shows: "compile flex
with a BlockMask", "nothing to fix".  Where the same case measured compiled flex slower, beyond the noise, than
the variant the recommendation chooses (:func:`attnscope.analysis.compare.choose_best`), that advice would
contradict the recommendation printed under it; the advice then names the recommended variant and the figures.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from attnscope.analysis.compare import Row, case_key, ranked, tied
from attnscope.analysis.recommend.recommender import recommend
from attnscope.analysis.rules.insights import r1
from attnscope.core.types import Insight, NotChecked


def _compiled_flex(rows: list[Row]) -> Row | None:
    """The built-in compiled flex row (a user's mask_mod row is not the built-in)."""
    for row in rows:
        r = row[0]
        if (
            r.get("family") == "flex"
            and r.get("compile_time_s") is not None
            and not (r.get("extra") or {}).get("user_mods")
        ):
            return row
    return None


def _recommended(peers: list[dict[str, Any]], rows: list[Row]) -> Row | None:
    """The ranked row of the one recommender's best at this case; None where it names none (unresolved, or
    several best)."""
    rec = recommend(peers)
    if rec["unresolved"] or len(rec["best"]) != 1:
        return None
    name = rec["best"][0]["variant"]
    return next((row for row in rows if row[0].get("variant") == name), None)


def _beaten(flex: Row, best: Row) -> dict[str, Any] | None:
    """Evidence that compiled flex is slower than the recommended variant beyond the noise; None otherwise."""
    if flex[0] is best[0] or flex[1] <= best[1] or tied(flex, best):
        return None
    return {
        "recommended": best[0]["variant"],
        "recommended_us": r1(best[1]),
        "flex_variant": flex[0]["variant"],
        "flex_us": r1(flex[1]),
        "flex_ratio": round(flex[1] / best[1], 2),
        "basis": best[3],
    }


def _rewrite(i: Insight, beaten: dict[str, Any]) -> Insight:
    b = beaten
    figures = (
        f"{b['flex_variant']} measured {b['flex_us']:,.1f} µs here, {b['flex_ratio']:.2f}× slower than "
        f"{b['recommended']} ({b['recommended_us']:,.1f} µs, {b['basis']}), the recommendation"
    )
    if i.id == "dense_mask":
        advice = (
            f"keep {b['recommended']} at this case: {figures}; a library's native form of the mask (FlashAttention "
            "window_size or varlen, FlashInfer window_left) may still skip what it hides"
        )
    else:  # block_sparsity on the compiled flex row
        advice = f"the skipped tiles do not make flex the fastest here: {figures}"
    return dataclasses.replace(i, advice=advice, evidence={**i.evidence, "one_voice": b})


INPLACE_ADVICE = "use the in-place masked_fill_ on the scores (naive_inplace), or "


def _inplace_slower(r: dict[str, Any], rows: list[Row]) -> dict[str, Any] | None:
    """Evidence that the case measured naive_inplace slower than ``r`` beyond the noise; None otherwise."""
    mine = next((row for row in rows if row[0] is r), None)
    other = next((row for row in rows if row[0].get("variant") == "naive_inplace"), None)
    if mine is None or other is None or other[0] is r or other[1] <= mine[1] or tied(mine, other):
        return None
    return {"naive_inplace_us": r1(other[1]), "this_us": r1(mine[1]), "ratio": round(other[1] / mine[1], 2)}


def _without_inplace(i: Insight, r: dict[str, Any], slower: dict[str, Any]) -> Insight:
    s = slower
    advice = (
        "use " + i.advice.removeprefix(INPLACE_ADVICE) + f"; naive_inplace measured {s['naive_inplace_us']:,.1f} µs "
        f"here, {s['ratio']:.2f}× slower than {r['variant']} ({s['this_us']:,.1f} µs): the in-place fill does not "
        "pay at this case"
    )
    return dataclasses.replace(i, advice=advice, evidence={**i.evidence, "one_voice": s})


def agree_with_recommendation(
    results: list[dict[str, Any]], explained: list[tuple[list[Insight], list[NotChecked]]]
) -> list[tuple[list[Insight], list[NotChecked]]]:
    """``explained`` (one entry per result, as :func:`attnscope.analysis.compare.explain_results` gives) with the
    advice of ``dense_mask`` and of compiled flex's ``block_sparsity`` rewritten where the case's measurements
    put compiled flex behind the recommended variant beyond the noise."""
    keys = [case_key(r) for r in results]
    groups: dict[Any, list[dict[str, Any]]] = {}
    for r, k in zip(results, keys, strict=True):
        if k is not None:
            groups.setdefault(k, []).append(r)
    # per case, once: its ranked rows, compiled flex among them, and the evidence that flex lost to the recommendation
    cases: dict[Any, tuple[list[Row], Row | None, dict[str, Any] | None]] = {}
    for k, peers in groups.items():
        rows = ranked(peers)
        flex = _compiled_flex(rows)
        best = _recommended(peers, rows) if flex is not None else None
        cases[k] = (rows, flex, _beaten(flex, best) if flex is not None and best is not None else None)
    out = []
    for r, k, (found, missing) in zip(results, keys, explained, strict=True):
        rows, flex, beaten = cases.get(k, ([], None, None))
        if flex is not None and beaten is not None:
            found = [
                _rewrite(i, beaten)
                if i.id == "dense_mask" or (i.id == "block_sparsity" and r is flex[0] and "nothing to fix" in i.advice)
                else i
                for i in found
            ]
        slower = _inplace_slower(r, rows) if any(i.advice.startswith(INPLACE_ADVICE) for i in found) else None
        if slower is not None:
            found = [_without_inplace(i, r, slower) if i.advice.startswith(INPLACE_ADVICE) else i for i in found]
        out.append((found, missing))
    return out
