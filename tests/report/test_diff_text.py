"""`attnscope diff`'s terminal text where the two files share no variant: one line that says nothing was compared
and why, not a table of headers with no row."""

from __future__ import annotations

import io

from attnscope.api.diff import diff
from attnscope.report.text.diff import render_diff
from attnscope.report.text.terminal import console


def _doc(*variants: str) -> dict[str, object]:
    rows = [{"variant": v, "status": "ok", "kernels": [], "cpu_time_us": 1.0} for v in variants]
    return {"results": rows}


def _text(d: dict[str, object], width: int = 80) -> str:
    out = io.StringIO()
    render_diff(d, console(file=out, width=width, color_system=None), title="attnscope diff: a → b")
    return out.getvalue()


def test_no_variant_in_both_says_nothing_was_compared() -> None:
    text = _text(diff(_doc("llama_train_sdpa"), _doc("naive", "sdpa_default")))
    assert "no variant in both files (variants pair by name): nothing compared" in text
    assert "┏" not in text  # no empty table
    assert "only in A: llama_train_sdpa" in text and "only in B: naive, sdpa_default" in text


def test_a_shared_variant_is_a_table_row() -> None:
    text = _text(diff(_doc("naive", "flex"), _doc("naive", "sdpa_default")))
    assert "nothing compared" not in text
    assert "┏" in text and "│ naive" in text
