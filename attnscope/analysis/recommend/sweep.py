"""The recommendation over a sweep: the best variant per (case, mode), where it changes along each
axis, a compact policy over the measured points, and where PyTorch's own choice is not the best.  Pure:
plain row dicts in (``report/json.py``'s rows, e.g. from ``attnscope.execute.store.load_rows``), plain dicts out.

It speaks with the run recommendation's voice (:mod:`attnscope.analysis.recommend.run`): the same tie
rule (:func:`attnscope.analysis.compare.tied`: interquartile ranges overlap, or the same compute
kernels ran) and the same choice (:func:`attnscope.analysis.compare.choose_best`: a variant that
writes the S×S scores out is recommended only when every fused variant is slower beyond the noise).

Implementations, not names: variants whose rows at a point ran the same compute kernels
(:func:`attnscope.analysis.compare.same_kernels`, e.g. ``sdpa_default`` running cuDNN and ``sdpa_cudnn``)
are one implementation there.  A best entry names the fastest of them (``variant``) and the others
(``same_as``); its runner-up and margin are those of the next implementation, the fastest variant that
ran other kernels.  A change of best between variants of one implementation is no crossover, and a
policy rule says which variants ran the same kernels as the one it names.

The JSON (``attnscope recommend --json``), beyond the keys the issue names:

- ``best[]``: ``same_as`` (the other variants that ran the best's compute kernels, fastest first), ``ran``
  (the backend the best's kernels show, e.g. ``cudnn``; None when they show none), ``runner_up_same_as`` and
  ``runner_up_ran`` (the same for the next implementation), ``tied_with`` (every variant tied with the best,
  its ``same_as`` included); ``default``: ``is_best`` (sdpa_default is the best or ran its kernels) and
  ``same_kernels_as_best`` (the latter, not the variant named best);
- ``crossovers[]``: ``from_same_as``/``to_same_as`` and ``from_ran``/``to_ran`` (each side's implementation),
  ``within_noise`` (kept in the JSON; the terminal and the page only count these);
- ``policy[]``: ``same_as`` ({variant: points of the rule where it ran the named variant's kernels}),
  ``ran`` ({backend: points}), ``measured`` (the rule's points where the named variant was usable);
- ``default_summary.same_kernels_as_best``, ``default_ran`` ({backend sdpa_default ran: points}).

Only rows with status ``ok`` and ``numerics_ok`` true compete: a fast but wrong variant never wins,
a compiled row that ran eager code (:func:`attnscope.analysis.fingerprint.compiled.fell_back_to_eager`) is not
compared under the compiled name, and every row left out is listed with the reason.  Times are medians
per call: the GPU time (CUDA events) where a (case, mode) has any, else the CPU time; each entry says which.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from attnscope.analysis.compare import (
    MAX_TIE_RATIO,
    UNRESOLVED_ADVICE,
    Row,
    choose_best,
    ran_backend,
    same_kernels,
    tied,
    unresolved_tie,
)
from attnscope.analysis.fingerprint.compiled import fell_back_to_eager
from attnscope.document.recommendation import (  # the recommendation's words, shared with the report
    AXES,
    DEFAULT,
    LABEL_AXES,
    SUMMARY_KEYS,
    SYMBOL,
    axes_of,
    crossover_best_text,
    crossover_note,
    default_summary_text,
    exception_text,
    group_text,
    impl_text,
    label,
    noise_changes_text,
    policy_text,
    real_crossovers,
    rule_variant_text,
    tie_text,
    value_order,
)
from attnscope.document.recommendation import fmt as _fmt
from attnscope.document.recommendation import value_text as _value_text

__all__ = [  # the words re-exported: their old import path keeps working
    "AXES",
    "DEFAULT",
    "LABEL_AXES",
    "SUMMARY_KEYS",
    "SYMBOL",
    "axes_of",
    "crossover_best_text",
    "crossover_note",
    "default_summary_text",
    "exception_text",
    "group_text",
    "impl_text",
    "label",
    "noise_changes_text",
    "policy_text",
    "real_crossovers",
    "recommend",
    "rule_variant_text",
    "tie_text",
    "value_order",
]

NUMERIC = frozenset({"seq_q", "seq_kv", "head_dim", "batch", "heads", "kv_heads", "softcap"})
MAX_RULES = 6  # rules before "otherwise": past that, the disagreeing points are listed as exceptions
MAX_CONDITIONS = 3  # per rule, e.g. 'S ≥ 256 and S ≤ 512 and D = 64'
MIN_GAIN = 2  # a rule must put right at least this many points: a lone point is an exception, not a rule
TIE_RULE = (
    "tied when the interquartile ranges (p25–p75 of the timed calls) overlap, or both ran the same compute "
    "kernels (the run recommendation's rule)"
)
TWIN = {"seq_kv": "seq_q", "kv_heads": "heads"}  # filled in from these where the case leaves them out
MARGIN_FORMULA = (
    "runner_up_us / median_us (median time per call of the next implementation, the fastest variant that ran other "
    "kernels than the best, over the best's)"
)
BASIS = {
    "gpu": "GPU time per call (median)",
    "cpu": "wall time per call on the CPU (median)",
    "host": "host time per call (median): these rows hold no GPU time",
}


# --------------------------------------------------------------------------------------------- reading rows


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def _key(axes: dict[str, Any]) -> str:
    return json.dumps(axes, sort_keys=True, default=str)


def _source(rows: list[dict[str, Any]]) -> str:
    """GPU time when any row of the (case, mode) has one; else wall time on a CPU, host time elsewhere."""
    if any(_median(r, "gpu") is not None for r in rows):
        return "gpu"
    dev = str((rows[0].get("case") or {}).get("device") or "cpu")
    return "cpu" if dev == "cpu" else "host"


def _median(r: dict[str, Any], source: str) -> float | None:
    kind = "cpu" if source == "host" else source
    t = r.get(f"{kind}_time")
    med = _num(r.get(f"{kind}_time_us"))
    if med is None and isinstance(t, dict):
        med = _num(t.get("median_us"))
    return med


def _quartiles(r: dict[str, Any], source: str) -> dict[str, Any] | None:
    """The timing as :func:`compare.overlaps` reads it; None when the quartiles are not both numbers."""
    t = r.get(f"{'cpu' if source == 'host' else source}_time")
    if not isinstance(t, dict):
        return None
    p25, p75 = _num(t.get("p25_us")), _num(t.get("p75_us"))
    if p25 is None or p75 is None:
        return None
    return {"p25_us": p25, "p75_us": p75, "noisy": bool(t.get("noisy")), "method": t.get("method")}


def _why_out(r: dict[str, Any], source: str) -> str | None:
    """Why a row cannot compete (None: it can)."""
    st = r.get("status")
    if st != "ok":
        reason = " ".join(str(r.get("reason") or "no reason recorded").split())
        return f"status {st}: {reason[:200]}"
    if fell_back_to_eager(r):  # one reason for every such row (its message counts the kernels): one line in a table
        return (
            "compiled flex that ran eager flex: no kernel generated by torch.compile (no triton_* kernel), as when "
            "dynamo reaches its recompile limit in a process; its time is eager flex's"
        )
    if r.get("numerics_ok") is False:
        err, tol = _num(r.get("max_rel_error")), _num(r.get("error_tolerance"))
        if r.get("nonfinite"):
            return "numerics off: NaN/Inf in the output"
        if err is not None and tol is not None:
            return f"numerics off: error {err:.1e} against the fp64 reference, over the tolerance {tol:.0e}"
        return "numerics off"
    if r.get("numerics_ok") is not True:
        return "numerics not checked (no comparison with the fp64 reference recorded)"
    if _median(r, source) is None:
        return f"no {'GPU' if source == 'gpu' else 'CPU'} time recorded"
    return None


# --------------------------------------------------------------------------------------------- best per case


@dataclass
class _Point:
    axes: dict[str, Any]
    case: dict[str, Any]
    source: str
    rows: list[Row]  # usable rows, fastest first
    best: Row
    agree: set[str] = field(default_factory=set)  # the best and every variant tied with it
    by_variant: dict[str, dict[str, Any]] = field(default_factory=dict)  # every row of the point
    twins: dict[str, list[str]] = field(default_factory=dict)  # usable variant -> the others that ran its kernels
    ran: dict[str, str | None] = field(default_factory=dict)  # usable variant -> the backend its kernels show
    unresolved: tuple[Row, Row] | None = None  # (fastest, a tied one > MAX_TIE_RATIO× slower): no best here

    def group(self, v: str) -> set[str]:
        """``v`` and the variants that ran the same kernels here: one implementation."""
        return {v, *self.twins.get(v, [])}


def _twins(rows: list[Row]) -> dict[str, list[str]]:
    """For each variant, the others that ran the same compute kernels, fastest first (none: no kernels known)."""
    return {a[0]["variant"]: [b[0]["variant"] for b in rows if b is not a and same_kernels(a[0], b[0])] for a in rows}


def _best_entry(p: _Point, index: int) -> dict[str, Any]:
    best, preferred_over = choose_best(p.rows)
    b, best_us, bt, basis = best
    mine = p.group(b["variant"])
    # the next implementation: the fastest variant that ran other kernels (the faster one that writes the
    # scores out, when the fused best was preferred to it)
    nxt = next((r for r in p.rows if r[0]["variant"] not in mine), None)
    entry: dict[str, Any] = {
        "index": index,
        "case": p.case,
        "mode": p.axes["mode"],
        "label": label(p.axes),
        "variant": b["variant"],
        "same_as": p.twins.get(b["variant"], []),
        "ran": p.ran.get(b["variant"]),
        "median_us": best_us,
        "p25_us": bt["p25_us"] if bt else None,
        "p75_us": bt["p75_us"] if bt else None,
        "runner_up": nxt[0]["variant"] if nxt else None,
        "runner_up_same_as": p.twins.get(nxt[0]["variant"], []) if nxt else [],
        "runner_up_ran": p.ran.get(nxt[0]["variant"]) if nxt else None,
        "runner_up_us": nxt[1] if nxt else None,
        "margin": nxt[1] / best_us if nxt and best_us > 0 else None,
        "tied": False,
        "tie_reason": None,
        "tied_with": sorted(p.agree - {b["variant"]}),
        "preferred_over": preferred_over[0]["variant"] if preferred_over else None,
        "time_source": p.source,
        "basis": basis,
        "time_method": bt.get("method") if bt else None,
        "noisy": False,
        "variants_compared": len(p.rows),
        "default": _default_at(p, best),
    }
    if nxt:
        entry["tied"] = tied(best, nxt)
        if preferred_over:
            entry["tie_reason"] = (
                f"quartiles overlap, and {preferred_over[0]['variant']} writes the S×S score matrix out: "
                f"{b['variant']} does the same work in O(S·D) memory"
            )
        elif entry["tied"]:
            entry["tie_reason"] = "quartiles overlap"  # other kernels: only the quartiles can tie them
        noisy = [x[0]["variant"] for x in (best, nxt) if x[2] and x[2].get("noisy")]
        entry["noisy"] = bool(noisy) and not entry["tied"]
    return entry


def _default_at(p: _Point, best: Row) -> dict[str, Any] | None:
    """sdpa_default against the best, and the backend its kernels show it ran.  It is the best when it is
    the variant named best or ran the same kernels (``same_kernels_as_best``: then it is one implementation
    with the best, timed a little slower or faster by run-to-run variation)."""
    d = next((r for r in p.rows if r[0]["variant"] == DEFAULT), None)
    if d is None:
        raw = p.by_variant.get(DEFAULT)
        return {"measured": False, "why": _why_out(raw, p.source)} if raw else None
    backend, seen_in = ran_backend(d[0])
    twin = d is not best and DEFAULT in p.twins.get(best[0]["variant"], [])
    out: dict[str, Any] = {
        "measured": True,
        "median_us": d[1],
        "ratio": d[1] / best[1] if best[1] > 0 else None,
        "lost_us": d[1] - best[1],
        "is_best": d is best or twin,
        "same_kernels_as_best": twin,
        "tied": d is not best and not twin and tied(best, d),
        "ran": backend,
        "kernel": seen_in if seen_in and seen_in != "aten op" else None,
    }
    if out["tied"]:
        out["tie_reason"] = "quartiles overlap"
    return out


def _points(
    rows: list[dict[str, Any]],
) -> tuple[list[_Point], list[dict[str, Any]], Counter[str], int, int]:
    groups: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    axes_by: dict[str, dict[str, Any]] = {}
    excluded: list[dict[str, Any]] = []
    status: Counter[str] = Counter()
    superseded = no_case = 0
    for r in rows:
        status[str(r.get("status"))] += 1
        if not isinstance(r.get("case"), dict) or not isinstance(r.get("variant"), str):
            no_case += 1
            excluded.append({"variant": r.get("variant"), "label": None, "why": "no case recorded (e.g. a trace)"})
            continue
        ax = axes_of(r)
        k = _key(ax)
        axes_by[k] = ax
        if r["variant"] in groups[k]:
            superseded += 1  # the same (variant, case, mode) again: the later row stands
        groups[k][r["variant"]] = r
    points = []
    for k in sorted(groups, key=lambda k: [value_order(axes_by[k].get(a)) for a in AXES]):
        by_v = groups[k]
        src = _source(list(by_v.values()))
        usable: list[Row] = []
        out: list[tuple[dict[str, Any], str]] = []
        for v in sorted(by_v):
            r = by_v[v]
            why = _why_out(r, src)
            if why:
                out.append((r, why))
            else:
                usable.append((r, _median(r, src) or 0.0, _quartiles(r, src), BASIS[src]))
        usable.sort(key=lambda x: (x[1], x[0]["variant"]))
        best_us = None
        if usable:
            best = choose_best(usable)[0]
            best_us = best[1]
            p = _Point(axes_by[k], by_v[next(iter(by_v))]["case"], src, usable, best, by_variant=by_v)
            p.twins = _twins(usable)
            p.ran = {x[0]["variant"]: ran_backend(x[0])[0] for x in usable}
            p.agree = {best[0]["variant"]} | {x[0]["variant"] for x in usable if x is not best and tied(best, x)}
            p.unresolved = unresolved_tie(usable)
            points.append(p)
        for r, why in out:
            e: dict[str, Any] = {"variant": r["variant"], "label": label(axes_by[k]), "status": r.get("status")}
            e["why"] = why
            us = _median(r, src)
            if r.get("status") == "ok" and us is not None:
                e["median_us"] = us
                e["faster_than_best"] = best_us is not None and us < best_us
            excluded.append(e)
    return points, excluded, status, superseded, no_case


# --------------------------------------------------------------------------------------------- axes


def _axes(points: list[_Point]) -> tuple[list[str], dict[str, str], dict[str, Any]]:
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
            seen.setdefault(_key({b: p.axes.get(b) for b in others}), p.axes.get(a)) == p.axes.get(a) for p in points
        ):
            kept.remove(a)
            twin = TWIN.get(a)
            if twin and all(p.axes.get(a) == p.axes.get(twin) for p in points):
                derived[a] = f"{a} = {twin} at every point"
            else:
                derived[a] = f"{a} changes only with the other axes here (never alone): not an axis of its own"
    return kept, derived, fixed


# --------------------------------------------------------------------------------------------- crossovers


def same_implementation(bi: dict[str, Any], pi: _Point, bj: dict[str, Any], pj: _Point) -> bool:
    """Whether the best at two points is one implementation: some variant is the best or ran the best's kernels
    at both (e.g. sdpa_cudnn best at one, sdpa_default running the same cuDNN kernels best at the other), and
    the backend the kernels show did not change (sdpa_default running cuDNN at one and flash at the other)."""
    if not pi.group(bi["variant"]) & pj.group(bj["variant"]):
        return False
    return not (bi["ran"] and bj["ran"] and bi["ran"] != bj["ran"])


def crossovers(best: list[dict[str, Any]], points: list[_Point], axes: list[str]) -> list[dict[str, Any]]:
    """Along each axis, holding the other axes fixed: where the best implementation changes between adjacent
    measured values (not where the name of the best changes between variants that ran the same kernels:
    :func:`same_implementation`).  ``within_noise``: the two variants were tied (quartiles overlap, or the
    same kernels) at either point, so the change may be run-to-run variation."""
    out = []
    for a in axes:
        others = [b for b in axes if b != a]
        lines: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(points):
            lines[_key({b: p.axes.get(b) for b in others})].append(i)
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
                    if k != a and k not in axes and pi.axes.get(k) != pj.axes.get(k) and not _twinned(k, pi, pj)
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
                            f"{_cond_text(a, '=', pi.axes.get(a))} → {_cond_text(a, '=', pj.axes.get(a))}: "
                            f"{frm} → {to}" + (f" ({label(pi.axes, others)})" if others else "")
                        ),
                    }
                )
    return out


def _twinned(k: str, *ps: _Point) -> bool:
    twin = TWIN.get(k)
    return twin is not None and all(p.axes.get(k) == p.axes.get(twin) for p in ps)


# --------------------------------------------------------------------------------------------- policy


def _cond_text(a: str, op: str, v: Any) -> str:
    if a in ("causal", "alibi") and op == "=":
        return _value_text(a, v)
    name = SYMBOL.get(a, a)
    return f"{name} {op} {_fmt(v)}"


@dataclass
class _Cond:
    axis: str
    op: str
    value: Any
    mask: int

    def as_dict(self) -> dict[str, Any]:
        return {"axis": self.axis, "op": self.op, "value": self.value}

    @property
    def text(self) -> str:
        return _cond_text(self.axis, self.op, self.value)


def _conditions(points: list[_Point], axes: list[str]) -> list[_Cond]:
    """Conditions over measured values only: '=' for each value, and '≤'/'≥' cuts between measured values
    of a numeric axis; of two with the same points, the first (the plainer) is kept."""
    conds: list[_Cond] = []
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
                conds.append(_Cond(ax, op, v, m))
    return conds


def conditions_text(conds: list[_Cond]) -> str:
    """'S ≤ 256 and D = 128'; a range of one axis as '256 ≤ S ≤ 512'."""
    parts = []
    for c in conds:
        other = next((x for x in conds if x.axis == c.axis and x is not c), None)
        if other is None:
            parts.append(c.text)
        elif c.op == "≥":
            parts.append(f"{_fmt(c.value)} ≤ {SYMBOL.get(c.axis, c.axis)} ≤ {_fmt(other.value)}")
    return " and ".join(parts)


def _candidates(conds: list[_Cond]) -> list[tuple[tuple[_Cond, ...], int]]:
    """Conjunctions of up to ``MAX_CONDITIONS`` conditions, each on its own axis except a range
    (≥ and ≤ on one numeric axis), simplest first; of two with the same points the simpler is kept."""
    level: list[tuple[tuple[_Cond, ...], int, int]] = [((c,), c.mask, i) for i, c in enumerate(conds)]
    out: list[tuple[tuple[_Cond, ...], int]] = [(cs, m) for cs, m, _ in level]
    seen = {c.mask for c in conds}
    for _ in range(MAX_CONDITIONS - 1):
        nxt: list[tuple[tuple[_Cond, ...], int, int]] = []
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


def policy(best: list[dict[str, Any]], points: list[_Point], axes: list[str]) -> list[dict[str, Any]]:
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

    def spans(rules: list[tuple[tuple[_Cond, ...], str, int]]) -> tuple[list[int], int]:
        """The points each rule takes (those no rule before it took), and what is left for "otherwise"."""
        taken, out = 0, []
        for _, _, cmask in rules:
            out.append(cmask & ~taken)
            taken |= cmask
        return out, full & ~taken

    cands = _candidates(_conditions(points, axes))
    rules: list[tuple[tuple[_Cond, ...], str, int]] = []
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
    return out


def _rule(best: list[dict[str, Any]], points: list[_Point], conds: list[_Cond], v: str, mask: int) -> dict[str, Any]:
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


def measured_ranges(points: list[_Point], axes: list[str]) -> dict[str, list[Any]]:
    """The measured values of each varying axis: the policy says nothing beyond them."""
    return {
        a: sorted({json.dumps(p.axes.get(a), default=str): p.axes.get(a) for p in points}.values(), key=value_order)
        for a in axes
    }


# --------------------------------------------------------------------------------------------- the whole


def _unresolved_entry(p: _Point) -> dict[str, Any]:
    """A point whose tie spans more than ``MAX_TIE_RATIO``× in median: marked, never given a best."""
    assert p.unresolved is not None
    fast, slow = p.unresolved
    ratio = slow[1] / fast[1] if fast[1] > 0 else None
    gap = f"{ratio:.1f}×" if ratio is not None else "far"
    return {
        "case": p.case,
        "mode": p.axes["mode"],
        "label": label(p.axes),
        "unresolved": True,
        "fastest": fast[0]["variant"],
        "fastest_us": fast[1],
        "tied_slow": slow[0]["variant"],
        "tied_slow_us": slow[1],
        "ratio": ratio,
        "basis": fast[3],
        "why": (
            f"{slow[0]['variant']} ({slow[1]:,.1f} µs) counts as tied with {fast[0]['variant']} ({fast[1]:,.1f} µs) "
            f"although its median is {gap} slower (over {MAX_TIE_RATIO:g}×): the timings were disturbed, so no "
            f"variant is named best here; {UNRESOLVED_ADVICE}"
        ),
    }


def recommend(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The recommendation over the rows of a sweep (any number of files' rows, in order: a later row of
    the same (variant, case, mode) stands).  ``best`` is empty when no row could compete.  A point whose
    tie spans more than ``MAX_TIE_RATIO``× is in ``unresolved``, never in ``best``, the crossovers or the policy."""
    points, excluded, status, superseded, no_case = _points(rows)
    unresolved = [_unresolved_entry(p) for p in points if p.unresolved]
    compared = sum(len(p.rows) for p in points)
    points = [p for p in points if not p.unresolved]
    best = [_best_entry(p, i) for i, p in enumerate(points)]
    axes, derived, fixed = _axes(points)
    gaps = []
    summary = Counter[str]()
    for b in best:
        d = b["default"]
        if d is None:
            summary["not_run"] += 1
        elif not d["measured"]:
            summary["not_usable"] += 1
        elif d["is_best"]:
            summary["best"] += 1
            summary["same_kernels_as_best"] += d["same_kernels_as_best"]
        elif d["tied"]:
            summary["tied"] += 1
        else:
            summary["slower"] += 1
            gaps.append(
                {
                    "index": b["index"],
                    "case": b["case"],
                    "mode": b["mode"],
                    "label": b["label"],
                    "best": b["variant"],
                    "best_same_as": b["same_as"],
                    "best_us": b["median_us"],
                    "default_us": d["median_us"],
                    "ratio": d["ratio"],
                    "lost_us": d["lost_us"],
                    "ran": d["ran"],
                    "kernel": d["kernel"],
                    "basis": b["basis"],
                }
            )
    sources = sorted({b["basis"] for b in best})
    rules = policy(best, points, axes)
    return {
        "kind": "recommend",
        "time_source": "; ".join(sources) if sources else None,
        "time_methods": sorted({b["time_method"] for b in best if b["time_method"]}),
        "tie_rule": TIE_RULE,
        "margin_formula": MARGIN_FORMULA,
        "axes": axes,
        "derived_axes": derived,
        "fixed": fixed,
        "measured": measured_ranges(points, axes),
        "best": best,
        "crossovers": crossovers(best, points, axes),
        "policy": rules,
        "policy_text": policy_text(rules),
        "default_gaps": gaps,
        "default_summary": {k: summary.get(k, 0) for k in (*SUMMARY_KEYS, "same_kernels_as_best")},
        "default_ran": dict(
            sorted(
                Counter(str(b["default"]["ran"]) for b in best if b["default"] and b["default"].get("ran")).items(),
                key=lambda kv: (-kv[1], kv[0]),
            )
        ),
        "excluded": excluded,
        "unresolved": unresolved,
        "counts": {
            "rows": len(rows),
            "by_status": dict(sorted(status.items())),
            "points": len(points) + len(unresolved),
            "unresolved": len(unresolved),
            "compared": compared,
            "excluded": len(excluded),
            "superseded": superseded,
            "no_case": no_case,
            "wrong_but_faster": sum(1 for e in excluded if e.get("faster_than_best")),
        },
    }
