"""A `--kernels` table of 10^4 rows drawn as rich draws it, without rich laying out every cell (7 s for a training
step's 11k kernels).

Where the table fits the terminal, every cell is plain text (no markup, no emoji code, no control character) and
the console draws Unicode boxes, rich's table of one row of each column's widest cell has the whole table's title,
header, column widths and bottom edge: those lines are rich's own, and each kernel's row is its cells padded to
those widths between the box's bars, as rich pads a one-line cell.  Otherwise rich draws the whole table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.table import Table


def plain_rows(console: Console, rows: list[dict[str, str]]) -> bool:
    """Whether every cell is drawn as its own text: no markup, no emoji code, no control character."""
    seen: dict[str, bool] = {}
    for cells in rows:
        for s in cells.values():
            if s.isascii() and s.isprintable() and "[" not in s and ":" not in s:
                continue
            if s not in seen:
                t = console.render_str(s, highlight=False)
                seen[s] = s.isprintable() and t.plain == s and not t.spans and not t.style
            if not seen[s]:
                return False
    return True


def _cell(s: str, width: int) -> str:
    """A one-line cell in ``width`` cells, as rich's Text draws it left-justified: cut with an ellipsis, or padded."""
    n = cell_len(s)
    return set_cell_size(s, width - 1) + "…" if n > width else s + " " * (width - n)


class KernelRows:
    """The table ``widest`` (one row of each column's widest cell) drawn with ``rows`` in place of its row;
    ``whole()``: the table of every row, drawn by rich where the console draws other boxes."""

    def __init__(
        self, widest: Table, rows: list[dict[str, str]], columns: list[str], whole: Callable[[], Table]
    ) -> None:
        self.widest, self.rows, self.columns, self.whole = widest, rows, columns, whole

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Any]:
        box = self.widest.box
        if options.legacy_windows or options.ascii_only or box is None or not self.widest.show_edge:
            yield self.whole()  # another box than the one drawn below
            return
        lines = list(Segment.split_lines(console.render(self.widest, options)))
        *head, _row, bottom = lines
        edge = "".join(seg.text for seg in bottom)
        widths = [len(part) for part in edge[len(box.bottom_left) : -len(box.bottom_right)].split(box.bottom_divider)]
        for line in head:
            yield from line
            yield Segment.line()
        inner = [w - 2 for w in widths]  # a cell's padding: one space each side
        last = len(self.rows) - 1
        for i, cells in enumerate(self.rows):
            left, bar, right = (
                (box.foot_left, box.foot_vertical, box.foot_right)
                if i == last
                else (box.mid_left, box.mid_vertical, box.mid_right)
            )
            text = bar.join(f" {_cell(cells[c], w)} " for c, w in zip(self.columns, inner, strict=True))
            yield Segment(f"{left}{text}{right}")
            yield Segment.line()
        yield from bottom
        yield Segment.line()
