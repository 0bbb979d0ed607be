"""The one-line summary of several variants' score_matrix findings says each size as the finding does: KiB below
1 MiB (never 0.0 MiB), and from an older document's MiB where its evidence holds no bytes."""

from __future__ import annotations

from attnscope.report.text.explain import _scores_line


def _found(variant: str, ev: dict) -> tuple[str, dict]:
    return variant, {"id": "score_matrix", "evidence": ev}


def test_cpu_sizes_are_kib():
    """B1 H2 S64 D16 bf16 (worked in test_insights_masks): score 16,384 B, output 4,096 B; peaks 51,200 B (3.1×)
    and 122,880 B = 120.0 KiB (7.5×)."""
    ev = {"score_matrix_bytes": 16_384, "score_mib": 0.0, "minimum_bytes": 4_096, "minimum_mib": 0.0}
    found = [
        _found("naive", {**ev, "peak_memory_bytes": 51_200, "peak_mib": 0.0, "peak_over_score": 3.1}),
        _found("sdpa_math", {**ev, "peak_memory_bytes": 122_880, "peak_mib": 0.1, "peak_over_score": 7.5}),
    ]
    assert _scores_line(found) == (
        "the score matrix is materialised: peak extra memory against one score matrix (16.0 KiB, grows with S²; "
        "the O(S·D) minimum is 4.0 KiB): naive 50.0 KiB (3.1×), sdpa_math 120.0 KiB (7.5×)"
    )


def test_an_older_document_without_bytes_says_its_mib():
    """The H200 excerpt of fingerprint.md: score 512.0 MiB, minimum 16.0 MiB, naive 1040.0 MiB (2.0×)."""
    ev = {"score_mib": 512.0, "minimum_mib": 16.0, "peak_mib": 1040.0, "peak_over_score": 2.0}
    assert _scores_line([_found("naive", ev)]) == (
        "the score matrix is materialised: peak extra memory against one score matrix (512.0 MiB, grows with S²; "
        "the O(S·D) minimum is 16.0 MiB): naive 1040.0 MiB (2.0×)"
    )
