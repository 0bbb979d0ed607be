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


def test_long_only_in_and_regression_lines_wrap_under_their_own_text() -> None:
    """At 80 columns the list of variants only one file has wraps under its first name, not at column 0 (H200's
    nine study variants against the H100's three paged ones), and so does a regression line."""
    a = _doc("naive", "naive_inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_default")
    b = _doc("paged_gather_sdpa", "paged_flex_compiled", "paged_flashinfer")
    lines = _text(diff(a, b)).splitlines()
    at = next(i for i, line in enumerate(lines) if "only in A:" in line)
    assert lines[at].startswith("  • only in A: naive, ")
    assert lines[at + 1].startswith(" " * 4) and lines[at + 1].strip().startswith("sdpa_")
    assert all(len(line.rstrip()) <= 80 for line in lines)
    slow = {"results": [{"variant": "x" * 30, "status": "ok", "kernels": [], "cpu_time_us": 100.0}]}
    slower = {"results": [{"variant": "x" * 30, "status": "ok", "kernels": [], "cpu_time_us": 250.0}]}
    d = diff(slow, slower, threshold_pct=5)
    lines = _text(d, width=50).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  ✗ "))
    assert lines[at + 1].startswith(" " * 4)
    said = " ".join(line.strip() for line in lines[at : at + 3])
    assert "cpu_time_us 100.0 → 250.0 (+150.0% > 5%)" in said  # 250 / 100 − 1 = +150%
