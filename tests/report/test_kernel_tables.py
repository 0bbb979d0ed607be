"""`--kernels` tables fit the terminal: columns are left out (and said), never folded a character wide."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from attnscope.report.text.kernels import COLUMNS, print_kernels

RUN = Path(__file__).parents[1] / "data" / "h200" / "run.json"


def _render(width: int) -> str:
    doc = json.loads(RUN.read_text())
    buf = io.StringIO()
    print_kernels(doc, Console(file=buf, width=width, force_terminal=False, color_system=None))
    return buf.getvalue()


@pytest.mark.parametrize("width", [80, 100, 120])
def test_narrow_terminal_keeps_whole_headers_and_names(width: int) -> None:
    out = _render(width)
    lines = out.splitlines()
    assert all(len(line) <= width for line in lines)
    # every table's header row holds whole words: the name, category and µs columns are always kept
    headers = [line for line in lines if "name" in line and "#" in line]
    assert len(headers) == 9  # one per variant with kernels in the document (9 in the raw file)
    assert all("category" in h and "µs" in h for h in headers)
    # the one-kernel rows: flash's kernel name starts readable (the raw name, 'void ' dropped)
    doc = json.loads(RUN.read_text())
    (flash,) = [r for r in doc["results"] if r["variant"] == "sdpa_flash"]
    assert flash["kernels"][0]["name"].removeprefix("void ")[:20] in out
    assert f"kernel tables at {width} columns:" in out


def test_wide_terminal_has_every_column_and_says_nothing_left_out() -> None:
    out = _render(400)
    header = next(line for line in out.splitlines() if "name" in line and "#" in line)
    for col in COLUMNS:
        assert col in header
    assert "left out" not in out
