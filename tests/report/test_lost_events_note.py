"""A trace whose events could not all be read says so at any width: below 120 columns the notes go to --verbose,
and '1 malformed trace events skipped' went with them (the kernel event lost without a word)."""

from __future__ import annotations

import io
import json

from attnscope.api import analyze_traces
from attnscope.report.text.table import render
from attnscope.report.text.terminal import console


def _out(doc: dict, width: int) -> str:
    out = io.StringIO()
    render(doc, console(file=out, width=width, color_system=None), kernels=False, title="attnscope analyze")
    return out.getvalue()


def test_skipped_events_are_said_below_120_columns(tmp_path):
    p = tmp_path / "t.json"  # an op, and a kernel event without dur: read by neither decoder, counted as skipped
    op = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5, "pid": 1, "tid": 1}
    p.write_text(json.dumps({"traceEvents": [op, {"ph": "X", "cat": "kernel", "name": "k", "ts": 1}]}))
    doc, errors = analyze_traces([str(p)], jobs=1)
    assert not errors and doc["results"][0]["notes"] == ["1 malformed trace events skipped"]
    for width in (80, 200):
        assert "t: 1 malformed trace events skipped" in _out(doc, width)
