"""The policy table's parenthesised count is the points where the rule's variant agrees only by a tie with the
best (``agree_via_tie``); 'agree (of which tied)' read as the points with a tie at all, so a grid marked '≈' at
two points beside '4 (0)' looked like a contradiction (the variant was itself the best there)."""

from __future__ import annotations

import io

from attnscope.analysis.recommend import recommend
from attnscope.report.text.sweep import render
from attnscope.report.text.terminal import console
from tests.analysis.recommend.test_sweep_entries import row_b


def test_the_header_says_only_tied():
    # two points, sdpa_flash best at both (10 µs against naive's 30): it agrees at 2, by a tie at none
    rows = [row_b(v, s, t, t - 1, t + 1) for s in (128, 256) for v, t in (("sdpa_flash", 10), ("naive", 30))]
    rec = recommend(rows)
    assert [(r["agree"], r["agree_via_tie"]) for r in rec["policy"]] == [(2, 0)]
    out = io.StringIO()
    console(file=out, width=400, color_system=None).print(render(rec))
    assert "agree (of which only tied with the best)" in out.getvalue()
