"""The count under the guess-first table wraps under its own text at 80 columns ('every miss is an \\ninsight' went
on at column 0)."""

from __future__ import annotations

import io

from attnscope.report.text.explain import render_explanations
from attnscope.report.text.terminal import console


def _verdict(outcome: str) -> dict:
    return {"outcome": outcome, "text": "naive kernels: predicted 5, measured 5", "explanation": ""}


def test_the_count_line_keeps_its_indent():
    doc = {"results": [], "verdicts": [_verdict("hit")] * 5 + [_verdict("miss")] * 2 + [_verdict("close")] * 2}
    doc["verdicts"] += [_verdict("unknown")] * 2
    out = io.StringIO()
    render_explanations(doc, console(file=out, width=60, color_system=None))
    lines = out.getvalue().splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("  5 hit, 2 miss"))
    assert lines[at + 1].startswith("  ") and lines[at + 1][2] != " "  # hit 5 + miss 2 + close 2 + unknown 2
    said = " ".join(w for x in lines[at : at + 3] for w in x.split())
    assert said.startswith("5 hit, 2 miss, 2 too close to call, 2 not measurable — every miss is an insight")
