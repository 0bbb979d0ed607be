"""`attnscope report` says the page's size in the one byte unit of the tool: a page that links a shared plotly
(`--assets`) is tens of KiB, which "MB with one decimal" printed as "0.0 MB"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnscope.cli.main import main

RUN = Path(__file__).parents[1] / "data" / "h200" / "run.json"
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def test_a_page_with_shared_assets_says_its_size(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("plotly")
    out = tmp_path / "r.html"
    assert main(["report", str(RUN), "-o", str(out), "--assets", str(tmp_path / "assets")]) == 0
    line = capsys.readouterr().out
    m = re.search(r"report written to \S+ \(([\d,.]+) (B|KiB|MiB|GiB), plotly shared in ", line)
    assert m, line
    said = float(m.group(1).replace(",", "")) * UNITS[m.group(2)]
    size = out.stat().st_size
    assert size > 0 and "0.0 MB" not in line
    assert abs(said - size) <= 0.05 * UNITS[m.group(2)]  # one decimal of the unit it names
