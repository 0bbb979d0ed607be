"""A table's title wider than the table is printed as a line of its own above it, wrapped at the terminal's width,
not cut to the table's width (rich wraps a title to its table: the sweep recommendation's grid of two columns cut
its 90-character title into three lines of at most 41 characters, "(≈" alone at a line's end)."""

from __future__ import annotations

import io

from rich.table import Table

from attnscope.report.text.sweep import best_grid
from attnscope.report.text.terminal import console, fit

TITLE = "Best implementation per case: µs per call; the next implementation and its margin (≈ tied)"


def _print(renderable: object, width: int) -> list[str]:
    out = io.StringIO()
    console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue().splitlines()


def _narrow_table(title: str) -> Table:
    t = Table(title=title)
    t.add_column("case")
    t.add_column("S=64")
    t.add_row("all cases", "default")
    return t


def test_a_long_title_wraps_at_the_terminal_not_at_the_table() -> None:
    lines = _print(fit(_narrow_table(TITLE)), 80)
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    title_lines = [line.strip() for line in lines[:top]]
    assert len(TITLE) == 90  # by hand: so two lines of at most 80 characters hold it, never three
    assert len(title_lines) == 2
    assert " ".join(title_lines) == TITLE
    assert all(len(line) <= 80 for line in lines)


def test_a_title_that_fits_stays_the_tables() -> None:
    lines = _print(fit(_narrow_table("S grid")), 80)
    assert lines[0].strip() == "S grid"
    assert lines[1].startswith("┏")


def test_the_sweep_grid_title_whole_on_two_lines_at_80_columns() -> None:
    best = {
        "case": {"batch": 1, "heads": 2, "seq_q": 64, "head_dim": 32, "dtype": "bf16", "causal": True},
        "mode": "fwd",
        "variant": "sdpa_default",
        "same_as": [],
        "preferred_over": None,
        "median_us": 10.0,
        "runner_up": None,
    }
    rec = {"axes": ["seq_q"], "measured": {"seq_q": [64]}, "best": [best]}
    lines = _print(fit(best_grid(rec)), 80)
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    assert " ".join(line.strip() for line in lines[:top]) == TITLE
    assert top == 2
