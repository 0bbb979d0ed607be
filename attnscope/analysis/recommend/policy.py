"""The policy: a compact decision list over the measured points ("under S ≤ 512 → flash, otherwise cuDNN").  Pure."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from attnscope.analysis.recommend.points import Point
from attnscope.analysis.recommend.ranges import cond_text
from attnscope.analysis.recommend.rows import _why_out
from attnscope.core.case import recommender_axes
from attnscope.document.recommendation import DEFAULT, SYMBOL, value_order
from attnscope.document.recommendation import fmt as _fmt

NUMERIC = recommender_axes().numeric  # from the table of the case's fields: a policy may say ≤ / ≥ of these
MAX_RULES = 6  # rules before "otherwise": past that, the disagreeing points are listed as exceptions
MAX_CONDITIONS = 3  # per rule, e.g. 'S ≥ 256 and S ≤ 512 and D = 64'
MIN_GAIN = 2  # a rule must put right at least this many points: a lone point is an exception, not a rule


@dataclass
class Cond:
    axis: str
    op: str
    value: Any
    mask: int

    def as_dict(self) -> dict[str, Any]:
        return {"axis": self.axis, "op": self.op, "value": self.value}

    @property
    def text(self) -> str:
        return cond_text(self.axis, self.op, self.value)


def conditions(points: list[Point], axes: list[str]) -> list[Cond]:
    """Conditions over measured values only: '=' for each value, and '≤'/'≥' cuts between measured values
    of a numeric axis; of two with the same points, the first (the plainer) is kept."""
    conds: list[Cond] = []
    seen: set[int] = set()
    full = (1 << len(points)) - 1
    for a in axes:
        vals = sorted({json.dumps(p.axes.get(a), default=str): p.axes.get(a) for p in points}.values(), key=value_order)
        masks = {json.dumps(v, default=str): 0 for v in vals}
        for i, p in enumerate(points):
            masks[json.dumps(p.axes.get(a), default=str)] |= 1 << i
        cands = [(a, "=", v, masks[json.dumps(v, default=str)]) for v in vals]
        if a in NUMERIC and all(isinstance(v, int | float) for v in vals):
            acc = 0
            for v in vals[:-1]:
                acc |= masks[json.dumps(v, default=str)]
                cands.append((a, "≤", v, acc))
            acc = 0
            for v in reversed(vals[1:]):
                acc |= masks[json.dumps(v, default=str)]
                cands.append((a, "≥", v, acc))
        for ax, op, v, m in cands:
            if m not in seen and m != full:
                seen.add(m)
                conds.append(Cond(ax, op, v, m))
    return conds


def conditions_text(conds: list[Cond]) -> str:
    """'S ≤ 256 and D = 128'; a range of one axis as '256 ≤ S ≤ 512'."""
    parts = []
    for c in conds:
        other = next((x for x in conds if x.axis == c.axis and x is not c), None)
        if other is None:
            parts.append(c.text)
        elif c.op == "≥":
            parts.append(f"{_fmt(c.value)} ≤ {SYMBOL.get(c.axis, c.axis)} ≤ {_fmt(other.value)}")
    return " and ".join(parts)


def candidates(conds: list[Cond]) -> list[tuple[tuple[Cond, ...], int]]:
    """Conjunctions of up to ``MAX_CONDITIONS`` conditions, each on its own axis except a range
    (≥ and ≤ on one numeric axis), simplest first; of two with the same points the simpler is kept."""
    level: list[tuple[tuple[Cond, ...], int, int]] = [((c,), c.mask, i) for i, c in enumerate(conds)]
    out: list[tuple[tuple[Cond, ...], int]] = [(cs, m) for cs, m, _ in level]
    seen = {c.mask for c in conds}
    for _ in range(MAX_CONDITIONS - 1):
        nxt: list[tuple[tuple[Cond, ...], int, int]] = []
        for cs, mask, last in level:
            for i in range(last + 1, len(conds)):
                c = conds[i]
                same = [x for x in cs if x.axis == c.axis]
                if same and (len(same) > 1 or {same[0].op, c.op} != {"≥", "≤"}):
                    continue
                m = mask & c.mask
                if m and m not in seen:
                    seen.add(m)
                    nxt.append(((*cs, c), m, i))
        out += [(cs, m) for cs, m, _ in nxt]
        level = nxt
    return out


def policy(best: list[dict[str, Any]], points: list[Point], axes: list[str]) -> list[dict[str, Any]]:
    """A decision list over the measured points: the first rule that matches applies, then "otherwise".

    An exception is a point where the variant named for it is neither best nor tied for best.  Built
    greedily: each step adds the rule (at most ``MAX_CONDITIONS`` conditions on measured values) that
    leaves the fewest exceptions, put either last before "otherwise" (it takes what no rule took) or
    first (it takes its points from the rules after it); "otherwise" is the variant that agrees with
    most of what is left.  A rule must agree on more than half the points it takes and leave at least
    ``MIN_GAIN`` fewer exceptions than before.  Between moves that leave as many: fewer conditions,
    last before first, the narrower rule (the broad case is left to "otherwise"), then the rule whose
    variant is strictly best on more of its points (a variant that ran the best's kernels counts as best:
    one implementation), then PyTorch's own choice (nothing to change in the code), then by name.
    """
    n = len(points)
    if n == 0:
        return []
    full = (1 << n) - 1
    variants = sorted({v for p in points for v in p.agree})
    agree = {v: sum(1 << i for i, p in enumerate(points) if v in p.agree) for v in variants}
    strict = {v: sum(1 << i for i, b in enumerate(best) if v == b["variant"] or v in b["same_as"]) for v in variants}

    def fallback(m: int) -> tuple[str, int]:
        v = max(
            variants,
            key=lambda w: (
                (m & agree[w]).bit_count(),
                (m & strict[w]).bit_count(),
                w == DEFAULT,
                [-ord(c) for c in w],
            ),
        )
        return v, m.bit_count() - (m & agree[v]).bit_count()

    def spans(rules: list[tuple[tuple[Cond, ...], str, int]]) -> tuple[list[int], int]:
        """The points each rule takes (those no rule before it took), and what is left for "otherwise"."""
        taken, out = 0, []
        for _, _, cmask in rules:
            out.append(cmask & ~taken)
            taken |= cmask
        return out, full & ~taken

    cands = candidates(conditions(points, axes))
    rules: list[tuple[tuple[Cond, ...], str, int]] = []
    while len(rules) < MAX_RULES:
        took, rem = spans(rules)
        rule_err = 0
        for (_, v, _), cov in zip(rules, took, strict=True):
            rule_err |= cov & ~agree[v]
        err_mask = rule_err | (rem & ~agree[fallback(rem)[0]] if rem else 0)
        base_err = err_mask.bit_count()
        if base_err == 0:
            break
        choice: tuple[Any, ...] | None = None
        for order, (conds, cmask) in enumerate(cands):
            moves = []
            cov = cmask & rem
            if cov and cov != rem:  # last: the points no rule took
                moves.append((0, cov, rule_err.bit_count() + fallback(rem & ~cov)[1]))
            if rules:  # first: every point it matches, the rules after it keep the rest
                moves.append((1, cmask, (err_mask & ~cmask).bit_count()))
            for pos, cov, rest in moves:
                ncov = cov.bit_count()
                for v in variants:
                    a = (cov & agree[v]).bit_count()
                    if 2 * a <= ncov:
                        continue
                    hits = (cov & strict[v]).bit_count()
                    key = (ncov - a + rest, len(conds), pos, ncov, -hits, order, v != DEFAULT, v)
                    if choice is None or key < choice[0]:
                        choice = (key, conds, v, cmask)
        if choice is None or base_err - choice[0][0] < MIN_GAIN:
            break
        rule = (choice[1], choice[2], choice[3])
        if choice[0][2]:
            rules.insert(0, rule)
        else:
            rules.append(rule)
    took, rem = spans(rules)
    out = [_rule(best, points, list(c), v, cov) for (c, v, _), cov in zip(rules, took, strict=True) if cov]
    if rem:
        out.append(_rule(best, points, [], fallback(rem)[0], rem))
        if len(out) == 1:
            out[0]["text"] = "everywhere measured"
    if n == 2 and any(r["exceptions"] for r in out):
        return _each_point(best, points, axes) or out
    return out


def _each_point(best: list[dict[str, Any]], points: list[Point], axes: list[str]) -> list[dict[str, Any]]:
    """Two points whose bests no one variant shares: each point's best, under the one condition that names that
    point alone (its value of the first axis they differ on).  A rule needs ``MIN_GAIN`` points it puts right, so
    no rule can be drawn from two points; "X everywhere measured" with the other point as its exception would
    claim a rule that one point cannot make.  Empty where no condition tells the two apart."""
    conds = [c for c in conditions(points, axes) if c.op == "="]
    out = []
    for i in range(2):
        cond = next((c for c in conds if c.mask == 1 << i), None)
        if cond is None:
            return []
        out.append(_rule(best, points, [cond], best[i]["variant"], 1 << i))
    return out


def _rule(best: list[dict[str, Any]], points: list[Point], conds: list[Cond], v: str, mask: int) -> dict[str, Any]:
    idx = [i for i in range(len(points)) if mask >> i & 1]
    exceptions = []
    for i in idx:
        if v in points[i].agree:
            continue
        p, b = points[i], best[i]
        mine = next((r for r in p.rows if r[0]["variant"] == v), None)
        e = {"index": i, "label": b["label"], "best": b["variant"], "best_same_as": b["same_as"]}
        e["best_us"] = b["median_us"]
        if mine:
            e |= {"variant_us": mine[1], "ratio": mine[1] / b["median_us"] if b["median_us"] > 0 else None}
        else:
            raw = p.by_variant.get(v)
            e |= {"variant_us": None, "ratio": None, "why": _why_out(raw, p.source) if raw else "not run here"}
        exceptions.append(e)
    agreeing = len(idx) - len(exceptions)
    strict = sum(1 for i in idx if v == best[i]["variant"] or v in best[i]["same_as"])
    measured = [i for i in idx if v in points[i].ran]
    same_as = Counter(t for i in measured for t in points[i].twins[v])
    ran = Counter(str(points[i].ran[v]) for i in measured if points[i].ran[v])
    return {
        "when": [c.as_dict() for c in conds],
        "text": conditions_text(conds) or "otherwise",
        "variant": v,
        "points": len(idx),
        "agree": agreeing,
        "agree_via_tie": agreeing - strict,
        "measured": len(measured),
        "same_as": dict(sorted(same_as.items(), key=lambda kv: (-kv[1], kv[0]))),
        "ran": dict(sorted(ran.items(), key=lambda kv: (-kv[1], kv[0]))),
        "exceptions": exceptions,
    }
