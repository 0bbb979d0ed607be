"""The one recommender, over a run's results, a sweep's rows or a model's rows: the best variant per (case, mode),
where it changes along each axis, a compact policy over the measured points, and where PyTorch's own choice
is not the best.  Pure: plain row dicts in (``report/json.py``'s rows, e.g. from
``attnscope.execute.store.load_rows``; a run document's results; a model's rows as
:func:`attnscope.analysis.recommend.model_points.as_generic` gives them), plain dicts out.

It gives the run recommendation its answer (:mod:`attnscope.analysis.recommend.run`): the same tie
rule (:func:`attnscope.analysis.rules.ties.tied`: interquartile ranges overlap, or the same compute
kernels ran) and the same choice (:func:`attnscope.analysis.rules.ties.choose_best`: a variant that
writes the S×S scores out is recommended only when every fused variant is slower beyond the noise).

Implementations, not names: variants whose rows at a point ran the same compute kernels
(:func:`attnscope.analysis.rules.ties.same_kernels`, e.g. ``sdpa_default`` running cuDNN and ``sdpa_cudnn``)
are one implementation there.  A best entry names the fastest of them (``variant``) and the others
(``same_as``); its runner-up and margin are those of the next implementation, the fastest variant that
ran other kernels.  A change of best between variants of one implementation is no crossover, and a
policy rule says which variants ran the same kernels as the one it names.

The JSON (``attnscope recommend --json``), beyond the keys the issue names:

- ``best[]``: ``same_as`` (the other variants that ran the best's compute kernels, fastest first), ``ran``
  (the backend the best's kernels show, e.g. ``cudnn``; None when they show none), ``runner_up_same_as`` and
  ``runner_up_ran`` (the same for the next implementation), ``tied_with`` (every variant tied with the best,
  its ``same_as`` included); ``default``: ``is_best`` (sdpa_default is the best or ran its kernels) and
  ``same_kernels_as_best`` (the latter, not the variant named best); for the run's sentence and the model's
  advice: ``same_as_us`` (their medians), ``next_clear``/``next_clear_us`` (past a tie with the runner-up, the first
  implementation beyond the noise), ``noisy_variants`` (of the best and the runner-up, those timed noisy),
  ``one_sample`` (either timed from one traced call), ``writes_scores`` (the best writes the S×S scores out),
  ``fastest_fused``/``fastest_fused_us``, ``numerics_checked`` (False: no row of the point was checked, so the
  rows competed on time alone);
- ``crossovers[]``: ``from_same_as``/``to_same_as`` and ``from_ran``/``to_ran`` (each side's implementation),
  ``within_noise`` (kept in the JSON; the terminal and the page only count these);
- ``policy[]``: ``same_as`` ({variant: points of the rule where it ran the named variant's kernels}),
  ``ran`` ({backend: points}), ``measured`` (the rule's points where the named variant was usable);
- ``default_summary.same_kernels_as_best``, ``default_ran`` ({backend sdpa_default ran: points}).

Only rows with status ``ok`` and ``numerics_ok`` true compete (or, at a point where no row's numerics were
checked, every row with a time: the reference was skipped, the rows come from traces, or they are a model's):
a fast but wrong variant never wins, a compiled row that ran eager code
(:func:`attnscope.analysis.fingerprint.compiled.fell_back_to_eager`) is not compared under the compiled name,
and every row left out is listed with the reason.  Times are medians
per call: the GPU time (CUDA events) where a (case, mode) has any, else a model's step time, else the CPU time;
each entry says which.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from attnscope.analysis.recommend.crossovers import crossovers
from attnscope.analysis.recommend.points import best_entry, points_of, unresolved_entry
from attnscope.analysis.recommend.policy import policy
from attnscope.analysis.recommend.ranges import measured_ranges, point_axes
from attnscope.core.cases import same_masks_of
from attnscope.document.recommendation import SUMMARY_KEYS, policy_text

TIE_RULE = (
    "tied when the interquartile ranges (p25–p75 of the timed calls) overlap, or both ran the same compute "
    "kernels (the run recommendation's rule)"
)
# a trace's row is one traced call: its quartiles are its one time (rules/ties.py reads them as a range of zero width)
ONE_SAMPLE_TIES = (
    "; a row from a trace is one sample, its quartiles its one time, its noise not known: two traced rows tie only "
    "at equal times or by the same kernels"
)
MARGIN_FORMULA = (
    "runner_up_us / median_us (median time per call of the next implementation, the fastest variant that ran other "
    "kernels than the best, over the best's)"
)


def recommend(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The recommendation over the rows of a sweep (any number of files' rows, in order: a later row of
    the same (variant, case, mode) stands).  ``best`` is empty when no row could compete.  A point whose
    tie spans more than ``MAX_TIE_RATIO``× is in ``unresolved``, never in ``best``, the crossovers or the policy."""
    points, excluded, status, superseded, no_case = points_of(rows)
    unresolved = [unresolved_entry(p) for p in points if p.unresolved]
    compared = sum(len(p.rows) for p in points)
    points = [p for p in points if not p.unresolved]
    best = [best_entry(p, i) for i, p in enumerate(points)]
    axes, derived, fixed = point_axes(points)
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
        "tie_rule": TIE_RULE + (ONE_SAMPLE_TIES if any(b.get("one_sample") for b in best) else ""),
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
        "same_masks": same_masks_of(rows),  # masks a sweep measured once for several spellings, as its rows say
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
