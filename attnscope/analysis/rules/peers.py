"""A result among its peers: the results of the same case, ranked once, and the one recommendation over them.  Pure.

Results are compared only when they carry the same case: ``analyze`` results whose shape the trace does not tell
(case unknown) are never ranked against each other.  A trace holds one call: its time is one sample, whose noise is
unknown, and every comparison built on it says so.

:class:`Peers` is what a rule that looks beyond its own row receives: it is built once per case by the caller
(:func:`attnscope.analysis.annotate.explain_results`), with the recommendation the one recommender
(:func:`attnscope.analysis.recommend.recommend`) gave for that case, so that every rule that speaks of "the best"
reads the same answer the document prints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from attnscope.analysis.fingerprint.compiled import fell_back_to_eager
from attnscope.analysis.rules.ties import Row, one_sample

SLOWER_MIN_RATIO = 1.10  # below this a variant is "about as fast" as the best


def case_key(r: dict[str, Any]) -> str | None:
    c = r.get("case")
    return json.dumps(c, sort_keys=True) if c else None


def timing_of(r: dict[str, Any]) -> tuple[float, dict[str, Any] | None, str] | None:
    """The time a variant is judged by: GPU median on a GPU, wall time per call on a CPU."""
    if r.get("status") != "ok":
        return None
    if r.get("device_kind") == "gpu" and r.get("gpu_time_us"):
        t = r.get("gpu_time")
        what = "GPU time of one traced call (one sample)" if one_sample(t) else "GPU time per call (median)"
        return float(r["gpu_time_us"]), t, what
    if r.get("device_kind") == "cpu" and r.get("cpu_time_us"):
        t = r.get("cpu_time")
        what = (
            "wall time of one traced call (one sample)" if one_sample(t) else "wall time per call on the CPU (median)"
        )
        return float(r["cpu_time_us"]), t, what
    return None


def ranked(results: list[dict[str, Any]]) -> list[Row]:
    """Ok, numerically sound results of one case, fastest first (a compiled row that ran eager code is not
    what its name says: left out)."""
    rows = []
    for r in results:
        t = timing_of(r)
        if t is not None and r.get("numerics_ok") is not False and fell_back_to_eager(r) is None:
            rows.append((r, *t))
    return sorted(rows, key=lambda x: x[1])


@dataclass(frozen=True)
class Peers:
    """The results of one case (``results``, the row itself among them), ranked once (``rows``: :func:`ranked`),
    and the one recommender's answer over them (``recommendation``; None where the case is not known, so nothing
    is compared)."""

    results: list[dict[str, Any]] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    recommendation: dict[str, Any] | None = None

    @property
    def best(self) -> Row | None:
        """The ranked row of the variant the recommendation names best; None where it names none (unresolved,
        several best, or no recommendation)."""
        rec = self.recommendation
        if rec is None or rec["unresolved"] or len(rec["best"]) != 1:
            return None
        return self.row_named(rec["best"][0]["variant"])

    def row_named(self, variant: str) -> Row | None:
        """The ranked row of ``variant``; None where it did not rank (failed, numerics off, or not run)."""
        return next((row for row in self.rows if row[0].get("variant") == variant), None)

    def row_of(self, r: dict[str, Any]) -> Row | None:
        """The ranked row of the result ``r`` itself."""
        return next((row for row in self.rows if row[0] is r), None)


ALONE = Peers()  # a result with no case to compare within (a trace of unknown shape; a rule called on one row)
