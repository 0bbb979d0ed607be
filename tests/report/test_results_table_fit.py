"""The results table leaves out the fewest columns (DROP_ORDER) for it to fit the terminal: the same columns as
measuring the table again after each column left out, one at a time, with rich, at every width."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.measure import Measurement

from attnscope.report.text.table import DROP_ORDER, LESSONS, fitted_table, results_table
from attnscope.report.text.terminal import words_fit

DATA = Path(__file__).parents[1] / "data"
RUN = DATA / "h200" / "run.json"


def _one_at_a_time(doc: dict[str, Any], console: Console) -> list[str]:
    """Each column of DROP_ORDER left out in turn, the table measured whole by rich after each, until it fits (or a
    lesson's headers can wrap at word boundaries): the columns left out."""
    wide = console.options.update(width=1 << 16, max_width=1 << 16)
    dropped: list[str] = []
    while True:
        t = results_table(doc, "t", tuple(dropped))
        heads = {str(c.header) for c in t.columns}
        time = "GPU µs" if "GPU µs" in heads else "CPU µs"
        rest = [c for c in DROP_ORDER if c in heads and c != time]
        if Measurement.get(console, wide, t).maximum <= console.width or not rest:
            return dropped
        if rest[0] in LESSONS and words_fit(t, console, console.options):
            return dropped
        dropped.append(rest[0])


def _trace_doc() -> dict[str, Any]:
    from attnscope.api import analyze_traces

    doc, errors = analyze_traces([str(DATA / "h200" / "sdpa_flash.json")], jobs=1)
    assert doc is not None and not errors
    return doc


@pytest.mark.parametrize("which", ["run", "trace"])
def test_the_columns_left_out_are_those_of_measuring_after_each_one(which: str) -> None:
    doc = json.loads(RUN.read_text()) if which == "run" else _trace_doc()
    seen = set()
    for width in range(20, 261, 3):
        console = Console(file=io.StringIO(), width=width, markup=False, emoji=False)
        table, dropped = fitted_table(doc, "t", console)
        assert dropped == _one_at_a_time(doc, console), width
        assert [str(c.header) for c in table.columns] == [
            str(c.header) for c in results_table(doc, "t", tuple(dropped)).columns
        ]
        seen.add(len(dropped))
    assert len(seen) >= 5, seen  # the widths span wide terminals (nothing left out) to the narrowest
