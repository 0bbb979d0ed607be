"""`--verbose`'s "not checked" lines wrap under their own text, as the insights do: the rest of a long reason
started at the terminal's first column, where it read as a line of its own."""

from __future__ import annotations

import io

from attnscope.report.text.explain import render_explanations
from attnscope.report.text.terminal import console

WHY = "needs the output and an fp64 reference, which a trace does not hold"
DOC = {
    "results": [
        {
            "variant": "sdpa_cudnn",
            "status": "ok",
            "insights": [],
            "insights_not_checked": [{"id": "numerics_off", "why": WHY}],
        }
    ]
}


def test_a_long_not_checked_line_keeps_its_margin() -> None:
    out = io.StringIO()
    render_explanations(DOC, console(file=out, width=60, color_system=None), verbose=True)
    lines = [line.rstrip() for line in out.getvalue().splitlines() if line.strip()]
    assert lines[0].startswith("  not checked: numerics_off (all): ")
    assert len(lines) >= 2  # 35 + 69 characters do not fit in 60 columns
    assert all(line.startswith("  ") and len(line) <= 60 for line in lines)
    assert " ".join(line.strip() for line in lines) == f"not checked: numerics_off (all): {WHY}"
