"""The score matrix written out: peak memory against one score matrix and the O(S·D) minimum.  Pure.

Split from :mod:`attnscope.analysis.rules.insights` (shared helpers live there).
"""

from __future__ import annotations

from typing import Any

from attnscope.analysis.rules.insights import MIB, Out, fused_names, r1
from attnscope.analysis.rules.row_kernels import materialises_scores
from attnscope.core.types import DTYPE_BYTES, Insight, NotChecked
from attnscope.core.units import fmt_mib


def score_matrix(r: dict[str, Any]) -> Out:
    case, peak = r.get("case"), r.get("peak_memory_bytes")
    if not case:
        why = "; ".join(f"{k}: {v}" for k, v in (r.get("case_unknown") or {}).items())
        return NotChecked("score_matrix", f"needs the case shape (B, H, S, D): {why or 'not known for this result'}")
    if peak is None:
        return NotChecked("score_matrix", "peak memory was not measured for this result")
    elem = DTYPE_BYTES[case["dtype"]]
    sq, sk = case["seq_q"], case.get("seq_kv") or case["seq_q"]
    score = case["batch"] * case["heads"] * sq * sk * elem
    minimum = case["batch"] * case["heads"] * sq * case["head_dim"] * elem
    # Premise: the scores are written out: matrix work outside one fused attention kernel (a fused
    # kernel, or compiled flex's generated code with no aten matmul, never writes them).  When
    # Sk ≤ D one score matrix is no larger than the output, so the peak alone cannot tell: the
    # peak beyond the output must hold a whole score matrix.
    if not materialises_scores(r) or peak - minimum < score:
        return []
    kv = 2 * case["batch"] * (case.get("kv_heads") or case["heads"]) * sk * case["head_dim"] * elem
    if score < kv:  # decode and other short query blocks: one score matrix is smaller than K and V, its ratios
        return []  # say nothing about what limits memory
    ev = {
        "peak_memory_bytes": peak,
        "peak_mib": r1(peak / MIB),
        "score_matrix_bytes": score,
        "score_mib": r1(score / MIB),
        "peak_over_score": r1(peak / score),
        "minimum_bytes": minimum,
        "minimum_mib": r1(minimum / MIB),
        "peak_over_minimum": round(peak / minimum),
        "formula": "score = B·H·Sq·Sk·bytes(dtype); minimum (the output) = B·H·Sq·D·bytes(dtype)",
    }
    msg = (
        f"the S×S score matrix is materialised: peak extra memory {fmt_mib(peak)} = "
        f"{ev['peak_over_score']:.1f}× one {case['dtype']} score matrix ({fmt_mib(score)}, grows with S²) "
        f"against the O(S·D) minimum of {fmt_mib(minimum)} ({ev['peak_over_minimum']}×)"
    )
    return [
        Insight(
            id="score_matrix",
            variant=r["variant"],
            severity="warning",
            message=msg,
            advice=f"a fused backend ({fused_names(r)}, or compiled flex) keeps the scores on chip: "
            "its peak memory stays O(S·D), so long sequences fit",
            evidence=ev,
        )
    ]
