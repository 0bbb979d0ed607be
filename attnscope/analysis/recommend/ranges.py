"""The axes of a recommendation: which vary on their own, which follow others, and their measured values.  Pure."""

from __future__ import annotations

import json
from typing import Any

from attnscope.analysis.recommend.points import Point
from attnscope.analysis.recommend.rows import point_key
from attnscope.core.case import recommender_axes
from attnscope.document.recommendation import AXES, SYMBOL, value_order
from attnscope.document.recommendation import fmt as _fmt
from attnscope.document.recommendation import value_text as _value_text

TWIN = recommender_axes().twin  # filled in from these where the case leaves them out (the case table)


def point_axes(points: list[Point]) -> tuple[list[str], dict[str, str], dict[str, Any]]:
    """(axes that vary on their own, axes that only follow the others, axes held at one value)."""
    names = [a for a in AXES if any(a in p.axes for p in points)]
    names += sorted({a for p in points for a in p.axes} - set(names))
    values = {a: {json.dumps(p.axes.get(a), default=str) for p in points} for a in names}
    fixed = {a: points[0].axes.get(a) for a in names if len(values[a]) == 1} if points else {}
    kept = [a for a in names if len(values[a]) > 1]
    derived: dict[str, str] = {}
    for a in reversed(list(kept)):
        others = [b for b in kept if b != a]
        seen: dict[str, Any] = {}
        if all(
            seen.setdefault(point_key({b: p.axes.get(b) for b in others}), p.axes.get(a)) == p.axes.get(a)
            for p in points
        ):
            kept.remove(a)
            twin = TWIN.get(a)
            if twin and all(p.axes.get(a) == p.axes.get(twin) for p in points):
                derived[a] = f"{a} = {twin} at every point"
            else:
                derived[a] = f"{a} changes only with the other axes here (never alone): not an axis of its own"
    return kept, derived, fixed


def twinned(k: str, *ps: Point) -> bool:
    twin = TWIN.get(k)
    return twin is not None and all(p.axes.get(k) == p.axes.get(twin) for p in ps)


def cond_text(a: str, op: str, v: Any) -> str:
    if a in ("causal", "alibi") and op == "=":
        return _value_text(a, v)
    name = SYMBOL.get(a, a)
    return f"{name} {op} {_fmt(v)}"


def measured_ranges(points: list[Point], axes: list[str]) -> dict[str, list[Any]]:
    """The measured values of each varying axis: the policy says nothing beyond them."""
    return {
        a: sorted({json.dumps(p.axes.get(a), default=str): p.axes.get(a) for p in points}.values(), key=value_order)
        for a in axes
    }
