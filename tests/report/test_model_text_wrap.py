"""``attnscope model``'s notes, skips and insights at 80 columns: a line too long wraps under its own text (after
its bullet or arrow), never back at column 0."""

from __future__ import annotations

import io

from attnscope.report.text.model import render
from attnscope.report.text.terminal import console

REASON = (
    "transformers compiles flex_attention with torch.compile for every new shape (seconds per shape on a small "
    "CPU): not in the CPU default set, pass --impl flex_attention to include it"
)
MESSAGE = (
    "eager repeat_kv copies K and V to every query head: 2×32.0 KiB per layer per prefill step (4 copies in 2 "
    "layers, 128.0 KiB in all, 125.3 µs in repeat_kv, 0.1% of the profiled step)"
)
ADVICE = (
    "sdpa with enable_gqa avoids it: transformers' sdpa path passes enable_gqa=True to torch's SDPA when no "
    "attention mask is needed, so K and V stay at their KV heads"
)


def _doc() -> dict:
    insight = {"id": "repeat_kv_copy", "severity": "warning", "message": MESSAGE, "advice": ADVICE}
    return {
        "case": {},
        "results": [
            {"impl": "flex_attention", "mode": "prefill", "status": "skipped", "reason": REASON},
            {"impl": "eager", "mode": "prefill", "status": "skipped", "reason": "x", "insights": [insight]},
        ],
    }


def _lines(width: int) -> list[str]:
    out = io.StringIO()
    render(_doc(), console(width=width, file=out, color_system=None), title="attnscope model")
    return [line.rstrip() for line in out.getvalue().splitlines()]


def _block(lines: list[str], start: str, indent: int) -> list[str]:
    """The line that starts with ``start`` and the lines that continue it (``indent`` spaces, then text)."""
    i = next(k for k, line in enumerate(lines) if line.startswith(start))
    j = i + 1
    while (
        j < len(lines) and lines[j].startswith(" " * indent) and lines[j][indent] not in " →•!·" and "—" not in lines[j]
    ):
        j += 1
    return lines[i:j]


def test_skip_reason_and_insight_wrap_under_their_text_at_80_columns():
    lines = _lines(80)
    assert all(len(line) <= 80 for line in lines)
    skip = _block(lines, "  flex_attention prefill: skipped — ", 2)
    assert len(skip) >= 2
    assert " ".join(w for line in skip for w in line.split()).endswith(REASON)
    said = _block(lines, "  ! eager prefill [repeat_kv_copy] ", 4)
    assert len(said) >= 2
    assert " ".join(w for line in said for w in line.split()).endswith(MESSAGE)
    arrow = next(k for k, line in enumerate(lines) if line.startswith("      → sdpa with enable_gqa"))
    assert lines[arrow + 1].startswith(" " * 8) and lines[arrow + 1][8] != " "
    wide = _lines(400)  # the same words, unwrapped
    assert f"  ! eager prefill [repeat_kv_copy] {MESSAGE}" in wide and f"      → {ADVICE}" in wide


def test_no_per_layer_table_without_layers():
    """A decode loop's rows are split per step, not per layer: 'per layer' was drawn as a table of headers alone."""
    from attnscope.report.text.model import render_layers

    out = io.StringIO()
    render_layers(_doc(), console(width=80, file=out, color_system=None))
    assert out.getvalue() == ""
    doc = _doc()
    doc["results"][1]["layers"] = [{"layer": 0, "total_us": 1500.0, "attention_us": 700.0}]
    out = io.StringIO()
    render_layers(doc, console(width=200, file=out, color_system=None))
    assert "per layer" in out.getvalue() and "1,500.0" in out.getvalue()


def test_a_decode_loops_dashes_point_to_its_table():
    """A decode loop's row shows '—' for every share (its split is per step): a line says where the split is."""
    doc = _doc()
    doc["results"].append(
        {"impl": "sdpa", "mode": "decode", "status": "ok", "steps": {"num_steps": 4, "replay": "eager"}}
    )
    out = io.StringIO()
    render(doc, console(width=300, file=out, color_system=None), title="attnscope model")
    text = out.getvalue()
    assert "  sdpa decode: a decode loop, split per step (decode over a growing static cache, below)" in text
    assert "a decode loop" not in "\n".join(_lines(300))  # no loop, no line
