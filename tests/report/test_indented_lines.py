"""Indented notes (the loaded-host caveat of sweep, model and the tour; sweep's header notes and summary) keep their
indent when the terminal wraps them: the rest of the line goes under its own text, not back at column 0."""

from __future__ import annotations

import argparse
import io

from attnscope.cli.sweep import render_sweep
from attnscope.report.text.terminal import console, indented

WHY = "load average 3.39 on 2 cores (1.69 per core, above 1.25)"


def test_an_indented_line_wraps_under_its_text():
    out = io.StringIO()
    line = "  " + " ".join(f"w{i:02d}" for i in range(40))
    indented(console(file=out, width=40, color_system=None), line)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 4 and all(len(x) <= 40 for x in lines)
    assert all(x.startswith("  w") for x in lines)  # each line at the line's own indent
    assert " ".join(w for x in lines for w in x.split()) == line.strip()


def test_a_column_0_line_is_printed_as_written():
    out = io.StringIO()
    indented(console(file=out, width=80, color_system=None), "sweep: [bold] 4 row(s)")
    assert out.getvalue() == "sweep: [bold] 4 row(s)\n"


def test_sweeps_loaded_host_line_keeps_its_indent_at_80_columns(tmp_path):
    """At 80 columns 'and rankings may be wrong: measure again on a quiet machine' went on at column 0."""
    out = io.StringIO()
    args = argparse.Namespace(out=str(tmp_path / "s.jsonl"), json=None, html=None, trace_dir=None, assets=None)
    rec = {"best": [], "host": {"loaded": True, "why": WHY}}
    assert render_sweep(args, [], [], rec, console(file=out, width=80, color_system=None)) == 0
    lines = out.getvalue().splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("  host loaded: "))
    assert lines[at + 1].startswith("  ") and lines[at + 1][2] != " "
    said = " ".join(w for x in lines[at : at + 3] for w in x.split())
    assert f"host loaded: {WHY}. Timings and rankings may be wrong: measure again on a quiet machine" in said
