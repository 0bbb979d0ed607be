"""Crossovers: where the best implementation changes along an axis, the other axes held.  Pure."""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from typing import Any

from attnscope.analysis.recommend.points import Point
from attnscope.analysis.recommend.ranges import cond_text, twinned
from attnscope.analysis.recommend.rows import point_key
from attnscope.document.recommendation import impl_text, label, value_order


def same_implementation(bi: dict[str, Any], pi: Point, bj: dict[str, Any], pj: Point) -> bool:
    """Whether the best at two points is one implementation: some variant is the best or ran the best's kernels
    at both (e.g. sdpa_cudnn best at one, sdpa_default running the same cuDNN kernels best at the other), and
    the backend the kernels show did not change (sdpa_default running cuDNN at one and flash at the other)."""
    if not pi.group(bi["variant"]) & pj.group(bj["variant"]):
        return False
    return not (bi["ran"] and bj["ran"] and bi["ran"] != bj["ran"])


def crossovers(best: list[dict[str, Any]], points: list[Point], axes: list[str]) -> list[dict[str, Any]]:
    """Along each axis, holding the other axes fixed: where the best implementation changes between adjacent
    measured values (not where the name of the best changes between variants that ran the same kernels:
    :func:`same_implementation`).  ``within_noise``: the two variants were tied (quartiles overlap, or the
    same kernels) at either point, so the change may be run-to-run variation."""
    out = []
    for a in axes:
        others = [b for b in axes if b != a]
        lines: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(points):
            lines[point_key({b: p.axes.get(b) for b in others})].append(i)
        for idx in lines.values():
            idx.sort(key=lambda i: value_order(points[i].axes.get(a)))
            for i, j in pairwise(idx):
                pi, pj = points[i], points[j]
                if same_implementation(best[i], pi, best[j], pj):
                    continue
                bi, bj = best[i]["variant"], best[j]["variant"]
                also = {
                    k: [pi.axes.get(k), pj.axes.get(k)]
                    for k in pi.axes
                    if k != a and k not in axes and pi.axes.get(k) != pj.axes.get(k) and not twinned(k, pi, pj)
                }
                frm = impl_text(bi, best[i]["same_as"], best[i]["ran"])
                to = impl_text(bj, best[j]["same_as"], best[j]["ran"])
                out.append(
                    {
                        "axis": a,
                        "between": [pi.axes.get(a), pj.axes.get(a)],
                        "from": bi,
                        "to": bj,
                        "from_same_as": best[i]["same_as"],
                        "to_same_as": best[j]["same_as"],
                        "from_ran": best[i]["ran"],
                        "to_ran": best[j]["ran"],
                        "fixed": {b: pi.axes.get(b) for b in others},
                        "also_changes": also,
                        "within_noise": bi != bj and (bj in pi.agree or bi in pj.agree),
                        "points": [i, j],
                        "text": (
                            f"{cond_text(a, '=', pi.axes.get(a))} → {cond_text(a, '=', pj.axes.get(a))}: "
                            f"{frm} → {to}" + (f" ({label(pi.axes, others)})" if others else "")
                        ),
                    }
                )
    return out
