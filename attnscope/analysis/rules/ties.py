"""The tie rule and the choice of the best, shared by every recommendation and insight.  Pure.

Two timings are tied when their interquartile ranges overlap, or when both variants ran the same
compute kernels; a variant that writes the S×S scores out is chosen only when every fused variant
is slower beyond the noise; a tie across more than ``MAX_TIE_RATIO``× in median names no best.
"""

from __future__ import annotations

from typing import Any

from attnscope.analysis.fingerprint.kernels import attention_family
from attnscope.analysis.rules.row_kernels import compute_kernels, is_fused, materialises_scores, names, read_once


def one_sample(t: dict[str, Any] | None) -> bool:
    """A timing of one sample (a trace holds one call): its noise is not known."""
    return bool(t) and t.get("num_samples") == 1  # type: ignore[union-attr]


ONE_SAMPLE_NOTE = "one traced call each, so the noise is not known: confirm with attnscope run before acting on it"


def overlaps(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two timings' interquartile ranges overlap: a difference inside the noise."""
    if not a or not b:
        return False
    return a["p75_us"] >= b["p25_us"] and b["p75_us"] >= a["p25_us"]


Row = tuple[dict[str, Any], float, dict[str, Any] | None, str]


def kernel_names(r: dict[str, Any]) -> frozenset[str]:
    """The names of the compute kernels a row launched (memcpy and memset left out)."""
    return read_once(r, names)


def same_kernels(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two variants that launched the same compute kernels (e.g. sdpa_default picking cuDNN and sdpa_cudnn)."""
    na = kernel_names(a)
    return bool(na) and na == kernel_names(b)


def tied(a: Row, b: Row) -> bool:
    """Inside the noise (quartiles overlap), or the same kernels: the gap is run-to-run variation."""
    return overlaps(a[2], b[2]) or same_kernels(a[0], b[0])


# A tie is never resolved in favour of a variant whose median is more than this many times another's at the
# point: quartiles that overlap across such a gap say the timings were disturbed, not that the two are equal.
MAX_TIE_RATIO = 1.5
UNRESOLVED_ADVICE = "measure again on a quiet machine"


def choose_best(rows: list[Row]) -> tuple[Row, Row | None]:
    """(the variant to recommend, the faster one it was preferred to, if any).

    A variant that writes the score matrix out is recommended only when every fused variant is
    slower beyond the noise: when a fused one is tied with it, the fused one is the advice (same
    speed, O(S·D) memory instead of O(S²)).  Where that tie spans over ``MAX_TIE_RATIO``× in median,
    :func:`unresolved_tie` says so: the sweep names no best there.
    """
    fastest = rows[0]
    if not materialises_scores(fastest[0]):
        return fastest, None
    for row in rows[1:]:
        if is_fused(row[0]) and tied(fastest, row):
            return row, fastest
    return fastest, None


def disturbed(a_us: float, b_us: float, a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two timings (medians ``a_us``, ``b_us``; quartiles in ``a``, ``b``) overlap across more than
    ``MAX_TIE_RATIO``× in median: the timings were disturbed, so the two are neither tied nor told apart."""
    lo, hi = sorted((a_us, b_us))
    return lo > 0 and hi > MAX_TIE_RATIO * lo and overlaps(a, b)


def unresolved_tie(rows: list[Row]) -> tuple[Row, Row] | None:
    """(the fastest row, the slowest row whose quartiles overlap it) when their medians are more than
    ``MAX_TIE_RATIO``× apart: such a point has no trustworthy best.  Variants that ran the fastest's kernels
    are left out (one implementation: the best is already the faster of them).  ``rows``: fastest first."""
    if not rows or rows[0][1] <= 0:
        return None
    fastest = rows[0]
    slow = [
        r
        for r in rows[1:]
        if r[1] >= fastest[1] and disturbed(fastest[1], r[1], fastest[2], r[2]) and not same_kernels(fastest[0], r[0])
    ]
    if not slow:
        return None
    return fastest, max(slow, key=lambda r: r[1])


def ran_backend(r: dict[str, Any]) -> tuple[str | None, str | None]:
    """(backend, evidence): from the attention kernel's name, else from the aten op."""
    for k in compute_kernels(r):
        if k["category"] == "attention":
            fam = attention_family(k["name"])
            if fam:
                return fam, k["name"]
    return r.get("sdpa_backend"), "aten op" if r.get("sdpa_backend") else None
